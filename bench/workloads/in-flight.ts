/**
 * Workload 5, many in flight: N (10 000) `tools/call`s at once, held by the
 * server until all have arrived, then released.
 * - Client side (`bench/in-flight-client.ts`): each client against the latch
 *   responder; memory of the CLIENT process per in-flight request, sampled
 *   after a full GC at the peak (all sent, none answered): heap used and RSS
 *   above the connected client's baseline, divided by N; and the time for all
 *   N to settle after the release, and from the first call.
 * - Server side (`bench/in-flight-server.ts`): the raw requester against each
 *   server, whose tool waits on a latch until N calls are in; memory of the
 *   SERVER process at that peak, per request, and the time until all are answered.
 * Every call must succeed; a run where any did not fails the workload.
 *
 * A client holds its calls as a Promise application does (a promise per
 * call; for an Effect client a `runPromise` each, so a fiber and a promise)
 * and, for the Effect clients, also as an Effect application does: one
 * program forking a fiber per call ("as fibers" rows; the other clients'
 * promise figures are repeated there, since that is how their users hold
 * calls). See bench/in-flight-client.ts.
 *
 * Environment: BENCH_IN_FLIGHT (N, default 10 000), BENCH_IN_FLIGHT_CLIENTS
 * (raw,ours,ours-mcp,sdk,effect-ai), BENCH_IN_FLIGHT_HOLD (promises,fibers), BENCH_IN_FLIGHT_SERVERS (raw,ours,sdk),
 * BENCH_IN_FLIGHT_RUNS (default: BENCH_RUNS, at most 3: the memory figures
 * barely vary between runs, and each run of every implementation takes
 * tens of seconds on a busy machine).
 */
import { envList, envNumber, groupRows, interleave, mapLimited, parallelism, runJsonLines, Samples, script } from "../child.ts"
import type { Target, Workload } from "../workload.ts"

interface Result {
  readonly heapKiB: number
  readonly rssKiB: number
  readonly settleMs?: number
  readonly totalMs: number
  readonly fulfilled: number
  readonly rejected: number
}

const NAME = "in flight"

/** The clients that can hold their calls as fibers of one Effect program (`holdAsFibers`). */
const EFFECT_CLIENTS = new Set(["ours", "ours-mcp", "effect-ai", "raw-fiber", "ours-mcp-telemetry"])

const memory = (side: "client" | "server", ours: string): Target => ({
  workload: NAME,
  variant: `${side} *`,
  ours,
  peer: "sdk",
  atLeast: 1,
  metric: "KiB/req"
})

export const workload: Workload = {
  name: NAME,
  targets: [memory("client", "ours"), memory("client", "ours-mcp"), memory("server", "ours")],
  run: async ({ runs, smoke }) => {
    const count = smoke ? 200 : envNumber("BENCH_IN_FLIGHT", 10_000)
    const clients = envList("BENCH_IN_FLIGHT_CLIENTS", "raw,ours,ours-mcp,sdk,effect-ai")
    const servers = envList("BENCH_IN_FLIGHT_SERVERS", "raw,ours,sdk")
    const runCount = envNumber("BENCH_IN_FLIGHT_RUNS", Math.min(runs, 3))
    const samples = new Samples(NAME)
    const check = (who: string, r: Result) => {
      if (r.fulfilled !== count || r.rejected !== 0) {
        throw new Error(`${who}: ${r.fulfilled} of ${count} calls succeeded, ${r.rejected} failed`)
      }
    }
    const holds = envList("BENCH_IN_FLIGHT_HOLD", "promises,fibers")
    const clientJobs = holds.flatMap((hold) =>
      clients.filter((client) => hold === "promises" || EFFECT_CLIENTS.has(client)).map((client) => ({ client, hold }))
    )
    const clientRuns = await mapLimited(interleave(runCount, clientJobs), parallelism(smoke), async ({ client, hold }) => {
      const [r] = await runJsonLines<Result>(script("./in-flight-client.ts"), [client, String(count), hold], {
        nodeArgs: ["--expose-gc"]
      })
      check(`client ${client} (${hold})`, r!)
      return { client, hold, r: r! }
    })
    for (const { client, hold, r } of clientRuns) {
      // Promise-only clients' users hold promises: their figures stand in the fibers rows as well.
      const promiseOnly = holds.includes("fibers") && !EFFECT_CLIENTS.has(client)
      const suffixes = hold === "fibers" ? [" as fibers"] : promiseOnly ? ["", " as fibers"] : [""]
      for (const suffix of suffixes) {
        samples.add(`client heap${suffix}`, client, "KiB/req", r.heapKiB)
        samples.add(`client RSS${suffix}`, client, "KiB/req", r.rssKiB)
        samples.add(`client settle after release${suffix}`, client, "ms", r.settleMs!)
        samples.add(`client first call → all settled${suffix}`, client, "ms", r.totalMs)
      }
    }
    const serverRuns = await mapLimited(interleave(runCount, servers), parallelism(smoke), async (server) => {
      const [r] = await runJsonLines<Result>(script("./in-flight-server.ts"), [server, String(count)])
      check(`server ${server}`, r!)
      return { server, r: r! }
    })
    for (const { r, server } of serverRuns) {
      samples.add("server heap", server, "KiB/req", r.heapKiB)
      samples.add("server RSS", server, "KiB/req", r.rssKiB)
      samples.add("server first call → all answered", server, "ms", r.totalMs)
    }
    return groupRows(samples.rows()).map((row) => ({ ...row, variant: `${row.variant} (${count.toLocaleString("en-US")})` }))
  }
}
