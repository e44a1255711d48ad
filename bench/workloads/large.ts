/**
 * Workload 4, large messages: a `tools/call` whose result is 1 MiB or
 * 10 MiB of text, over stdio and over Streamable HTTP (JSON and SSE
 * answers), for each client+server pair: ours (our transport ↔ McpServer on
 * our server transport), sdk (the official Client ↔ its McpServer) and raw
 * (the bare requester ↔ the bare responder). Measured: time per call, and
 * the peak RSS of the client process and of the server process.
 *
 * Every run of every cell is a fresh client process and a fresh server
 * process (peak RSS is a process's lifetime high-water mark), calls one at a
 * time: a warm-up call, then BENCH_LARGE_CALLS calls (default 10 for 1 MiB,
 * 3 for 10 MiB). At most BENCH_LARGE_RUNS (3) runs per cell, whatever the
 * orchestrator asks for. Our transports and the SDK's stdio client run with a
 * 64 MiB message limit, since their default 10 MiB is less than a 10 MiB
 * result in its envelope. BENCH_LARGE_SIZES=0 measures a small result: the
 * processes' baseline (mostly loaded code).
 *
 * Rows: workload `large 1 MiB` / `large 10 MiB`; variant `<what> <transport>`
 * where what is `time` (ms per call), `client RSS` or `server RSS` (MiB)
 * and transport `stdio`, `http json` or `http sse`.
 *
 * Environment: BENCH_LARGE_SIZES (MiB, "1,10"), BENCH_LARGE_TRANSPORTS
 * ("stdio,http json,http sse"), BENCH_LARGE_IMPLS ("ours,sdk,raw"; also
 * `ours-mcp`: McpClient on our transport), BENCH_LARGE_CALLS.
 */
import type { Row, Target, Workload, WorkloadOptions } from "../workload.ts"
import type { ClientName, Target as ClientTarget } from "../http/clients.ts"
import { cleanup, envList, progress, readRss, row, rssFile, runClient, serverScript, startServer } from "../http/harness.ts"

const MiB = 1024 * 1024
type Impl = "ours" | "ours-mcp" | "sdk" | "raw"

const serverOf = (impl: Impl) => (impl === "ours-mcp" ? "ours" : impl)

interface Sample {
  readonly msPerCall: number
  readonly clientRss: number
  readonly serverRss: number | undefined
}

const runCell = async (impl: Impl, transport: string, bytes: number, calls: number): Promise<Sample> => {
  const server = serverOf(impl)
  const client = impl as ClientName
  const job = { client, op: "callTool" as const, concurrency: 1, total: calls, warmup: 1 }
  if (transport === "stdio") {
    const rss = rssFile()
    const target: ClientTarget = server === "raw"
      ? { kind: "stdio", command: process.execPath, args: [serverScript.rawStdio], env: { BENCH_RSS_FILE: rss, BENCH_RESULT_BYTES: String(bytes) } }
      : {
        kind: "stdio",
        command: process.execPath,
        args: [serverScript[server], "--transport", "stdio", "--bytes", String(bytes)],
        env: { BENCH_RSS_FILE: rss }
      }
    const result = await runClient({ ...job, target })
    return { msPerCall: result.msPerCall, clientRss: result.peakRss, serverRss: readRss(rss) }
  }
  const mode = transport === "http sse" ? "sse" : "json"
  const running = await startServer(serverScript[server], ["--transport", "http", "--mode", mode, "--bytes", String(bytes)])
  try {
    const result = await runClient({ ...job, target: { kind: "http", url: running.url } })
    return { msPerCall: result.msPerCall, clientRss: result.peakRss, serverRss: await running.stop() }
  } finally {
    await running.stop()
  }
}

export const measure = async (options: WorkloadOptions): Promise<{ rows: Array<Row>; details: Array<never> }> => {
  // A smoke run checks every pair and transport once, with the 10 MiB cell scaled down.
  const sizes = envList("BENCH_LARGE_SIZES", options.smoke ? "10" : "1,10").map(Number)
  const transports = envList("BENCH_LARGE_TRANSPORTS", "stdio,http json,http sse")
  const impls = envList("BENCH_LARGE_IMPLS", "ours,sdk,raw") as ReadonlyArray<Impl>
  const callsFor = (mib: number) =>
    options.smoke ? 1 : Number(process.env.BENCH_LARGE_CALLS ?? (mib >= 10 ? 3 : 10))
  // Peak RSS barely moves between runs, and every cell starts two processes:
  // three runs keep the workload near four minutes on two cores.
  const runs = Math.min(options.runs, Number(process.env.BENCH_LARGE_RUNS ?? 3))
  // Smoke runs check the harness with small results.
  const bytesFor = (mib: number) => (options.smoke ? Math.round(mib * 10 * 1024) : mib * MiB)

  const samples = new Map<string, Array<Sample>>()
  const key = (mib: number, transport: string, impl: string) => `${mib}|${transport}|${impl}`
  try {
    for (let r = 0; r < runs; r++) {
      for (const mib of sizes) {
        for (const transport of transports) {
          for (const impl of impls) {
            const sample = await runCell(impl, transport, bytesFor(mib), callsFor(mib))
            const k = key(mib, transport, impl)
            samples.set(k, [...(samples.get(k) ?? []), sample])
            progress(
              `large ${mib} MiB ${transport} ${impl} run ${r + 1}: ${sample.msPerCall.toFixed(1)} ms/call, client ${(sample.clientRss / MiB).toFixed(0)} MiB, server ${sample.serverRss === undefined ? "?" : (sample.serverRss / MiB).toFixed(0)} MiB`
            )
          }
        }
      }
    }
  } finally {
    cleanup()
  }

  const rows: Array<Row> = []
  for (const mib of sizes) {
    const workload = `large ${mib} MiB`
    for (const [what, metric, pick] of [
      ["time", "ms", (s: Sample) => s.msPerCall],
      ["client RSS", "MiB", (s: Sample) => s.clientRss / MiB],
      ["server RSS", "MiB", (s: Sample) => (s.serverRss === undefined ? Number.NaN : s.serverRss / MiB)]
    ] as const) {
      for (const transport of transports) {
        for (const impl of impls) {
          const values = (samples.get(key(mib, transport, impl)) ?? []).map(pick).filter(Number.isFinite)
          if (values.length === 0) continue
          rows.push(row({ workload, variant: `${what} ${transport}`, impl, metric }, values))
        }
      }
    }
  }
  return { rows, details: [] }
}

const targets: Array<Target> = [
  { workload: "large 10 MiB", variant: "client RSS *", ours: "ours", peer: "sdk", atLeast: 1, metric: "MiB" },
  { workload: "large 10 MiB", variant: "server RSS *", ours: "ours", peer: "sdk", atLeast: 1, metric: "MiB" }
]

export const workload: Workload = {
  name: "large messages",
  run: async (options) => (await measure(options)).rows,
  targets
}
