/**
 * Smoke test of the stdio benchmark harness: one short run of every cell
 * must produce the report with a row for every client, operation and
 * concurrency. Correctness only: nothing here looks at the speed.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { promisify } from "node:util"

const clients = ["raw", "ours", "ours-mcp", "sdk", "sdk-transport", "effect-ai"]
const harness = new URL("../bench/stdio-client.ts", import.meta.url).pathname

describe("bench/stdio-client.ts (smoke)", () => {
  it("prints a table with every client, for tools/call and ping at concurrency 1 and 32", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [harness], {
      encoding: "utf8",
      env: { ...process.env, BENCH_RUNS: "1", BENCH_TOTAL: "300" },
      maxBuffer: 1 << 20
    })
    expect(stdout).toContain("## stdio client benchmark")
    expect(stdout).toMatch(/- machine: \d+ cores, .+, Node v\d+/)
    const rows = stdout.split("\n").filter((line) => /^\| (callTool|ping) \|/.test(line))
    const cells = rows.map((row) => row.split("|").map((cell) => cell.trim()).filter((cell) => cell.length > 0))
    const seen = cells.map(([op, conc, client]) => `${op} ${conc} ${client}`)
    const expected = ["callTool", "ping"].flatMap((op) =>
      ["1", "32"].flatMap((conc) => clients.map((client) => `${op} ${conc} ${client}`))
    )
    expect(seen).toEqual(expected)
    for (const row of cells) {
      const [op, , client, rps] = row
      // Every client measured something, except effect/ai's McpClient, which has no ping.
      if (client === "effect-ai" && op === "ping") expect(rps).toBe("n/a")
      else expect(Number(rps!.replaceAll(",", ""))).toBeGreaterThan(0)
    }
    const coldRows = stdout.split("\n").filter((line) => clients.some((client) => line.startsWith(`| ${client} |`)))
    expect(coldRows).toHaveLength(clients.length)
  }, 300_000)
})
