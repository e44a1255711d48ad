/**
 * The sweep outsiders measure MCP clients with: `tools/call` with a small
 * result at concurrency 1, 2, 4, 8, 16, 32 and 64, and with 1, 20 or 100
 * `notifications/progress` per call (at concurrency 8), over stdio and over
 * Streamable HTTP, in both protocol eras: the handshake era (2025-11-25,
 * `initialize` and, over HTTP, a session) and the stateless revision
 * (2026-07-28: no handshake, the revision in every request's `_meta`).
 *
 * Clients (bench/sweep/run-client.ts: one fresh process per client and era
 * in each run, measuring every cell in turn, each after its own warm-up):
 * - `raw`: a bare requester with no framework, the floor (stdio:
 *   bench/clients/raw.ts; HTTP: an undici keep-alive pool)
 * - `ours`: this project's `McpClient`, pinned to the era, progress seen
 *   through its `onProgress` callback
 * - `sdk`: the official SDK 1.x `Client` (`@modelcontextprotocol/sdk`), with
 *   `onprogress`; it does not speak 2026-07-28, so it has no row there
 * - `sdk2`: the official SDK 2.x `Client` (`@modelcontextprotocol/client`),
 *   pinned to 2026-07-28 with `versionNegotiation` in that era, `onprogress`
 * Every one of them talks to a bare server, so that the client's own cost
 * shows: over stdio the raw NDJSON responder (bench/raw-responder.ts, with
 * `--progress n` and, for 2026-07-28, `--stateless`); over HTTP the raw
 * node:http responders (bench/http/server-raw.ts for 2025-11-25,
 * bench/one-shot/server-modern.ts for 2026-07-28). Over HTTP, `raw` is thus
 * raw→raw, and `ours→ours` is `McpClient` against our `McpServer` on
 * HttpServerTransport (bench/http/server-ours.ts, both eras; its tool
 * reports progress through its request context). A server sends a call's
 * progress in the same write as its result (over HTTP: one SSE body).
 *
 * Rows, per transport (`sweep stdio`, `sweep http`) and variant
 * `<era> c<concurrency> p<progress per call>`: req/s (median over runs, min
 * and max, p50/p99 latency), the client's CPU µs per call (its own process,
 * `process.cpuUsage`; barely moved by other load, unlike req/s), and for
 * p > 0 the progress notifications the client saw per call ("progress/call").
 * Over stdio the SDK clients see none of those that arrive in one read with
 * the result (they defer notification handlers to a microtask and drop the
 * call's progress handler as its response is handled, synchronously), so
 * their stdio p > 0 cells measure less work than ours and raw do. Every row
 * is compared with `raw` and `sdk`.
 *
 * Environment: BENCH_SWEEP_TRANSPORTS (stdio,http), BENCH_SWEEP_ERAS
 * (2025-11-25,2026-07-28), BENCH_SWEEP_CLIENTS (raw,ours,sdk,sdk2,ours→ours;
 * `client→ours` runs against our HTTP server, the others against the raw
 * one; ASCII `->` accepted), BENCH_SWEEP_CONCURRENCY (1,2,4,8,16,32,64: for
 * p0), BENCH_SWEEP_PROGRESS (0,1,20,100), BENCH_SWEEP_PROGRESS_CONCURRENCY
 * (8: where p > 0 is measured), BENCH_SWEEP_TOTAL (calls per p0 cell over
 * stdio, default 20 000) and BENCH_SWEEP_HTTP_TOTAL (over HTTP, default 2 000):
 * a cell with p notifications per call makes total / (1 + p/10) calls (at
 * least 50), after a warm-up of a quarter of that at the same concurrency (and
 * each client first warms up with four such warm-ups at its highest concurrency).
 * The totals are set so that a cell lasts long enough to measure a steady
 * state: at 4 000 calls a stdio c8 cell lasted about 50 ms, and one GC pause or
 * late compilation decided its figure (ours at 0.49× raw there, 0.93× in 20 000).
 * The full sweep at BENCH_RUNS=5 is 35 stdio and 45 HTTP client processes,
 * with 12 HTTP servers (a kind, era and progress count each) alive
 * throughout; the stdio half with raw, ours and sdk at p0 and p20 takes about
 * 4 minutes on 2 idle cores, the HTTP half longer (c1 cells run at about
 * 1 000 calls/s).
 * `BENCH_SMOKE=1`: c8 and c32, p0 and p20, 40 calls per cell.
 */
import { envList, envNumber, interleave, mapLimited, parallelism, runJsonLines, Samples, script } from "../child.ts"
import type { Protocol } from "../clients/types.ts"
import { cleanup, progress as report, type RunningServer, startServer } from "../http/harness.ts"
import type { Cell, Group, Job, SweepClient } from "../sweep/run-client.ts"
import type { Row, Target, Workload, WorkloadOptions } from "../workload.ts"

