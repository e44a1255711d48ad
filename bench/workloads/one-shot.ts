/**
 * One-shot calls: `OneShot.callTool` against a hand-written `fetch` client
 * doing the same thing, `tools/call` with a small result.
 *
 * - `modern json` / `modern sse`: the stateless revision (2026-07-28), one
 *   POST per call, against a minimal node:http server of that revision
 *   (bench/one-shot/server-modern.ts) answering with a JSON body or a
 *   one-event SSE stream; the hand-written client sends the same `_meta` and
 *   headers and reads `res.json()` (or the first `data:` line).
 * - `legacy json`: the session era against our own McpServer on
 *   HttpServerTransport (bench/http/server-ours.ts): initialize,
 *   notifications/initialized, the call, DELETE per call. OneShot runs in
 *   `auto`, so it finds the server's era on its first call (in the warm-up)
 *   and goes straight to the handshake afterwards.
 *
 * Servers run in their own processes for the whole workload; every client
 * run is a fresh process, one at a time, runs of the two clients interleaved.
 *
 * Environment: BENCH_ONESHOT_VARIANTS (modern json,modern sse,legacy json),
 * BENCH_ONESHOT_CONCURRENCY (1,32), BENCH_ONESHOT_HTTP (undici | fetch: the
 * HttpClient under OneShot; default undici), BENCH_ONESHOT_TOTAL (calls per
 * run; default 2 000 modern, 500 legacy, after a warm-up of 300 / 100).
 */
import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { cleanup, envList, progress, row, type RunningServer, serverScript, startServer } from "../http/harness.ts"
import type { Result } from "../http/run-client.ts"
import type { Job } from "../one-shot/run-client.ts"
import type { Row, Target, Workload, WorkloadOptions } from "../workload.ts"

const NAME = "one-shot"
const CLIENTS = ["one-shot", "hand-written fetch"] as const
const here = (file: string) => new URL(file, import.meta.url).pathname
const modernServer = here("../one-shot/server-modern.ts")
const clientScript = here("../one-shot/run-client.ts")
const execFileAsync = promisify(execFile)

const runClient = async (job: Job): Promise<Result> => {
  const { stdout } = await execFileAsync(process.execPath, [clientScript, JSON.stringify(job)], {
    encoding: "utf8",
    maxBuffer: 1 << 20,
    timeout: 300_000
  })
  return JSON.parse(stdout.trim().split("\n").pop()!) as Result
}

const measure = async (options: WorkloadOptions): Promise<Array<Row>> => {
  const variants = envList("BENCH_ONESHOT_VARIANTS", "modern json,modern sse,legacy json")
  const concurrencies = envList("BENCH_ONESHOT_CONCURRENCY", options.smoke ? "8" : "1,32").map(Number)
  const http = process.env.BENCH_ONESHOT_HTTP === "fetch" ? "fetch" : "undici"
  const totalFor = (legacy: boolean) =>
    options.smoke ? 30 : Number(process.env.BENCH_ONESHOT_TOTAL ?? (legacy ? 500 : 2_000))
  const warmupFor = (legacy: boolean) => (options.smoke ? 10 : legacy ? 100 : 300)

  const servers = new Map<string, RunningServer>()
  const results = new Map<string, Array<Result>>()
  try {
    for (const variant of variants) {
      const [era, mode] = variant.split(" ") as ["modern" | "legacy", string]
      servers.set(
        variant,
        era === "modern"
          ? await startServer(modernServer, ["--mode", mode])
          : await startServer(serverScript.ours, ["--transport", "http", "--mode", mode])
      )
    }
    for (let r = 0; r < options.runs; r++) {
      for (const variant of variants) {
        const legacy = variant.startsWith("legacy")
        for (const c of concurrencies) {
          for (const client of CLIENTS) {
            const result = await runClient({
              client,
              era: legacy ? "legacy" : "modern",
              url: servers.get(variant)!.url,
              http,
              concurrency: c,
              total: totalFor(legacy),
              warmup: warmupFor(legacy)
            })
            const key = `${variant}|${c}|${client}`
            results.set(key, [...(results.get(key) ?? []), result])
            progress(`one-shot ${variant} c${c} ${client} run ${r + 1}: ${Math.round(result.rps)} calls/s, ${result.cpuUs.toFixed(0)} µs CPU/call`)
          }
        }
      }
    }
  } finally {
    for (const server of servers.values()) await server.stop()
    cleanup()
  }

  const rows: Array<Row> = []
  for (const variant of variants) {
    for (const c of concurrencies) {
      for (const client of CLIENTS) {
        const runs = results.get(`${variant}|${c}|${client}`) ?? []
        if (runs.length === 0) continue
        const cell = { workload: NAME, variant: `${variant} tools/call c${c}`, impl: client }
        rows.push(row({ ...cell, metric: "req/s" }, runs.map((x) => x.rps), { p50: runs.map((x) => x.p50), p99: runs.map((x) => x.p99) }))
        rows.push(row({ ...cell, metric: "CPU µs/req" }, runs.map((x) => x.cpuUs)))
      }
    }
  }
  return rows
}

/** At least 0.8× the hand-written client's throughput on the stateless revision. */
const targets: ReadonlyArray<Target> = ["modern json", "modern sse"].map((variant) => ({
  workload: NAME,
  variant: `${variant} tools/call *`,
  ours: "one-shot",
  peer: "hand-written fetch",
  atLeast: 0.8,
  metric: "req/s" as const
}))

export const workload: Workload = { name: "One-shot calls", run: measure, targets }
