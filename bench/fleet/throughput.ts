/**
 * Throughput of one instance against three, stateless era, in one process
 * run (both fleets on the same Redis, measured one after the other):
 *
 *   node bench/fleet/throughput.ts '{"slots":4,"waitMs":20,"total":2000,"warmup":200,"sizes":[1,3]}'
 *
 * Every instance (bench/fleet/server.ts on `RedisFleet.layer`) has
 * `maxStreams: slots`, and the tool waits `waitMs`: an instance is bound by
 * its slots, not its CPU. The driver is a round-robin balancer holding at
 * most `slots` calls on each instance (as a balancer's per-backend
 * connection limit would), spread over `slots` processes (driver.ts) so
 * that the driver's own CPU is not what binds on a busy machine: each
 * process has one worker per instance and at most one call on each. A call
 * refused for want of a slot (503: a slot is freed just after its answer)
 * is sent again to the next instance and counted. Prints one JSON line
 * (`Measured`): per fleet size, req/s (from the start of the drivers' runs
 * to the last answer), latency p50/p99 and the instances' CPU per call.
 */
import { type ChildProcess, fork } from "node:child_process"
import { percentile } from "../stats.ts"
import type { Command, Reply, Setup } from "./driver.ts"
import { startInstances } from "./instances.ts"
import { PREFIX } from "./protocol.ts"
import { startRedis } from "./redis.ts"

export interface Job {
  readonly slots: number
  readonly waitMs: number
  readonly total: number
  readonly warmup: number
  readonly sizes: ReadonlyArray<number>
}

export interface Cell {
  readonly instances: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly serverCpuUs: number
  readonly refused: number
}

export interface Measured {
  readonly cells: ReadonlyArray<Cell>
}

const job = JSON.parse(process.argv[2] ?? "{}") as Job

const DRIVER = new URL("./driver.ts", import.meta.url).pathname

interface Driver {
  readonly ask: (command: Command) => Promise<Reply>
  readonly stop: () => Promise<void>
}

const startDriver = (setup: Setup): Driver => {
  const child: ChildProcess = fork(DRIVER, [JSON.stringify(setup)], { stdio: ["ignore", "inherit", "inherit", "ipc"] })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  return {
    ask: (command) =>
      new Promise((resolve, reject) => {
        child.once("message", (reply: Reply) => resolve(reply))
        child.once("exit", (code) => reject(new Error(`driver exited with ${code}`)))
        child.send(command)
      }),
    stop: async () => {
      if (child.connected) child.disconnect()
      await exited
    }
  }
}

const redis = await startRedis()
const cells: Array<Cell> = []
try {
  for (const size of job.sizes) {
    const instances = await startInstances(size, { store: "redis", redis: redis.url, prefix: PREFIX, maxStreams: job.slots })
    const drivers = Array.from({ length: job.slots }, () => startDriver({ urls: instances.map((i) => i.url), waitMs: job.waitMs }))
    try {
      const share = (calls: number) => Math.ceil(calls / job.slots)
      await Promise.all(drivers.map((d) => d.ask({ op: "warm", calls: share(job.warmup) })))
      const cpu0 = await Promise.all(instances.map((i) => i.cpuUs()))
      const t0 = performance.now()
      const replies = await Promise.all(drivers.map((d) => d.ask({ op: "run", calls: share(job.total) })))
      const elapsed = performance.now() - t0
      const cpu1 = await Promise.all(instances.map((i) => i.cpuUs()))
      const latencies = replies.flatMap((r) => ("latencies" in r ? r.latencies : [])).sort((a, b) => a - b)
      const cpu = cpu1.reduce((sum, c, i) => sum + c - cpu0[i]!, 0)
      cells.push({
        instances: size,
        rps: (latencies.length / elapsed) * 1000,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        serverCpuUs: cpu / latencies.length,
        refused: replies.reduce((sum, r) => sum + ("refused" in r ? r.refused : 0), 0)
      })
    } finally {
      await Promise.all(drivers.map((d) => d.stop()))
      await Promise.all(instances.map((i) => i.stop()))
    }
  }
} finally {
  await redis.stop()
}
process.stdout.write(`${JSON.stringify({ cells } satisfies Measured)}\n`)
