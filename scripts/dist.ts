/**
 * Build helpers for the published package, run by npm scripts:
 *
 *   node scripts/dist.ts clean          removes dist/ so a pack never ships files of deleted sources
 *   node scripts/dist.ts declarations   rewrites relative `.ts` specifiers in dist's .d.ts files to `.js`
 *   node scripts/dist.ts bin            makes package.json's "bin" files executable
 *
 * Why the third: tsc writes new files without the execute bit, and inside this
 * repository `npx effect-mcp-transport` runs the package's own bin file directly
 * (npm sets the bit only when it installs a package).
 *
 * Why the second: the sources import `./x.ts` and `rewriteRelativeImportExtensions`
 * rewrites those in the emitted JavaScript only; declaration emit keeps them as
 * written (microsoft/TypeScript#61037). tsc tolerates `.ts` in a .d.ts, but other
 * consumers of declarations (bundled-types tools, editors other than VS Code) look
 * for a file that is not in the package, so the published .d.ts name the `.js`
 * files their `.d.ts` sit next to, as hand-written ESM typings do.
 */
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const dist = fileURLToPath(new URL("../dist", import.meta.url))

// `from "./a.ts"`, `import "./a.ts"`, `import("./a.ts")`: relative specifiers only.
const relativeTs = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])(\.{1,2}\/[^"'\n]*?)\.([mc]?)ts\2/g

export const rewrite = (source: string): string =>
  source.replace(relativeTs, (_, lead: string, quote: string, path: string, flavour: string) =>
    `${lead}${quote}${path}.${flavour}js${quote}`)

const declarationFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.d\.[mc]?ts$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name))

const main = (command: string | undefined): void => {
  switch (command) {
    case "clean":
      rmSync(dist, { recursive: true, force: true })
      return
    case "declarations": {
      let changed = 0
      for (const file of declarationFiles(dist)) {
        const before = readFileSync(file, "utf8")
        const after = rewrite(before)
        if (after !== before) {
          writeFileSync(file, after)
          changed++
        }
      }
      console.log(`dist: relative .ts specifiers rewritten to .js in ${changed} declaration files`)
      return
    }
    case "bin": {
      const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
        readonly bin?: Readonly<Record<string, string>>
      }
      for (const file of new Set(Object.values(manifest.bin ?? {}))) {
        chmodSync(fileURLToPath(new URL(`../${file}`, import.meta.url)), 0o755)
      }
      return
    }
    default:
      console.error("usage: node scripts/dist.ts clean | declarations | bin")
      process.exitCode = 2
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main(process.argv[2])
