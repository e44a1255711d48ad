/**
 * Workload 2, stdio server side: the raw requester (`bench/server-requester.ts`,
 * plain Node) against each server, `tools/call` with a small result and
 * `ping`, at concurrency 1 and 32, after the MCP handshake:
 * - `ours`: `McpServer` on `StdioServerTransport` (`bench/servers/ours-mcp.ts`),
 * - `ours-handler`: the transport with a bare `Handler` (ladder step),
 * - `ours-async`: the same handler answering `tools/call` one turn later, as a
 *   handler waiting on an Effect hand-off does (its request is kept by id while it runs),
 * - `ours-io`: the same handler answering `tools/call` from an event-loop
 *   callback of its own, as a handler waiting on I/O does,
 * - `ours-typed`, `ours-tool`: `McpServer` with the tool's arguments decoded
 *   and its result structured, by hand on the generic method or with
 *   `Tool.add` (`bench/servers/echo-apis.ts`),
 * - `sdk`: the official SDK's `McpServer` on its stdio transport,
 * - `raw`: the minimal NDJSON responder, the practical limit.
 * Requests/s with p50/p99, and the server process's CPU time per request.
 *
 * Environment: BENCH_SERVERS (default below, or the path of a server
 * script), BENCH_SERVER_OPS (callTool,ping), BENCH_SERVER_TOTAL (requests
 * per cell; default 3 000 at concurrency 1 and 12 000 at 32).
 */
import { envList, envNumber, groupRows, interleave, mapLimited, parallelism, runJsonLines, Samples, script } from "../child.ts"
import type { Workload } from "../workload.ts"

interface Cell {
  readonly op: string
  readonly concurrency: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly serverCpuUs: number
}

const NAME = "stdio server"
const OP_LABEL: Record<string, string> = { callTool: "tools/call", ping: "ping" }

export const workload: Workload = {
  name: NAME,
  targets: [
    { workload: NAME, variant: "*", ours: "ours", peer: "sdk", atLeast: 1.5, metric: "req/s" },
    { workload: NAME, variant: "tools/call c32", ours: "ours-tool", peer: "sdk", atLeast: 1.5, metric: "req/s" },
    { workload: NAME, variant: "tools/call *", ours: "ours-tool", peer: "ours-typed", atLeast: 0.95 }
  ],
  run: async ({ runs, smoke }) => {
    const servers = envList("BENCH_SERVERS", "raw,ours,ours-handler,ours-async,ours-io,ours-typed,ours-tool,sdk")
    const ops = envList("BENCH_SERVER_OPS", "callTool,ping")
    const concurrencies = [1, 32]
    const totals = concurrencies.map((c) => smoke ? 200 : envNumber("BENCH_SERVER_TOTAL", c === 1 ? 3_000 : 12_000))
    const warmUp = smoke ? 50 : 2_000
    const samples = new Samples(NAME)
    const results = await mapLimited(interleave(runs, servers), parallelism(smoke), async (server) => ({
      server,
      cells: await runJsonLines<Cell>(script("./server-requester.ts"), [
        server,
        ops.join(","),
        concurrencies.join(","),
        totals.join(","),
        String(warmUp)
      ])
    }))
    for (const { cells, server } of results) {
      for (const cell of cells) {
        const variant = `${OP_LABEL[cell.op] ?? cell.op} c${cell.concurrency}`
        samples.add(variant, server, "req/s", cell.rps, cell)
        samples.add(variant, server, "CPU µs/req", cell.serverCpuUs)
      }
    }
    return groupRows(samples.rows())
  }
}
