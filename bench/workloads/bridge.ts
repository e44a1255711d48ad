/**
 * Workload 7, the bridge: what exposing a stdio server over Streamable HTTP
 * through `Bridge` costs per call. Our McpClient calls the raw responder
 * (`tools/call`, small result) directly over stdio (`direct`), and through
 * the bridge (`bridge`: McpClient over HTTP → bridge process → stdio →
 * raw responder), at concurrency 1 and 32. Rows: req/s with p50/p99, and the
 * latency the bridge adds (`added p50`, bridge p50 − direct p50 of the same
 * run pair, in ms).
 *
 * Each run is a fresh client process; the bridge runs in a process of its
 * own (as `effect-mcp-transport bridge --http` would), so a bridged call crosses two
 * extra hops (HTTP in, stdio out) and three processes share the cores.
 *
 * Environment: BENCH_BRIDGE_TOTAL (requests per run; default 2 000 at
 * concurrency 1 and 8 000 at 32, after a warm-up of 300).
 */
import { envNumber, groupRows, interleave, mapLimited, parallelism, runJsonLines, Samples, script } from "../child.ts"
import type { Workload } from "../workload.ts"

interface Cell {
  readonly impl: string
  readonly concurrency: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
}

const NAME = "bridge"
const IMPLS = ["direct", "bridge"] as const

export const workload: Workload = {
  name: NAME,
  // The issue sets no ratio for the bridge: the table reports its overhead.
  targets: [],
  run: async ({ runs, smoke }) => {
    const concurrencies = [1, 32]
    const totals = concurrencies.map((c) =>
      smoke ? 40 : envNumber("BENCH_BRIDGE_TOTAL", 0) || (c === 1 ? 2_000 : 8_000)
    )
    const warmUp = smoke ? 10 : 300
    const samples = new Samples(NAME)
    const results = await mapLimited(interleave(runs, IMPLS), parallelism(smoke), (impl) =>
      runJsonLines<Cell>(script("./bridge/client.ts"), [impl, concurrencies.join(","), totals.join(","), String(warmUp)]))
    // interleave() puts each run's direct and bridge side by side: pair them for the added latency.
    for (let i = 0; i < results.length; i++) {
      for (const cell of results[i]!) {
        const variant = `tools/call c${cell.concurrency}`
        samples.add(variant, cell.impl, "req/s", cell.rps, cell)
        if (cell.impl !== "bridge") continue
        const direct = results[i - 1]?.find((d) => d.impl === "direct" && d.concurrency === cell.concurrency)
        if (direct !== undefined) samples.add(`added p50 c${cell.concurrency}`, "bridge", "ms", cell.p50 - direct.p50)
      }
    }
    return groupRows(samples.rows())
  }
}
