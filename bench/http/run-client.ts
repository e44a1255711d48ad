/**
 * One client measurement in a fresh process:
 * `node bench/http/run-client.ts '<json Job>'` prints one JSON line (`Result`).
 * The workloads run many of these, one at a time.
 */
import { drive, measureAndExit, type RunResult } from "../stats.ts"
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
await measureAndExit(run, () => client.close(), job)
