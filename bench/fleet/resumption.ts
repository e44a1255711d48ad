/**
 * Resumption after a crash: three instances on one Redis, a handshake-era
 * session whose GET stream is held by one of them while notifications flow
 * (a stateless `publish {seq}` every `periodMs` through the live
 * instances in turn, each a `notifyAll` that reaches the session). The
 * instance holding the stream is killed (SIGKILL); the client at once
 * resumes the GET with `Last-Event-ID` through the next live instance.
 * Measured: from the kill to the first event received through the other
 * instance, and the notifications lost or received twice across the cut.
 *
 *   node bench/fleet/resumption.ts '{"trials":5,"periodMs":20,"before":10,"after":10}'
 *
 * Needs sessions and streams held anywhere (the session known to every
 * instance, its GET stream followed across instances). Where the fleet
 * does not provide them, the measurement stops at the first step that
 * fails and says which (`available: false`, `reason`). The killed instance
 * is started again before the next trial. Prints one JSON line (`Measured`).
 */
import { Agent } from "node:http"
import { type Instance, startInstance, startInstances } from "./instances.ts"
import { monotonicMs, PREFIX } from "./protocol.ts"
import { type RunningRedis, startRedis } from "./redis.ts"
import { closeSession, openGetStream, openSession, type Session, type SseEvent, statelessCall } from "./wire.ts"

export interface Job {
  readonly trials: number
  readonly periodMs: number
  /** Notifications received before the kill. */
  readonly before: number
  /** Notifications received after the resumption before the trial ends. */
  readonly after: number
}

export interface Trial {
  /** From the SIGKILL to the first event received through another instance, ms. */
  readonly resumeMs: number
  readonly lost: number
  readonly duplicated: number
}

export type Measured =
  | { readonly available: true; readonly trials: ReadonlyArray<Trial> }
  | { readonly available: false; readonly reason: string }

const job = JSON.parse(process.argv[2] ?? "{}") as Job
const BOUND_MS = 30_000

class Unavailable extends Error {}

/** Waits for `condition`, checked on every event; fails with `reason` after `BOUND_MS`. */
const waiter = () => {
  let check: () => void = () => {}
  return {
    poke: () => check(),
    until: (condition: () => boolean, reason: string) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Unavailable(reason)), BOUND_MS)
        check = () => {
          if (!condition()) return
          clearTimeout(timer)
          check = () => {}
          resolve()
        }
        check()
      })
  }
}

const seqOf = (event: SseEvent): number | undefined => {
  if (event.data === "") return undefined
  const message = JSON.parse(event.data) as { method?: string; params?: { uri?: string } }
  const match = message.method === "notifications/resources/updated" ? /^bench:\/\/(\d+)\//.exec(message.params?.uri ?? "") : null
  return match === null ? undefined : Number(match[1])
}

const trial = async (instances: Array<Instance>, agent: Agent, t: number): Promise<Trial> => {
  const n = instances.length
  const holder = instances[t % n]!
  const others = instances.filter((i) => i !== holder)
  // Opened through one instance, acknowledged through another: a session any instance knows.
  let session: Session
  try {
    session = await openSession(others[0]!.url, agent, others[1]!.url)
  } catch (error) {
    throw new Unavailable(`a session opened on one instance is not known to another: ${String(error)}`)
  }
  const received: Array<{ seq: number; at: number; via: string }> = []
  let lastEventId: string | undefined
  const wake = waiter()
  const onEvent = (via: string) => (event: SseEvent) => {
    if (event.id !== undefined) lastEventId = event.id
    const seq = seqOf(event)
    if (seq !== undefined) received.push({ seq, at: event.at, via })
    wake.poke()
  }
  const first = openGetStream(holder.url, session, undefined, onEvent(holder.name))
  if ((await first.status) !== 200) throw new Unavailable(`GET stream on ${holder.name} answered ${await first.status}`)

  let killed = false
  let seq = 0
  let producing = true
  let turn = 0
  const producer = (async () => {
    while (producing) {
      const live = instances.filter((i) => i !== holder || !killed)
      const target = live[turn++ % live.length]!
      const started = monotonicMs()
      await statelessCall(target.url, agent, "publish", { seq: ++seq }).catch(() => undefined)
      const left = job.periodMs - (monotonicMs() - started)
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left))
    }
  })()
  let resumed: ReturnType<typeof openGetStream> | undefined
  try {
    await wake.until(() => received.length >= job.before, `fewer than ${job.before} notifications on the GET stream of ${holder.name}`)
    const countBefore = received.length
    killed = true
    const killedAt = monotonicMs()
    await holder.kill()
    await first.ended
    const next = others[t % others.length]!
    resumed = openGetStream(next.url, session, lastEventId, onEvent(next.name))
    const status = await resumed.status
    if (status !== 200) throw new Unavailable(`GET with Last-Event-ID on ${next.name} after the kill answered ${status}`)
    await wake.until(
      () => received.length >= countBefore + job.after,
      `fewer than ${job.after} notifications through ${next.name} after the kill`
    )
    const firstAfter = received[countBefore]!
    const seqs = received.map((r) => r.seq)
    const distinct = new Set(seqs)
    const highest = Math.max(...seqs)
    const lowest = Math.min(...seqs)
    return {
      resumeMs: firstAfter.at - killedAt,
      lost: highest - lowest + 1 - distinct.size,
      duplicated: seqs.length - distinct.size
    }
  } finally {
    producing = false
    await producer
    first.close()
    resumed?.close()
    await closeSession(others[1]!.url, agent, session).catch(() => undefined)
  }
}

let redis: RunningRedis | undefined
let instances: Array<Instance> = []
let measured: Measured
try {
  redis = await startRedis()
  instances = await startInstances(3, { store: "redis", redis: redis.url, prefix: PREFIX })
  const agent = new Agent({ keepAlive: true, maxSockets: 8 })
  const trials: Array<Trial> = []
  try {
    for (let t = 0; t < job.trials; t++) {
      trials.push(await trial(instances, agent, t))
      const dead = t % instances.length
      instances[dead] = await startInstance({ store: "redis", redis: redis.url, prefix: PREFIX, name: instances[dead]!.name })
    }
    measured = { available: true, trials }
  } catch (error) {
    if (!(error instanceof Unavailable)) throw error
    measured = { available: false, reason: error.message }
  } finally {
    agent.destroy()
  }
} finally {
  await Promise.all(instances.map((i) => i.stop()))
  await redis?.stop()
}
process.stdout.write(`${JSON.stringify(measured)}\n`)
