/**
 * One client measurement in a fresh process:
 * `node bench/http/run-client.ts '<json Job>'` prints one JSON line (`Result`).
 * The workloads run many of these, one at a time.
 */
import { drive, type RunResult } from "../stats.ts"
import { type ClientName, make, type Target } from "./clients.ts"

export interface Job {
  readonly client: ClientName
  readonly target: Target
  readonly op: "callTool" | "ping"
  readonly concurrency: number
  readonly total: number
  readonly warmup: number
}

export interface Result extends RunResult {
  /** CPU microseconds of this client process per measured request. */
  readonly cpuUs: number
  /** Mean milliseconds per call over the measured run. */
  readonly msPerCall: number
  /** Peak RSS of this client process, bytes. */
  readonly peakRss: number
}

const job = JSON.parse(process.argv[2]!) as Job
const client = await make(job.client, job.target)
const run = (n: number) =>
  client.drive !== undefined ? client.drive(job.op, n, job.concurrency) : drive(client[job.op], n, job.concurrency)
if (job.warmup > 0) await run(job.warmup)
const cpu0 = process.cpuUsage()
const t0 = performance.now()
const measured = await run(job.total)
const elapsed = performance.now() - t0
const cpu = process.cpuUsage(cpu0)
await client.close()
const result: Result = {
  ...measured,
  cpuUs: (cpu.user + cpu.system) / job.total,
  msPerCall: elapsed / job.total,
  peakRss: process.resourceUsage().maxRSS * 1024
}
process.stdout.write(JSON.stringify(result) + "\n")
process.exit(0)
