/**
 * One client of the sweep workload in a fresh process:
 * `node bench/sweep/run-client.ts '<json Job>'` prints one JSON line
 * (`Cell`) per measured cell, in the order given.
 *
 * The job's groups run one after the other, each with a client of its own:
 * over stdio the client spawns the raw NDJSON responder
 * (`bench/raw-responder.ts --progress n`, with `--stateless` for
 * 2026-07-28); over HTTP it talks to the server at the group's `url`. With
 * `progress` above 0 every call carries a progress token and the client
 * counts the notifications the way its users would (`callToolWithProgress`);
 * the count per call is reported, so that a client that drops notifications
 * shows it. One process for all of a client's groups: Node's start-up and
 * the client's modules are paid once.
 */
import { loaderFor } from "../clients/index.ts"
import type { BenchClient, Operation, Protocol } from "../clients/types.ts"
import { make as makeHttp } from "../http/clients.ts"
import { drive } from "../stats.ts"

/** `ours` is this project's `McpClient`; `raw`, `sdk` (1.x), `sdk2` (2.x) as in `bench/clients/`. */
export type SweepClient = "raw" | "ours" | "sdk" | "sdk2"

/** Cells measured with one client against one server sending `progress` notifications per call. */
export interface Group {
  readonly progress: number
  /** The server's endpoint (HTTP only). */
  readonly url?: string | undefined
  readonly concurrencies: ReadonlyArray<number>
  /** Calls measured per concurrency (after a warm-up of `warmup` calls at that concurrency). */
  readonly total: number
  readonly warmup: number
}

export interface Job {
  readonly client: SweepClient
  readonly transport: "stdio" | "http"
  readonly protocol: Protocol
  readonly groups: ReadonlyArray<Group>
}

export interface Cell {
  readonly progress: number
  readonly concurrency: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  /** CPU microseconds of this client process per measured call. */
  readonly cpuUs: number
  /** `notifications/progress` the client saw per measured call. */
  readonly progressPerCall: number
}

const open = async (job: Job, group: Group): Promise<BenchClient> => {
  const options = { protocol: job.protocol }
  if (job.transport === "http") {
    if (group.url === undefined) throw new Error("an HTTP job needs a url")
    return makeHttp(job.client === "ours" ? "ours-mcp" : job.client, { kind: "http", url: group.url }, options)
  }
  const responder = new URL("../raw-responder.ts", import.meta.url).pathname
  const args = [responder, "--progress", String(group.progress), ...(job.protocol === "2026-07-28" ? ["--stateless"] : [])]
  const module = await loaderFor(job.client === "ours" ? "ours-mcp" : job.client)()
  return module.make(process.execPath, args, options)
}

const job = JSON.parse(process.argv[2]!) as Job
for (const group of job.groups) {
  const client = await open(job, group)
  const op: Operation = group.progress > 0 ? "callToolWithProgress" : "callTool"
  const call = client[op]
  if (call === undefined || (group.progress > 0 && client.progressReceived === undefined)) {
    throw new Error(`${job.client} cannot call with a progress token`)
  }
  const run = (n: number, concurrency: number) =>
    client.drive !== undefined ? client.drive(op, n, concurrency) : drive(call, n, concurrency)
  const received = () => client.progressReceived?.() ?? 0
  // Hot code compiled before the first cell, as in a long-running client: a cell's own warm-up
  // is too short for that, and the first cell (c1) measured V8 compiling instead.
  await run(group.warmup * 4, Math.max(...group.concurrencies))
  for (const concurrency of group.concurrencies) {
    await run(group.warmup, concurrency)
    const before = received()
    const cpu0 = process.cpuUsage()
    const measured = await run(group.total, concurrency)
    const cpu = process.cpuUsage(cpu0)
    const cell: Cell = {
      progress: group.progress,
      concurrency,
      ...measured,
      cpuUs: (cpu.user + cpu.system) / group.total,
      progressPerCall: (received() - before) / group.total
    }
    process.stdout.write(JSON.stringify(cell) + "\n")
  }
  await client.close()
}
process.exit(0)
