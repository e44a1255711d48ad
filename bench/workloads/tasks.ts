/**
 * Tasks (the `io.modelcontextprotocol/tasks` extension, 2026-07-28 over
 * Streamable HTTP): what running a tool as a task costs against a plain
 * call of the same tool, on our server and on the official SDK v2 server,
 * each in its own process, one driver for both (bench/tasks/run.ts):
 * - `ours`: McpServer with `stateless: true`, tools with `taskSupport: "optional"`
 *   (bench/tasks/server-ours.ts);
 * - `sdk2`: `@modelcontextprotocol/server` 2.4 `createMcpHandler`, which routes
 *   `tasks/*` but keeps no tasks: a `Map` and a promise per task added
 *   (bench/tasks/server-sdk2.ts).
 * Per tool duration (`work {ms}`, 0 and 500 ms) and way of calling (plain, task):
 * wall time per call (p50, the driver following the suggested
 * `pollIntervalMs` before each `tasks/get`), HTTP round trips per call, and
 * the server's CPU per call; then the server's heap and RSS per 10,000
 * live tasks (tasks of a tool that waits on a latch, after two full GCs,
 * less the idle figure, scaled to 10,000).
 *
 * Environment: BENCH_TASKS_IMPLS (ours,sdk2), BENCH_TASKS_DURATIONS (0,500),
 * BENCH_TASKS_CALLS (calls per cell, default 32), BENCH_TASKS_CONCURRENCY
 * (default 8), BENCH_TASKS_LIVE (live tasks measured, default 10 000),
 * BENCH_TASKS_POLL_MS (the servers' suggested polling interval, default 100).
 */
import { loadavg } from "node:os"
import { envList, envNumber, interleave, mapLimited, runJsonLines, Samples, script } from "../child.ts"
import { progress } from "../http/harness.ts"
import type { Job, Measured } from "../tasks/run.ts"
import type { Workload } from "../workload.ts"

const NAME = "tasks"
const SERVERS = ["ours", "sdk2"]
const MiB = 1024 * 1024

export const workload: Workload = {
  name: "Tasks against plain calls",
  targets: [],
  run: async ({ runs, smoke }) => {
    const loadBefore = loadavg()
    const servers = envList("BENCH_TASKS_IMPLS", SERVERS.join(","))
    for (const s of servers) if (!SERVERS.includes(s)) throw new Error(`unknown server ${s} (known: ${SERVERS.join(", ")})`)
    const durations = envList("BENCH_TASKS_DURATIONS", smoke ? "0,20" : "0,500").map(Number)
    const calls = smoke ? 8 : envNumber("BENCH_TASKS_CALLS", 32)
    const concurrency = smoke ? 4 : envNumber("BENCH_TASKS_CONCURRENCY", 8)
    const live = smoke ? 200 : envNumber("BENCH_TASKS_LIVE", 10_000)
    const pollMs = smoke ? 10 : envNumber("BENCH_TASKS_POLL_MS", 100)
    const order = interleave(runs, servers).map((_, i) => servers[(i + Math.floor(i / servers.length)) % servers.length]!)
    const samples = new Samples(NAME)
    await mapLimited(order, 1, async (server) => {
      const job: Job = { server, script: script(`./tasks/server-${server}.ts`), durations, calls, concurrency, live, pollMs }
      const [m] = await runJsonLines<Measured>(script("./tasks/run.ts"), [JSON.stringify(job)])
      if (m === undefined) throw new Error(`${server}: no measurement`)
      for (const cell of m.cells) {
        const variant = `work ${cell.ms} ms, ${cell.mode === "task" ? "as a task" : "plain call"}`
        samples.add(variant, server, "ms", cell.p50, { p50: cell.p50, p99: cell.p99 })
        samples.add(variant, server, "round trips/call", cell.roundTrips)
        samples.add(variant, server, "server CPU µs/req", cell.serverCpuUs)
        progress(`tasks ${server} ${variant}: p50 ${cell.p50.toFixed(1)} ms, ${cell.roundTrips.toFixed(2)} round trips, ${Math.round(cell.serverCpuUs)} µs server CPU/call`)
      }
      const scale = 10_000 / m.live.n
      samples.add("heap per 10,000 live tasks", server, "MiB", (m.live.heapBytes * scale) / MiB)
      samples.add("RSS per 10,000 live tasks", server, "MiB", (m.live.rssBytes * scale) / MiB)
      progress(`tasks ${server}: ${m.live.n} live tasks, heap +${(m.live.heapBytes / MiB).toFixed(1)} MiB, RSS +${(m.live.rssBytes / MiB).toFixed(1)} MiB`)
    })
    progress(`tasks: load average ${loadBefore.map((l) => l.toFixed(1)).join(" / ")} before, ${loadavg().map((l) => l.toFixed(1)).join(" / ")} after`)
    return samples.rows()
  }
}
