/**
 * The one-shot scripts the quick-start workload runs as whole processes,
 * derived at run time from README.md so that they cannot drift from it:
 * - `subpath`: README.md's first quick start as written, but for the command
 *   that starts the server, so that every client spawns the same server;
 * - `barrel`: the same program with each subpath import turned into a named
 *   import from its package's root (`effect`, `@effect/platform-node`,
 *   `effect-mcp-transport`).
 * The official SDK's version is `sdk-client.ts`, beside this file.
 */

/** The server command README.md's quick start spawns; replaced by the bench's server. */
export const README_SERVER = `{ command: "npx", args: ["effect-mcp-transport", "serve", "--stdio"] }`

/** The first TypeScript block under README.md's "## Quick start" heading. */
export const readmeQuickStart = (readme: string): string => {
  const section = readme.indexOf("\n## Quick start")
  if (section === -1) throw new Error("README.md has no \"## Quick start\" section")
  const open = readme.indexOf("\n```ts\n", section)
  const close = open === -1 ? -1 : readme.indexOf("\n```\n", open + 1)
  if (open === -1 || close === -1) throw new Error("README.md's quick start has no ```ts block")
  return readme.slice(open + "\n```ts\n".length, close + 1)
}

/** The program with README.md's server command replaced by `command args…` (exactly one occurrence). */
export const withServer = (code: string, command: string, args: ReadonlyArray<string>): string => {
  const parts = code.split(README_SERVER)
  if (parts.length !== 2) {
    throw new Error(
      `README.md's first quick start should start its server with exactly one \`${README_SERVER}\` ` +
        `(found ${parts.length - 1}); update bench/quick-start/scripts.ts to match it`
    )
  }
  return parts.join(`{ command: ${JSON.stringify(command)}, args: ${JSON.stringify(args)} }`)
}

const SUBPATH_IMPORT = /^import \* as (\w+) from "((?:@[\w-]+\/)?[\w-]+)\/([\w/-]+)"$/

/**
 * The same program on barrel imports: `import * as Effect from "effect/Effect"`
 * becomes `import { Effect } from "effect"`, one import per package. Every
 * import must be a namespace import named after its module's last path segment,
 * which is how each root re-exports it.
 */
export const toBarrels = (code: string): string => {
  const names = new Map<string, Array<string>>()
  const body: Array<string> = []
  for (const line of code.split("\n")) {
    const match = SUBPATH_IMPORT.exec(line)
    if (match === null) {
      if (line.startsWith("import ")) throw new Error(`not a subpath namespace import: ${line}`)
      body.push(line)
      continue
    }
    const [, name, root, path] = match as unknown as [string, string, string, string]
    if (path.split("/").at(-1) !== name) throw new Error(`the namespace is not named after its module: ${line}`)
    names.set(root, [...(names.get(root) ?? []), name])
  }
  if (names.size === 0) throw new Error("no subpath import to turn into a barrel import")
  const imports = [...names].map(([root, list]) => `import { ${list.join(", ")} } from ${JSON.stringify(root)}`)
  return [...imports, ...body].join("\n")
}
