/**
 * Workload 1, stdio client side: every client against the same raw NDJSON
 * responder (`bench/raw-responder.ts`), `tools/call` with a small result and
 * `ping`, at concurrency 1 and 32: requests/s with p50/p99 latency, and the
 * client process's CPU time per request.
 *
 * Each run is one fresh process per client (`bench/run-one.ts`) that measures
 * every cell after its own warm-up; runs of different clients are
 * interleaved, so drift on the machine hits all of them alike.
 *
 * Environment: BENCH_CLIENTS (default below; also `raw-fiber`,
 * `raw-passthrough` — the ladder steps — or the path of a client module),
 * BENCH_OPS (callTool,ping), BENCH_CONCURRENCY (1,32), BENCH_TOTAL (requests
 * per cell; default 4 000 at concurrency 1 and 16 000 at 32).
 */
import { envList, envNumber, groupRows, interleave, mapLimited, parallelism, runJsonLines, Samples, script } from "../child.ts"
import type { Target, Workload } from "../workload.ts"

interface Cell {
  readonly op: string
  readonly concurrency: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly cpuUs: number
}

const NAME = "stdio client"
const OP_LABEL: Record<string, string> = { callTool: "tools/call", ping: "ping" }

const speed = (variant: string, ours: string, peer: string, atLeast: number): Target => ({
  workload: NAME,
  variant,
  ours,
  peer,
  atLeast,
  metric: "req/s"
})

export const workload: Workload = {
  name: NAME,
  targets: [
    // The targets, for our transport driven from Effect (`ours`)…
    speed("* c32", "ours", "sdk", 1.5),
    speed("tools/call c32", "ours", "effect-ai", 3),
    speed("* c32", "ours", "raw", 0.7),
    speed("* c1", "ours", "raw", 0.9),
    // …and for the like-for-like protocol clients (each decodes its results).
    speed("* c32", "ours-mcp", "sdk", 1.5),
    speed("tools/call c32", "ours-mcp", "effect-ai", 3)
  ],
  run: async ({ runs, smoke }) => {
    const clients = envList("BENCH_CLIENTS", "raw,ours,ours-mcp,sdk,sdk-transport,effect-ai")
    const ops = envList("BENCH_OPS", "callTool,ping")
    const concurrencies = envList("BENCH_CONCURRENCY", "1,32").map(Number)
    const totals = concurrencies.map((c) => smoke ? 200 : envNumber("BENCH_TOTAL", c === 1 ? 4_000 : 16_000))
    const warmUp = smoke ? 50 : 2_000
    const samples = new Samples(NAME)
    const results = await mapLimited(interleave(runs, clients), parallelism(smoke), async (client) => ({
      client,
      cells: await runJsonLines<Cell>(script("./run-one.ts"), [
        client,
        ops.join(","),
        concurrencies.join(","),
        totals.join(","),
        String(warmUp)
      ])
    }))
    for (const { cells, client } of results) {
      for (const cell of cells) {
        // effect/ai's McpClient has no ping: it reports NaN and gets no row.
        if (!Number.isFinite(cell.rps)) continue
        const variant = `${OP_LABEL[cell.op] ?? cell.op} c${cell.concurrency}`
        samples.add(variant, client, "req/s", cell.rps, cell)
        samples.add(variant, client, "CPU µs/req", cell.cpuUs)
      }
    }
    return groupRows(samples.rows())
  }
}
