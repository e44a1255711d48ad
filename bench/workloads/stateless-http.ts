/**
 * Stateless Streamable HTTP (2026-07-28): `tools/call echo` from three MCP
 * clients of that revision against the same servers, one POST per call.
 *
 * Clients (bench/stateless-http/run-client.ts): `ours` (McpClient pinned to
 * 2026-07-28), `ours-auto` (McpClient in `auto` with the era already cached),
 * `sdk2` (the official SDK v2 client, pinned), `effect-ai` (effect/ai's
 * McpClient, v2026_07_28), and `fetch` (a hand-written fetch client: how fast
 * the server can go, not a peer).
 *
 * Servers, each in its own process for the whole workload:
 * - `minimal`: bench/one-shot/server-modern.ts, a bare node:http server of
 *   the revision; it costs little per call, so the clients' own cost shows
 * - `sdk2`: the official SDK v2 server (test/fixtures/peers/sdk2-server.ts
 *   `--http --mode modern`)
 * - `effect-ai`: effect/ai's McpServer (test/fixtures/peers/effect-ai-server.ts
 *   `--http`)
 * Against the two real servers the server is most of each call's time, so
 * req/s there says more about the server; the client's CPU per call (its own
 * process, `process.cpuUsage`) is comparable everywhere.
 *
 * Every client run is a fresh process, one at a time; within a run the
 * clients take turns (A, B, C, … then again), so that changes in the
 * machine's load fall on all of them alike.
 *
 * Environment: BENCH_STATELESS_SERVERS (minimal,sdk2,effect-ai),
 * BENCH_STATELESS_CLIENTS (ours,ours-auto,sdk2,effect-ai,fetch),
 * BENCH_STATELESS_CONCURRENCY (1,32), BENCH_STATELESS_TOTAL (calls per run:
 * default 2 000 against `minimal` and 400 against the others, after a
 * warm-up of 300 / 100).
 */
import { execFile, spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { promisify } from "node:util"
import { envList, progress, row } from "../http/harness.ts"
import type { Result } from "../http/run-client.ts"
import type { Job, StatelessClient } from "../stateless-http/run-client.ts"
import type { Row, Target, Workload, WorkloadOptions } from "../workload.ts"

const NAME = "stateless http"
const here = (file: string) => new URL(file, import.meta.url).pathname
const clientScript = here("../stateless-http/run-client.ts")
const execFileAsync = promisify(execFile)

type ServerName = "minimal" | "sdk2" | "effect-ai"
const SERVERS: Record<ServerName, { readonly script: string; readonly args: ReadonlyArray<string> }> = {
  minimal: { script: here("../one-shot/server-modern.ts"), args: ["--mode", "json"] },
  sdk2: { script: here("../../test/fixtures/peers/sdk2-server.ts"), args: ["--http", "--mode", "modern"] },
  "effect-ai": { script: here("../../test/fixtures/peers/effect-ai-server.ts"), args: ["--http", "--mode", "modern"] }
}

interface Running {
  readonly url: string
  readonly stop: () => Promise<void>
}

const START_BOUND_MS = 60_000

/** Starts a server and waits for its URL: `listening <url>` (bench servers) or `LISTENING <port>` (peers, path /mcp). */
const start = (name: ServerName): Promise<Running> => {
  const { script, args } = SERVERS[name]
  const child = spawn(process.execPath, [script, ...args], { stdio: ["ignore", "pipe", "inherit"] })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`${name} server did not announce its URL within ${START_BOUND_MS} ms`))
    }, START_BOUND_MS)
    const early = (code: number | null) => {
      clearTimeout(timer)
      reject(new Error(`${name} server exited with ${code} before listening`))
    }
    child.once("exit", early)
    // Read to the end: a server that logs must not block on a full pipe.
    createInterface({ input: child.stdout }).on("line", (line) => {
      const url = line.startsWith("listening ")
        ? line.slice("listening ".length).trim()
        : /^LISTENING (\d+)$/.test(line)
        ? `http://127.0.0.1:${line.slice("LISTENING ".length)}/mcp`
        : undefined
      if (url === undefined) return
      clearTimeout(timer)
      child.off("exit", early)
      resolve({
        url,
        stop: async () => {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
          await exited
        }
      })
    })
  })
}

