/**
 * Every export of the package's entry points has a JSDoc with a summary
 * line, `@since` and `@category` (exportDocs.ts says where the doc is looked
 * for). An undocumented export fails the build.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { entryFiles, exportDocs } from "./exportDocs.ts"

const repo = fileURLToPath(new URL("../..", import.meta.url))

describe("public exports", () => {
  const entries = entryFiles(repo)

  it("come from the files package.json exports reaches, patterns expanded, null folders and internals left out", () => {
    expect(entries).toEqual(expect.arrayContaining([
      "src/index.ts",
      "src/client/index.ts",
      "src/client/McpClient.ts",
      "src/server/index.ts",
      "src/server/McpServer.ts",
      "src/testing/index.ts",
      "src/JsonRpc.ts",
      "src/bridge/Bridge.ts"
    ]))
    expect(entries.filter((file) => /^src\/(internal|cli|client\/manager|server\/http)\//.test(file))).toEqual([])
  })

  it("are documented (summary, @since, @category)", () => {
    const failures = exportDocs(repo, entries).filter((doc) => doc.missing.length > 0).map((doc) =>
      `${doc.id}: no ${doc.missing.join(", no ")} in its JSDoc (document it in Effect's style: a summary line, @since, @category)`
    )
    expect(failures, `\n${failures.join("\n")}\n`).toEqual([])
  })

  it("say they came in a version no later than the package's (@since)", () => {
    const version: string = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).version
    const later = (since: string): boolean => {
      const [a, b] = [since, version].map((text) => text.split("-")[0]!.split(".").map(Number))
      for (let i = 0; i < 3; i++) if (a![i] !== b![i]) return (a![i] ?? 0) > (b![i] ?? 0)
      return false
    }
    const failures = readdirSync(join(repo, "src"), { recursive: true, encoding: "utf8" })
      .filter((path) => path.endsWith(".ts"))
      .sort()
      .flatMap((path) =>
        readFileSync(join(repo, "src", path), "utf8").split("\n").flatMap((line, index) => {
          const since = /@since\s+(\S+)/.exec(line)?.[1]
          return since !== undefined && later(since) ? [`src/${path}:${index + 1}: @since ${since}, but package.json is ${version}`] : []
        })
      )
    expect(failures, `\n${failures.join("\n")}\n`).toEqual([])
  })
})

describe("the export documentation check", () => {
  const work = mkdtempSync(join(tmpdir(), "house-exports-"))
  afterAll(() => rmSync(work, { recursive: true, force: true }))

  const write = (files: Record<string, string>) => {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(work, path)), { recursive: true })
      writeFileSync(join(work, path), text)
    }
  }

  const doc = (summary: string) => `/**\n * ${summary}\n *\n * @since 1.0.0\n * @category constructors\n */\n`

  write({
    "package.json": JSON.stringify({
      name: "tiny",
      exports: {
        ".": { types: "./dist/index.d.ts", default: "./dist/index.js" },
        "./sub/*": { types: "./dist/sub/*.d.ts", default: "./dist/sub/*.js" },
        "./sub/hidden/*": null,
        "./package.json": "./package.json"
      }
    }),
    "src/index.ts": [
      "/**\n * The module's own documentation.\n */",
      `export * as B from "./sub/B.ts"`,
      `${doc("A documented namespace.")}export * as A from "./sub/A.ts"`,
      `export { named } from "./internal/named.ts"`
    ].join("\n"),
    "src/sub/A.ts": [
      `${doc("Documented.")}export const documented = 1`,
      `/** Only a summary. */\nexport const summaryOnly = 2`,
      `export const bare = 3`,
      `${doc("The first overload documents them all.")}export function over(a: string): string\nexport function over(a: number): number\nexport function over(a: unknown) { return a }`,
      `${doc("The type half.")}export type Pair = { readonly a: number }`,
      `export const Pair = (a: number): Pair => ({ a })`
    ].join("\n"),
    "src/sub/B.ts": `export const b = 1\n`,
    "src/sub/hidden/C.ts": `export const hidden = 1\n`,
    "src/internal/named.ts": `${doc("Documented where it is declared.")}export const named = 1\n`
  })

  it("expands patterns and leaves out what a more specific null closes", () => {
    expect(entryFiles(work)).toEqual(["src/index.ts", "src/sub/A.ts", "src/sub/B.ts"])
  })

  it("finds the doc on declarations, on `export * as`, and on the original of a named re-export", () => {
    expect(exportDocs(work)).toEqual([
      { id: "src/index.ts#A", missing: [] },
      // The file's first comment (no @category) documents the module, not this export.
      { id: "src/index.ts#B", missing: ["summary", "@since", "@category"] },
      { id: "src/internal/named.ts#named", missing: [] },
      // Both declarations of a name need the doc.
      { id: "src/sub/A.ts#Pair", missing: ["summary", "@since", "@category"] },
      { id: "src/sub/A.ts#bare", missing: ["summary", "@since", "@category"] },
      // The first statement's only comment, with @category: its own.
      { id: "src/sub/A.ts#documented", missing: [] },
      { id: "src/sub/A.ts#over", missing: [] },
      { id: "src/sub/A.ts#summaryOnly", missing: ["@since", "@category"] },
      { id: "src/sub/B.ts#b", missing: ["summary", "@since", "@category"] }
    ])
  })
})
