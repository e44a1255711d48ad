/**
 * What the Redis store adds to one instance against the in-memory default,
 * same workloads, both stores in one process run (one instance each, one
 * after the other, the Redis one on a fresh `redis-server`; `first` says
 * which goes first):
 *
 *   node bench/fleet/store-cost.ts '{"concurrency":4,"waitMs":20,"calls":400,"events":50,"gapMs":1,"streams":20}'
 *
 * - per request, stateless era: `tools/call wait {waitMs}` at `concurrency`
 * - per request, handshake era: the same call in a session (one session per
 *   worker), answered as JSON
 * - per event, handshake era: `tools/call progress` sending `events`
 *   progress notifications `gapMs` apart on its POST stream (SSE: each event
 *   goes through the event log, then to the client); latency from the
 *   server's clock at the send (in the event) to the client's at its
 *   arrival; `streams` calls, `concurrency` at a time
 * For each: latency p50/p99 and the instance's CPU (`process.cpuUsage()`,
 * read inside it before and after) per request or per event. Prints one
 * JSON line (`Measured`).
 */
import { Agent } from "node:http"
import { percentile } from "../stats.ts"
import { drive } from "../stats.ts"
import { type Instance, startInstance } from "./instances.ts"
import { monotonicMs, PREFIX } from "./protocol.ts"
import { type RunningRedis, startRedis } from "./redis.ts"
import { openSession, resultOf, type Session, sessionCall, statelessCall } from "./wire.ts"

export interface Job {
  readonly concurrency: number
  readonly waitMs: number
  readonly calls: number
  readonly events: number
  readonly gapMs: number
  readonly streams: number
  /** Which store is measured first (alternate from run to run). */
  readonly first?: Store | undefined
}

export type Store = "memory" | "redis"
export type Kind = "stateless request" | "session request" | "session event"

export interface Cell {
  readonly store: Store
  readonly kind: Kind
  readonly p50: number
  readonly p99: number
  /** The instance's CPU per request or per event, µs. */
  readonly serverCpuUs: number
  /** Requests or events measured. */
  readonly n: number
}

export interface Measured {
  readonly cells: ReadonlyArray<Cell>
}

const job = JSON.parse(process.argv[2] ?? "{}") as Job

const measure = async (instance: Instance, n: number, body: () => Promise<{ p50: number; p99: number }>) => {
  const cpu0 = await instance.cpuUs()
  const latency = await body()
  const cpu1 = await instance.cpuUs()
  return { ...latency, serverCpuUs: (cpu1 - cpu0) / n, n }
}

const cellsFor = async (store: Store, redis: RunningRedis | undefined): Promise<Array<Cell>> => {
  const instance = await startInstance({ store, redis: redis?.url, prefix: PREFIX, name: store })
  const agent = new Agent({ keepAlive: true, maxSockets: job.concurrency * 2 })
  try {
    const url = instance.url
    const stateless = async () => {
      const answer = await statelessCall(url, agent, "wait", { ms: job.waitMs })
      if (answer.refused) throw new Error("refused: no free slot")
    }
    const sessions: Array<Session> = []
    for (let i = 0; i < job.concurrency; i++) sessions.push(await openSession(url, agent))
    const free = [...sessions]
    const inSession = async <A>(f: (session: Session) => Promise<A>): Promise<A> => {
      const session = free.pop()!
      try {
        return await f(session)
      } finally {
        free.push(session)
      }
    }
    const sessionRequest = () =>
      inSession(async (session) => {
        resultOf(await sessionCall(url, agent, session, "tools/call", { name: "wait", arguments: { ms: job.waitMs } }))
      })
    const latencies: Array<number> = []
    const progressCall = () =>
      inSession(async (session) => {
        const answer = await sessionCall(url, agent, session, "tools/call", {
          name: "progress",
          arguments: { n: job.events, gapMs: job.gapMs }
        }, true)
        resultOf(answer)
        let seen = 0
        for (const event of answer.events) {
          const message = event.data === "" ? undefined : JSON.parse(event.data)
          if (message?.method !== "notifications/progress") continue
          latencies.push(event.at - Number(message.params.message))
          seen++
        }
        if (seen !== job.events) throw new Error(`${seen} of ${job.events} progress events arrived`)
      })

    // Warm-up of every path.
    await drive(stateless, job.concurrency * 10, job.concurrency)
    await drive(sessionRequest, job.concurrency * 10, job.concurrency)
    await drive(progressCall, job.concurrency, job.concurrency)
    latencies.length = 0

    const cells: Array<Cell> = []
    cells.push({ store, kind: "stateless request", ...await measure(instance, job.calls, () => drive(stateless, job.calls, job.concurrency)) })
    cells.push({ store, kind: "session request", ...await measure(instance, job.calls, () => drive(sessionRequest, job.calls, job.concurrency)) })
    const events = await measure(instance, job.streams * job.events, async () => {
      await drive(progressCall, job.streams, job.concurrency)
      const sorted = latencies.sort((a, b) => a - b)
      return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) }
    })
    cells.push({ store, kind: "session event", ...events })
    return cells
  } finally {
    agent.destroy()
    await instance.stop()
  }
}

const started = monotonicMs()
const cells: Array<Cell> = []
const redis = await startRedis()
try {
  for (const store of job.first === "redis" ? ["redis", "memory"] as const : ["memory", "redis"] as const) {
    cells.push(...await cellsFor(store, store === "redis" ? redis : undefined))
  }
} finally {
  await redis.stop()
}
process.stderr.write(`store-cost: ${((monotonicMs() - started) / 1000).toFixed(1)} s\n`)
process.stdout.write(`${JSON.stringify({ cells } satisfies Measured)}\n`)