const STDIO = "sweep stdio"
const HTTP = "sweep http"
const SESSION: Protocol = "2025-11-25"
const STATELESS: Protocol = "2026-07-28"

type Server = "raw" | "ours"

/** A measured implementation: a client, and over HTTP the server it talks to. */
interface Impl {
  readonly name: string
  readonly client: SweepClient
  readonly server: Server
}

const CLIENTS: ReadonlyArray<SweepClient> = ["raw", "ours", "sdk", "sdk2"]

const parseImpl = (text: string): Impl => {
  const [client, server = "raw"] = text.replace("->", "→").split("→") as [SweepClient, Server | undefined]
  if (!CLIENTS.includes(client)) throw new Error(`unknown sweep client ${client} (known: ${CLIENTS.join(", ")})`)
  if (server !== "raw" && server !== "ours") throw new Error(`unknown sweep server ${server} (known: raw, ours)`)
  return { name: server === "raw" ? client : `${client}→${server}`, client, server }
}

/** The SDK 1.x client has no 2026-07-28; over stdio every client talks to the raw responder. */
const runs = (impl: Impl, era: Protocol, transport: "stdio" | "http") =>
  !(impl.client === "sdk" && era === STATELESS) && (transport === "http" || impl.server === "raw")

const variant = (era: Protocol, concurrency: number, progress: number) => `${era} c${concurrency} p${progress}`

interface Plan {
  readonly eras: ReadonlyArray<Protocol>
  readonly impls: ReadonlyArray<Impl>
  readonly progress: ReadonlyArray<number>
  readonly concurrenciesFor: (progress: number) => ReadonlyArray<number>
  readonly callsFor: (transport: "stdio" | "http", progress: number) => number
  readonly warmupFor: (calls: number) => number
}

const plan = ({ smoke }: WorkloadOptions): Plan => {
  const concurrency = envList("BENCH_SWEEP_CONCURRENCY", smoke ? "8,32" : "1,2,4,8,16,32,64").map(Number)
  const progressConcurrency = envList("BENCH_SWEEP_PROGRESS_CONCURRENCY", "8").map(Number)
  const base = { stdio: envNumber("BENCH_SWEEP_TOTAL", 20_000), http: envNumber("BENCH_SWEEP_HTTP_TOTAL", 2_000) }
  return {
    eras: envList("BENCH_SWEEP_ERAS", `${SESSION},${STATELESS}`) as Array<Protocol>,
    impls: envList("BENCH_SWEEP_CLIENTS", "raw,ours,sdk,sdk2,ours→ours").map(parseImpl),
    progress: envList("BENCH_SWEEP_PROGRESS", smoke ? "0,20" : "0,1,20,100").map(Number),
    concurrenciesFor: (p) => (p === 0 ? concurrency : progressConcurrency),
    // More notifications per call, fewer calls: a cell's messages stay within a few times p0's.
    callsFor: (transport, p) => (smoke ? 40 : Math.max(50, Math.round(base[transport] / (1 + p / 10)))),
    warmupFor: (calls) => (smoke ? 10 : Math.max(20, Math.round(calls / 4)))
  }
}

const clientScript = script("./sweep/run-client.ts")

/** One client process; a failed one (e.g. a keep-alive socket reset on a loaded machine) is retried once. */
const runClient = async (job: Job): Promise<Array<Cell>> => {
  const once = () => runJsonLines<Cell>(clientScript, [JSON.stringify(job)])
  try {
    return await once()
  } catch (error) {
    report(`sweep ${job.transport} ${job.client} ${job.protocol} failed, retrying once: ${String(error).split("\n")[0]}`)
    return await once()
  }
}

interface Task {
  readonly impl: Impl
  readonly era: Protocol
}

const tasksOf = (p: Plan, transport: "stdio" | "http"): Array<Task> =>
  p.eras.flatMap((era) => p.impls.filter((impl) => runs(impl, era, transport)).map((impl) => ({ impl, era })))

/**
 * Every task once per run, runs outermost (runs of different clients
 * interleave, so drift on the machine hits them alike); rows of the cells.
 */
const measure = async (
  name: string,
  options: WorkloadOptions,
  tasks: ReadonlyArray<Task>,
  job: (task: Task) => Job
): Promise<Array<Row>> => {
  const samples = new Samples(name)
  const results = await mapLimited(interleave(options.runs, tasks), parallelism(options.smoke), async (task) => {
    const cells = await runClient(job(task))
    report(`${name} ${task.era} ${task.impl.name}: ${
      cells.map((c) => `c${c.concurrency} p${c.progress} ${Math.round(c.rps)}/s`).join(", ")
    }`)
    return { task, cells }
  })
  for (const { cells, task } of results) {
    for (const cell of cells) {
      const v = variant(task.era, cell.concurrency, cell.progress)
      samples.add(v, task.impl.name, "req/s", cell.rps, cell)
      samples.add(v, task.impl.name, "CPU µs/req", cell.cpuUs)
      if (cell.progress > 0) samples.add(v, task.impl.name, "progress/call", cell.progressPerCall)
    }
  }
  return samples.rows()
}

