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
 * connection limit would): `slots × instances` workers, each call to the
 * next instance in turn that has a free slot. A call refused for want of a
 * slot (503: the slot of the call before is freed just after its answer) is
 * sent again to the next instance and counted. Prints one JSON line
 * (`Measured`): per fleet size, req/s, latency p50/p99 and the instances'
 * CPU per call.
 */
import { Agent } from "node:http"
import { drive } from "../stats.ts"
import { type Instance, startInstances } from "./instances.ts"
import { startRedis } from "./redis.ts"
import { PREFIX } from "./protocol.ts"
import { statelessCall } from "./wire.ts"

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

/** Round-robin over the instances, at most `slots` calls on each. */
const balancer = (instances: ReadonlyArray<Instance>, slots: number, agent: Agent) => {
  const inFlight = instances.map(() => 0)
  let next = 0
  let refused = 0
  const pick = (): number => {
    for (let tried = 0; tried < instances.length; tried++) {
      const i = next++ % instances.length
      if (inFlight[i]! < slots) return i
    }
    throw new Error("no instance has a free slot: more workers than slots")
  }
  const call = async (): Promise<void> => {
    for (;;) {
      const i = pick()
      inFlight[i]!++
      try {
        const answer = await statelessCall(instances[i]!.url, agent, "wait", { ms: job.waitMs })
        if (!answer.refused) return
        refused++
      } finally {
        inFlight[i]!--
      }
    }
  }
  return { call, refused: () => refused }
}

const redis = await startRedis()
const cells: Array<Cell> = []
try {
  for (const size of job.sizes) {
    const instances = await startInstances(size, { store: "redis", redis: redis.url, prefix: PREFIX, maxStreams: job.slots })
    try {
      const agent = new Agent({ keepAlive: true, maxSockets: job.slots * size })
      const lb = balancer(instances, job.slots, agent)
      const workers = job.slots * size
      await drive(lb.call, job.warmup, workers)
      const refused0 = lb.refused()
      const cpu0 = await Promise.all(instances.map((i) => i.cpuUs()))
      const run = await drive(lb.call, job.total, workers)
      const cpu1 = await Promise.all(instances.map((i) => i.cpuUs()))
      const cpu = cpu1.reduce((sum, c, i) => sum + c - cpu0[i]!, 0)
      cells.push({ instances: size, ...run, serverCpuUs: cpu / job.total, refused: lb.refused() - refused0 })
      agent.destroy()
    } finally {
      await Promise.all(instances.map((i) => i.stop()))
    }
  }
} finally {
  await redis.stop()
}
process.stdout.write(`${JSON.stringify({ cells } satisfies Measured)}\n`)
