/**
 * Stateless Streamable HTTP (2026-07-28) servers: one driver, the same for
 * all (bench/stateless-server/run.ts: node:http with a keep-alive agent, one
 * POST per `tools/call echo {text}`), against each server in its own process:
 * - `ours`: McpServer with `stateless: true` on HttpServerTransport (eras `both`)
 * - `sdk2`: the official SDK v2 server's stateless entry, `createMcpHandler`
 *   (`@modelcontextprotocol/server` 2.4, `legacy: "reject"`)
 * - `effect-ai`: effect/ai's McpServer (`McpProtocol.v2026_07_28`, `layerHttp`)
 * - `minimal`: a bare node:http server of the revision, no MCP library: the floor
 * Servers are in bench/stateless-server/server-*.ts.
 *
 * Per server and run, a fresh server process: req/s and the server's own
 * CPU µs per call (`process.cpuUsage()` read inside it over the measured
 * window) at each concurrency, and of its main thread alone (Linux
 * `schedstat`: the event loop's share, without GC and I/O helper threads);
 * memory of the idle server after start,
 * warm-up and two full GCs; memory per in-flight call (N calls of a tool
 * that waits on a latch, heap and RSS above the idle figure ÷ N, after two
 * full GCs; each call holds its own socket, as the `minimal` row shows).
 * Within a run the servers take turns, starting one further on each run, so
 * that changes in the machine's load fall on all of them alike.
 *
 * Environment: BENCH_STATELESS_SERVER_IMPLS (ours,sdk2,effect-ai,minimal),
 * BENCH_STATELESS_SERVER_CONCURRENCY (1,32), BENCH_STATELESS_SERVER_TOTAL
 * (calls measured at c32, default 2 000; c1 measures a quarter of that),
 * BENCH_STATELESS_SERVER_HOLD (calls in flight, default 500),
 * BENCH_STATELESS_SERVER_NODE_ARGS (Node flags for the servers, e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 */
import { loadavg } from "node:os"
import { envList, envNumber, interleave, mapLimited, runJsonLines, Samples, script } from "../child.ts"
import { progress } from "../http/harness.ts"
import type { Job, Measured } from "../stateless-server/run.ts"
import type { Target, Workload } from "../workload.ts"

const NAME = "stateless server"
const SERVERS = ["ours", "sdk2", "effect-ai", "minimal"]
const MiB = 1024 * 1024

const perPeer = (variant: string, metric: Target["metric"], atLeast: number): Array<Target> =>
  ["sdk2", "effect-ai"].map((peer) => ({ workload: NAME, variant, ours: "ours", peer, atLeast, metric }))

/** At c32 at least 1.5× either peer's req/s; less server CPU per call than both at every concurrency. */
const targets: ReadonlyArray<Target> = [
  ...perPeer("tools/call c32", "req/s", 1.5),
  ...perPeer("tools/call *", "CPU µs/req", 1)
]

export const workload: Workload = {
  name: "Stateless Streamable HTTP servers",
  targets,
  run: async ({ runs, smoke }) => {
    const loadBefore = loadavg()
    const servers = envList("BENCH_STATELESS_SERVER_IMPLS", SERVERS.join(","))
    for (const s of servers) if (!SERVERS.includes(s)) throw new Error(`unknown server ${s} (known: ${SERVERS.join(", ")})`)
    const concurrencies = envList("BENCH_STATELESS_SERVER_CONCURRENCY", "1,32").map(Number)
    const total = smoke ? 64 : envNumber("BENCH_STATELESS_SERVER_TOTAL", 2_000)
    const hold = smoke ? 20 : envNumber("BENCH_STATELESS_SERVER_HOLD", 500)
    const warmup = smoke ? 32 : Math.max(200, Math.round(total / 5))
    // Run r starts at server r: no server is always the first (or last) to meet the machine's load.
    const order = interleave(runs, servers).map((_, i) => servers[(i + Math.floor(i / servers.length)) % servers.length]!)
    const samples = new Samples(NAME)
    await mapLimited(order, 1, async (server) => {
      const job: Job = { server, script: script(`./stateless-server/server-${server}.ts`), concurrencies, total, warmup, hold }
      const [m] = await runJsonLines<Measured>(script("./stateless-server/run.ts"), [JSON.stringify(job)])
      if (m === undefined) throw new Error(`${server}: no measurement`)
      for (const load of m.loads) {
        const variant = `tools/call c${load.concurrency}`
        samples.add(variant, server, "req/s", load.rps, { p50: load.p50, p99: load.p99 })
        samples.add(variant, server, "CPU µs/req", load.serverCpuUs)
        samples.add(`${variant} main thread`, server, "CPU µs/req", load.mainThreadUs)
        progress(
          `stateless-server ${server} c${load.concurrency}: ${Math.round(load.rps)} req/s, ${
            Math.round(load.serverCpuUs)
          } µs server CPU/req (driver ${Math.round(load.driverCpuUs)})`
        )
      }
      samples.add("idle heap", server, "MiB", m.idle.heapUsed / MiB)
      samples.add("idle RSS", server, "MiB", m.idle.rss / MiB)
      samples.add(`in flight heap (${m.inFlight.n})`, server, "KiB/req", m.inFlight.heapKiB)
      samples.add(`in flight RSS (${m.inFlight.n})`, server, "KiB/req", m.inFlight.rssKiB)
      samples.add("start → listening", server, "ms", m.startMs)
    })
    progress(`stateless-server: load average ${loadBefore.map((l) => l.toFixed(1)).join(" / ")} before, ${loadavg().map((l) => l.toFixed(1)).join(" / ")} after`)
    return samples.rows()
  }
}