const groups = (p: Plan, transport: "stdio" | "http", url: (progress: number) => string | undefined): Array<Group> =>
  p.progress.map((progress) => {
    const total = p.callsFor(transport, progress)
    return { progress, url: url(progress), concurrencies: p.concurrenciesFor(progress), total, warmup: p.warmupFor(total) }
  })

const stdio = (options: WorkloadOptions, p: Plan): Promise<Array<Row>> =>
  measure(STDIO, options, tasksOf(p, "stdio"), (task) => ({
    client: task.impl.client,
    transport: "stdio",
    protocol: task.era,
    groups: groups(p, "stdio", () => undefined)
  }))

/** The server an HTTP client of `era` talks to, started with `progress` notifications per call. */
const serverFor = (server: Server, era: Protocol, progress: number): Promise<RunningServer> => {
  const flags = ["--mode", "json", "--progress", String(progress)]
  if (server === "ours") return startServer(script("./http/server-ours.ts"), ["--transport", "http", ...flags])
  return era === SESSION
    ? startServer(script("./http/server-raw.ts"), flags)
    : startServer(script("./one-shot/server-modern.ts"), flags)
}

/** Our server serves both eras: one process for both. */
const serverKey = (server: Server, era: Protocol, progress: number) =>
  server === "ours" ? `ours|${progress}` : `raw|${era}|${progress}`

const http = async (options: WorkloadOptions, p: Plan): Promise<Array<Row>> => {
  const tasks = tasksOf(p, "http")
  // A server per kind, era and progress count, for the whole workload (their JIT warms up with the first runs).
  const servers = new Map<string, RunningServer>()
  try {
    for (const { era, impl } of tasks) {
      for (const progress of p.progress) {
        const key = serverKey(impl.server, era, progress)
        if (!servers.has(key)) servers.set(key, await serverFor(impl.server, era, progress))
      }
    }
    return await measure(HTTP, options, tasks, (task) => ({
      client: task.impl.client,
      transport: "http",
      protocol: task.era,
      groups: groups(p, "http", (progress) => servers.get(serverKey(task.impl.server, task.era, progress))!.url)
    }))
  } finally {
    for (const server of servers.values()) await server.stop()
    cleanup()
  }
}

/** Rows by variant in the order era, progress, concurrency; within one, req/s then CPU then progress. */
const ordered = (rows: ReadonlyArray<Row>, p: Plan): Array<Row> => {
  const key = (row: Row) => {
    const [era, c, pr] = row.variant.split(" ")
    return [p.eras.indexOf(era as Protocol), Number(pr!.slice(1)), Number(c!.slice(1))]
  }
  const metrics = ["req/s", "CPU µs/req", "progress/call"]
  const impls = ["raw", ...p.impls.map((i) => i.name)]
  return [...rows].sort((a, b) => {
    const [ka, kb] = [key(a), key(b)]
    return ka[0]! - kb[0]! || ka[1]! - kb[1]! || ka[2]! - kb[2]! || metrics.indexOf(a.metric) - metrics.indexOf(b.metric) ||
      impls.indexOf(a.impl) - impls.indexOf(b.impl)
  })
}

const speed = (workload: string, variant: string, ours: string, peer: string, atLeast: number): Target => ({
  workload,
  variant,
  ours,
  peer,
  atLeast,
  metric: "req/s"
})

export const workload: Workload = {
  name: "Concurrency and progress sweep",
  targets: [
    speed(STDIO, "* c8 p0", "ours", "raw", 0.7),
    speed(STDIO, "* p20", "ours", "raw", 0.6),
    speed(STDIO, `${SESSION} * p0`, "ours", "sdk", 1.5),
    speed(HTTP, `${SESSION} * p0`, "ours", "sdk", 1.5),
    speed(HTTP, "* c32 p0", "ours→ours", "raw", 0.5)
  ],
  peers: ["raw", "sdk"],
  run: async (options) => {
    const p = plan(options)
    const transports = envList("BENCH_SWEEP_TRANSPORTS", "stdio,http")
    const rows: Array<Row> = []
    if (transports.includes("stdio")) rows.push(...ordered(await stdio(options, p), p))
    if (transports.includes("http")) rows.push(...ordered(await http(options, p), p))
    return rows
  }
}
