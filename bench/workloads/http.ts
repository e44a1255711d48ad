/**
 * Workload 3, Streamable HTTP: `tools/call` with a small result (and `ping`
 * with BENCH_HTTP_OPS=callTool,ping) at concurrency 1 and 32, with the server
 * answering as one JSON body (`http json`) or as an SSE stream (`http sse`).
 *
 * Every server runs in its own process on 127.0.0.1 and lives for the whole
 * workload (its JIT warms up with the first runs; every client run also has
 * its own warm-up). Every client run is a fresh process, one at a time, and
 * runs of different pairs are interleaved so drift on the machine hits them
 * alike. Client and server each get their own process (and so, on two cores,
 * roughly a core each): neither's event loop stalls the other's, and the
 * figures are what a deployment with a separate client and server sees.
 *
 * Pairs (client→server): `ours→ours` (StreamableHttpClientTransport on undici
 * ↔ McpServer on HttpServerTransport, stateful), `ours-mcp→ours` (McpClient on
 * top), `sdk→sdk` (the official Client + StreamableHTTPClientTransport ↔
 * McpServer + StreamableHTTPServerTransport on node:http), the cross pairs
 * `ours→sdk` and `sdk→ours`, and `raw→raw` (an undici keep-alive pool against
 * a bare node:http JSON-RPC responder: the practical limit), and `ours→ours-typed`,
 * `ours→ours-tool`: our server with the tool's arguments decoded and its
 * result structured, by hand on the generic method or with `Tool.add`. Any other pair
 * works through BENCH_HTTP_PAIRS, e.g. `ours→raw` and `raw→ours` to separate
 * a client's cost from a server's.
 *
 * Environment: BENCH_HTTP_PAIRS (comma list of client→server, ASCII `->`
 * accepted), BENCH_HTTP_MODES (json,sse), BENCH_HTTP_CONCURRENCY (1,32),
 * BENCH_HTTP_OPS (callTool), BENCH_HTTP_TOTAL (requests per run; default 1 000
 * at concurrency 1, 4 000 at 32, each after a warm-up of 300).
 */
import type { Row, Target, Workload, WorkloadOptions } from "../workload.ts"
import type { ClientName } from "../http/clients.ts"
import { cleanup, envList, progress, row, type RunningServer, runClient, serverScript, startServer } from "../http/harness.ts"
import type { Result } from "../http/run-client.ts"
import { processCpuUs } from "../child.ts"

type ServerName = "ours" | "ours-typed" | "ours-tool" | "sdk" | "raw"
const DEFAULT_PAIRS = "ours→ours,ours→ours-typed,ours→ours-tool,ours-mcp→ours,sdk→sdk,ours→sdk,sdk→ours,raw→raw"

/** `ours-typed` and `ours-tool`: our server with the tool defined another way (`bench/servers/echo-apis.ts`). */
const serverCommand = (server: ServerName): [string, Array<string>] =>
  server === "ours-typed" || server === "ours-tool"
    ? [serverScript.ours, ["--api", server.slice("ours-".length)]]
    : [serverScript[server], []]

const parsePair = (text: string): { client: ClientName; server: ServerName; name: string } => {
  const [client, server] = text.replace("->", "→").split("→") as [ClientName, ServerName]
  return { client, server, name: `${client}→${server}` }
}

const opLabel = (op: string) => (op === "ping" ? "ping" : "tools/call")

export interface Detail {
  readonly mode: string
  readonly op: string
  readonly concurrency: number
  readonly pair: string
  readonly results: ReadonlyArray<Result>
  /** The server process's CPU microseconds per request of each run (warm-up included). */
  readonly serverCpuUs: ReadonlyArray<number>
}

