/**
 * The scripts the tests start as processes (fixtures, the conformance
 * runners) import `effect` and `@effect/platform-node` module by module, as
 * src/ does: a process that imports a barrel loads every module behind it,
 * about half a second of CPU at each start, and the suite starts hundreds.
 */
import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"

const root = new URL("../../", import.meta.url).pathname

const scripts = (dir: string): Array<string> =>
  readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))

/** Value imports of a barrel (`import type` loads nothing), with their line numbers. */
const barrelImports = (source: string): Array<string> => {
  const found: Array<string> = []
  const pattern = /^import\s+(?!type\s)(?:\{[^}]*\}|\*\s+as\s+\w+|\w+)\s+from\s+"(effect|@effect\/platform-node)"/gm
  for (const match of source.matchAll(pattern)) {
    const line = source.slice(0, match.index).split("\n").length
    found.push(`${line}: ${match[0].replace(/\s+/g, " ")}`)
  }
  return found
}

describe("scripts started as processes", () => {
  it("import effect and @effect/platform-node by subpath, not through the barrels", () => {
    const spawned = [
      ...scripts("test").filter((file) => file.split("/").includes("fixtures")),
      ...scripts("conformance")
    ]
    expect(spawned.length).toBeGreaterThan(30)
    const offenders = spawned.flatMap((file) =>
      barrelImports(readFileSync(join(root, file), "utf8")).map((found) => `${file}:${found}`)
    )
    expect(offenders).toEqual([])
  })

  it("tells a barrel's value import from a type-only one and a subpath", () => {
    expect(barrelImports([
      `import { Effect, Layer } from "effect"`,
      `import type { Scope } from "effect"`,
      `import * as Effect from "effect/Effect"`,
      `import { x } from "./x.ts"`,
      `import type { Layer } from "effect"`,
      `import {\n  NodeRuntime\n} from "@effect/platform-node"`,
      `import * as All from "effect"`
    ].join("\n"))).toEqual([
      `1: import { Effect, Layer } from "effect"`,
      `6: import { NodeRuntime } from "@effect/platform-node"`,
      `9: import * as All from "effect"`
    ])
  })
})