/** One client run in a fresh process; a failed run is retried once (and reported), as in the HTTP workload. */
const runClient = async (job: Job): Promise<Result> => {
  const once = async () => {
    const { stdout } = await execFileAsync(process.execPath, [clientScript, JSON.stringify(job)], {
      encoding: "utf8",
      maxBuffer: 1 << 20,
      timeout: 300_000
    })
    return JSON.parse(stdout.trim().split("\n").pop()!) as Result
  }
  try {
    return await once()
  } catch (error) {
    const text = String((error as { stderr?: unknown }).stderr ?? error).split("\n").find((l) => /Error/.test(l)) ?? ""
    progress(`stateless-http ${job.client} failed, retrying once: ${text.trim()}`)
    return await once()
  }
}

const measure = async (options: WorkloadOptions): Promise<Array<Row>> => {
  const servers = envList("BENCH_STATELESS_SERVERS", options.smoke ? "minimal" : "minimal,sdk2,effect-ai") as Array<ServerName>
  for (const s of servers) if (!(s in SERVERS)) throw new Error(`unknown server ${s} (known: ${Object.keys(SERVERS).join(", ")})`)
  const clients = envList("BENCH_STATELESS_CLIENTS", "ours,ours-auto,sdk2,effect-ai,fetch") as Array<StatelessClient>
  const concurrencies = envList("BENCH_STATELESS_CONCURRENCY", options.smoke ? "32" : "1,32").map(Number)
  const totalFor = (server: ServerName) =>
    options.smoke ? 64 : Number(process.env.BENCH_STATELESS_TOTAL ?? (server === "minimal" ? 2_000 : 400))
  const warmupFor = (server: ServerName) => (options.smoke ? 10 : server === "minimal" ? 300 : 100)

  const running = new Map<ServerName, Running>()
  const results = new Map<string, Array<Result>>()
  try {
    for (const server of servers) running.set(server, await start(server))
    for (let r = 0; r < options.runs; r++) {
      for (const server of servers) {
        for (const c of concurrencies) {
          for (const client of clients) {
            const result = await runClient({
              client,
              url: running.get(server)!.url,
              concurrency: c,
              total: totalFor(server),
              warmup: warmupFor(server)
            })
            const key = `${server}|${c}|${client}`
            results.set(key, [...(results.get(key) ?? []), result])
            progress(
              `stateless-http ${server} c${c} ${client} run ${r + 1}: ${Math.round(result.rps)} calls/s, ${
                result.cpuUs.toFixed(0)
              } µs CPU/call`
            )
          }
        }
      }
    }
  } finally {
    for (const server of running.values()) await server.stop()
  }

  const rows: Array<Row> = []
  for (const server of servers) {
    for (const c of concurrencies) {
      for (const client of clients) {
        const runs = results.get(`${server}|${c}|${client}`) ?? []
        if (runs.length === 0) continue
        const cell = { workload: NAME, variant: `${server} tools/call c${c}`, impl: client }
        rows.push(row({ ...cell, metric: "req/s" }, runs.map((x) => x.rps), { p50: runs.map((x) => x.p50), p99: runs.map((x) => x.p99) }))
        rows.push(row({ ...cell, metric: "CPU µs/req" }, runs.map((x) => x.cpuUs)))
      }
    }
  }
  return rows
}

/** At concurrency 32, at least 1.5× the SDK v2 client and effect/ai's client, on throughput and on CPU per call. */
const targets: ReadonlyArray<Target> = ["sdk2", "effect-ai"].map((peer) => ({
  workload: NAME,
  variant: "* c32",
  ours: "ours",
  peer,
  atLeast: 1.5
}))

export const workload: Workload = { name: "Stateless Streamable HTTP clients", run: measure, targets }