/** Runs the workload; the details keep every run's figures (CPU per request among them). */
export const measure = async (options: WorkloadOptions): Promise<{ rows: Array<Row>; details: Array<Detail> }> => {
  const pairs = envList("BENCH_HTTP_PAIRS", DEFAULT_PAIRS).map(parsePair)
  const modes = envList("BENCH_HTTP_MODES", "json,sse")
  // A smoke run checks every pair once, at the concurrency that exercises more.
  const concurrencies = envList("BENCH_HTTP_CONCURRENCY", options.smoke ? "32" : "1,32").map(Number)
  const ops = envList("BENCH_HTTP_OPS", "callTool") as ReadonlyArray<"callTool" | "ping">
  const totalFor = (c: number) =>
    options.smoke ? 60 : Number(process.env.BENCH_HTTP_TOTAL ?? (c === 1 ? 1_000 : 4_000))
  const warmup = options.smoke ? 20 : 300

  const servers = new Map<string, RunningServer>()
  const results = new Map<string, Array<Result>>()
  const serverCpu = new Map<string, Array<number>>()
  const key = (mode: string, op: string, c: number, pair: string) => `${mode}|${op}|${c}|${pair}`
  try {
    const needed = new Set(pairs.map((p) => p.server))
    for (const mode of modes) {
      for (const server of needed) {
        const [script, args] = serverCommand(server)
        servers.set(`${server}|${mode}`, await startServer(script, ["--transport", "http", "--mode", mode, ...args]))
      }
    }
    for (let r = 0; r < options.runs; r++) {
      for (const mode of modes) {
        for (const op of ops) {
          for (const c of concurrencies) {
            for (const pair of pairs) {
              const server = servers.get(`${pair.server}|${mode}`)!
              const cpu0 = await processCpuUs(server.pid)
              const result = await runClient({
                client: pair.client,
                target: { kind: "http", url: server.url },
                op,
                concurrency: c,
                total: totalFor(c),
                warmup
              })
              const serverCpuUs = (await processCpuUs(server.pid) - cpu0) / (totalFor(c) + warmup)
              const k = key(mode, op, c, pair.name)
              results.set(k, [...(results.get(k) ?? []), result])
              serverCpu.set(k, [...(serverCpu.get(k) ?? []), serverCpuUs])
              progress(
                `http ${mode} ${op} c${c} ${pair.name} run ${r + 1}: ${Math.round(result.rps)} req/s, ${result.cpuUs.toFixed(0)} µs CPU/req, server ${serverCpuUs.toFixed(0)}`
              )
            }
          }
        }
      }
    }
  } finally {
    for (const server of servers.values()) await server.stop()
    cleanup()
  }

  const rows: Array<Row> = []
  const details: Array<Detail> = []
  for (const mode of modes) {
    for (const op of ops) {
      for (const c of concurrencies) {
        for (const pair of pairs) {
          const runs = results.get(key(mode, op, c, pair.name)) ?? []
          if (runs.length === 0) continue
          const serverCpuUs = serverCpu.get(key(mode, op, c, pair.name)) ?? []
          details.push({ mode, op, concurrency: c, pair: pair.name, results: runs, serverCpuUs })
          const cell = { workload: `http ${mode}`, variant: `${opLabel(op)} c${c}`, impl: pair.name }
          rows.push(row(
            { ...cell, metric: "req/s" },
            runs.map((x) => x.rps),
            { p50: runs.map((x) => x.p50), p99: runs.map((x) => x.p99) }
          ))
          // The client process's CPU per request: less moved by other load than req/s.
          rows.push(row({ ...cell, metric: "CPU µs/req" }, runs.map((x) => x.cpuUs)))
          // The server process's, from /proc (10 ms ticks; the client's warm-up is in it).
          rows.push(row({ ...cell, metric: "server CPU µs/req" }, serverCpuUs))
        }
      }
    }
  }
  return { rows, details }
}

const targets: Array<Target> = ["json", "sse"].flatMap((mode) => [
  { workload: `http ${mode}`, variant: "tools/call *", ours: "ours→ours", peer: "sdk→sdk", atLeast: 1.5, metric: "req/s" as const },
  { workload: `http ${mode}`, variant: "tools/call c32", ours: "ours→ours-tool", peer: "sdk→sdk", atLeast: 1.5, metric: "req/s" as const },
  { workload: `http ${mode}`, variant: "tools/call *", ours: "ours→ours-tool", peer: "ours→ours-typed", atLeast: 0.95, metric: "req/s" as const },
  { workload: `http ${mode}`, variant: "tools/call *", ours: "ours→ours", peer: "raw→raw", atLeast: 0.8, metric: "req/s" as const }
])

export const workload: Workload = {
  name: "Streamable HTTP",
  run: async (options) => (await measure(options)).rows,
  targets
}
