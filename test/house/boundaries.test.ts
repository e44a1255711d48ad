/**
 * The import boundaries of src/ (rules and known violations in
 * boundaryRules.ts), and the checker itself on small trees written to a
 * temporary folder.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { checkBoundaries, findViolations, type KnownViolation, matches, type Rule } from "./boundaries.ts"
import { composition, knownViolations, rules } from "./boundaryRules.ts"
import { readImportGraph } from "./importGraph.ts"

const repo = fileURLToPath(new URL("../..", import.meta.url))

describe("src/ import boundaries", () => {
  const graph = readImportGraph(repo)

  it("holds: every violation is a listed known one, and every listed one still occurs", () => {
    const failures = checkBoundaries(graph, rules, knownViolations)
    expect(failures, `\n${failures.join("\n")}\n`).toEqual([])
  })

  it("names a reason for every known violation", () => {
    expect(knownViolations.filter((known) => known.reason.trim() === "")).toEqual([])
  })

  it("lists only composition globs that match a file", () => {
    expect(composition.filter((glob) => !graph.files.some((file) => matches(file, [glob])))).toEqual([])
  })
})

describe("the boundary checker", () => {
  const work = mkdtempSync(join(tmpdir(), "house-boundaries-"))
  afterAll(() => rmSync(work, { recursive: true, force: true }))
  let trees = 0

  /** Writes `files` (path → source) as a new tree and reads its graph. */
  const tree = (files: Record<string, string>) => {
    const root = join(work, `tree-${++trees}`)
    for (const [path, source] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), source)
    }
    return readImportGraph(root)
  }

  const coreRule: Rule = { id: "core-no-client", says: "the core must not import the client", from: ["src/*.ts"], to: ["src/client/**"] }

  it("reads static, type-only, re-export, namespace re-export and dynamic imports, not those in comments", () => {
    const graph = tree({
      "src/a.ts": [
        `import { b } from "./b.ts"`,
        `import type { C } from "./c.ts"`,
        `export { d } from "./d.ts"`,
        `export * as E from "./e.ts"`,
        `const f = () => import("./f.ts")`,
        `type G = typeof import("./g.ts")`,
        `// import { h } from "./h.ts"`,
        `const text = 'import { i } from "./i.ts"'`,
        `import * as Effect from "effect/Effect"`
      ].join("\n"),
      ...Object.fromEntries(["b", "c", "d", "e", "f", "g", "h", "i"].map((name) => [`src/${name}.ts`, "export {}\n"]))
    })
    expect(graph.edges.map((edge) => [edge.to, edge.line])).toEqual([
      ["src/b.ts", 1],
      ["src/c.ts", 2],
      ["src/d.ts", 3],
      ["src/e.ts", 4],
      ["src/f.ts", 5],
      ["src/g.ts", 6]
    ])
    expect(graph.unresolved).toEqual([])
  })

  it("fails on a planted violation, naming the file, the line, the import and the rule", () => {
    const graph = tree({
      "src/JsonRpc.ts": `export const x = 1\nimport type { T } from "./client/Transport.ts"\n`,
      "src/client/Transport.ts": `export type T = number\n`
    })
    expect(checkBoundaries(graph, [coreRule], [])).toEqual([
      `src/JsonRpc.ts:2 imports "./client/Transport.ts" (src/client/Transport.ts), which breaks rule core-no-client: the core must not import the client`
    ])
  })

  it("tolerates a listed violation and fails on a listed one that no longer occurs", () => {
    const violating = tree({
      "src/JsonRpc.ts": `import "./client/Transport.ts"\n`,
      "src/client/Transport.ts": `export {}\n`
    })
    const clean = tree({ "src/JsonRpc.ts": `export {}\n`, "src/client/Transport.ts": `export {}\n` })
    const known: ReadonlyArray<KnownViolation> = [
      { rule: "core-no-client", from: "src/JsonRpc.ts", to: "src/client/Transport.ts", reason: "moves later" }
    ]
    expect(checkBoundaries(violating, [coreRule], known)).toEqual([])
    expect(checkBoundaries(clean, [coreRule], known)).toEqual([
      "knownViolations lists core-no-client src/JsonRpc.ts -> src/client/Transport.ts, which no longer occurs: remove it from the list"
    ])
  })

  it("exempts the files a rule excepts", () => {
    const graph = tree({ "src/index.ts": `export * from "./client/Transport.ts"\n`, "src/client/Transport.ts": `export {}\n` })
    expect(findViolations(graph, [coreRule])).toHaveLength(1)
    expect(findViolations(graph, [{ ...coreRule, fromExcept: ["src/index.ts"] }])).toEqual([])
  })

  it("reports an import cycle with its path, and a listed cycle is tolerated", () => {
    const graph = tree({
      "src/a.ts": `import { b } from "./b.ts"\nexport const a = 1\n`,
      "src/b.ts": `import type { C } from "./c/c.ts"\nexport const b = 2\n`,
      "src/c/c.ts": `import { a } from "../a.ts"\nexport type C = typeof a\n`,
      "src/d.ts": `import { a } from "./a.ts"\n`
    })
    expect(checkBoundaries(graph, [], [])).toEqual(["import cycle (rule no-cycles): src/a.ts → src/b.ts → src/c/c.ts → src/a.ts (files in the cycle: src/a.ts, src/b.ts, src/c/c.ts)"])
    expect(checkBoundaries(graph, [], [{ rule: "no-cycles", cycle: ["src/c/c.ts", "src/b.ts", "src/a.ts"], reason: "being split" }])).toEqual([])
  })

  it("reports a file that imports itself", () => {
    const graph = tree({ "src/self.ts": `export * from "./self.ts"\n` })
    expect(checkBoundaries(graph, [], [])).toEqual(["import cycle (rule no-cycles): src/self.ts → src/self.ts"])
  })

  it("reports a relative import that names no file", () => {
    const graph = tree({ "src/a.ts": `\nimport "./gone.ts"\n` })
    expect(checkBoundaries(graph, [], [])).toEqual([`src/a.ts:2 imports "./gone.ts", which names no file`])
  })

  it("rejects a known entry that names no rule", () => {
    const graph = tree({ "src/a.ts": `export {}\n` })
    expect(checkBoundaries(graph, [], [{ rule: "no-such-rule", from: "src/a.ts", to: "src/b.ts", reason: "typo" }])).toContain(
      "knownViolations names an unknown rule: no-such-rule"
    )
  })

  it("matches globs: * within a folder, ** across folders", () => {
    expect(matches("src/JsonRpc.ts", ["src/*.ts"])).toBe(true)
    expect(matches("src/client/McpClient.ts", ["src/*.ts"])).toBe(false)
    expect(matches("src/client/manager/Config.ts", ["src/client/**"])).toBe(true)
    expect(matches("src/client/StdioClientTransport.ts", ["src/client/**/*Transport.ts"])).toBe(true)
    expect(matches("src/client/http/SseTransport.ts", ["src/client/**/*Transport.ts"])).toBe(true)
    expect(matches("src/client/McpClient.ts", ["src/client/**/*Transport.ts"])).toBe(false)
  })
})
