/**
 * `effect-mcp-transport ping`, run as the built binary: N pings over one session and
 * the round-trip summary, as text and as JSON.
 */
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { ensureBuilt, NODE, runCli } from "./runCli.ts"

const RECORDING = path.resolve(import.meta.dirname, "fixtures/recording-server.ts")
const TIMEOUT = 120_000

beforeAll(ensureBuilt)

describe.concurrent("effect-mcp-transport ping", () => {
  it("pings N times and prints min / median / p99 / max", async () => {
    const r = await runCli(["ping", "--count", "3", "--interval", "0", "--", NODE, RECORDING])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    const lines = r.stdout.trimEnd().split("\n")
    expect(lines).toHaveLength(4)
    lines.slice(0, 3).forEach((l, i) => expect(l).toMatch(new RegExp(`^ping ${i + 1}: \\d+\\.\\d{3} ms$`)))
    expect(lines[3]).toMatch(/^3\/3 ok, 0 failed; min [\d.]+ \/ median [\d.]+ \/ p99 [\d.]+ \/ max [\d.]+ ms$/)
  }, TIMEOUT)

  it("--json prints the counts, the samples and ordered statistics", async () => {
    const r = await runCli(["ping", "--json", "-c", "4", "-i", "1", "--", NODE, RECORDING])
    expect(r.code).toBe(0)
    const s = JSON.parse(r.stdout)
    expect(s).toMatchObject({ count: 4, ok: 4, failed: 0, transport: "stdio", errors: [] })
    expect(s.samples).toHaveLength(4)
    expect(s.minMs).toBe(Math.min(...s.samples))
    expect(s.maxMs).toBe(Math.max(...s.samples))
    expect(s.minMs).toBeLessThanOrEqual(s.medianMs)
    expect(s.medianMs).toBeLessThanOrEqual(s.p99Ms)
    expect(s.p99Ms).toBeLessThanOrEqual(s.maxMs)
  }, TIMEOUT)

  it("exits 2 on --count 0", async () => {
    const r = await runCli(["ping", "--count", "0", "--", NODE, RECORDING])
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/count/)
  }, TIMEOUT)
})
