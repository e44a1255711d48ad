/**
 * Params are decoded by code `effect` generates from their schema: the same
 * answers, errors included, as the interpreter gives where code cannot be
 * generated at run time.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"

const script = fileURLToPath(new URL("../fixtures/params-decode-script.ts", import.meta.url))
const answers = async (flags: ReadonlyArray<string>) => {
  const { stdout } = await promisify(execFile)(process.execPath, [...flags, script], { timeout: 30_000 })
  return stdout.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>)
}

describe("params decoded by compiled code", () => {
  it("answers as the interpreter does, where code generation is refused, errors included", async () => {
    const [compiledRun, interpretedRun] = await Promise.all([answers([]), answers(["--disallow-code-generation-from-strings"])])
    const compiled = compiledRun.slice(0, -1)
    expect(compiled).toEqual(interpretedRun.slice(0, -1))
    expect(compiledRun.at(-1)!.generated).toBeGreaterThan(0)
    expect(interpretedRun.at(-1)).toEqual({ generated: 0 })
    expect(compiled[0]).toEqual({ jsonrpc: "2.0", id: 0, result: { params: { name: "echo", arguments: { text: "hi", n: 1 } } } })
    expect(compiled[1]).toEqual({ jsonrpc: "2.0", id: 1, result: { params: { name: "echo" } } })
    for (const reply of compiled.slice(2)) {
      expect((reply.error as { code: number; message: string }).code).toBe(-32602)
    }
    expect((compiled[2].error as { message: string }).message).toContain("Expected string")
  }, 60_000)
})
