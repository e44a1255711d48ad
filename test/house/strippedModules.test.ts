/**
 * The processes the tests start load the repository's TypeScript stripped
 * once before the run (strip-typescript.ts, stripped-modules.mjs), without
 * Node's type stripper; a module with nothing kept for its source, such as
 * one edited since, still loads, stripped by Node.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const repo = fileURLToPath(new URL("../..", import.meta.url))
const fixture = join(repo, "test/fixtures/type-stripper-loaded.ts")
const run = (file: string) => JSON.parse(execFileSync(process.execPath, [file], { encoding: "utf8", env: process.env })) as unknown

describe("stripped TypeScript for started processes", () => {
  it("a module of the repository runs as kept, without Node's type stripper", () => {
    expect(run(fixture)).toEqual({ typeStripper: false })
  })

  it("a module with nothing kept for its source is stripped by Node and runs as written", () => {
    const work = mkdtempSync(join(repo, ".strip-test-"))
    try {
      const edited = join(work, "edited.ts")
      writeFileSync(edited, `${readFileSync(fixture, "utf8")}\nconst edited: number = 1\nvoid edited\n`)
      expect(run(edited)).toEqual({ typeStripper: true })
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
  })
})
