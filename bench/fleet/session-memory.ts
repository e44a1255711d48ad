/**
 * Redis memory per handshake-era session: one instance on a fresh
 * `redis-server`, `used_memory` (`INFO memory`) before and after opening
 * `sessions` sessions, each with one resumable stream event (a `tools/call
 * progress {n: 1}` answered over SSE: its POST stream's events go to the
 * event log).
 *
 *   node bench/fleet/session-memory.ts '{"sessions":10000,"concurrency":16,"sample":200}'
 *
 * Whatever the fleet layer keeps per session is counted: the event log
 * today, and a session record as soon as `RedisFleet.layer` provides one.
 * The keys are also grouped by kind (the session id and stream ids replaced
 * by `*`), with their count per session and their `MEMORY USAGE` (averaged
 * over up to `sample` keys of each kind), so a new kind of key shows up by
 * itself. Prints one JSON line (`Measured`).
 */
import { Agent } from "node:http"
import { drive } from "../stats.ts"
import { startInstance } from "./instances.ts"
import { PREFIX } from "./protocol.ts"
import { startRedis } from "./redis.ts"
import { openSession, resultOf, sessionCall } from "./wire.ts"

export interface Job {
  readonly sessions: number
  readonly concurrency: number
  readonly sample: number
}

export interface KeyKind {
  readonly pattern: string
  readonly perSession: number
  readonly bytesPerKey: number
}

export interface Measured {
  readonly sessions: number
  readonly bytesPerSession: number
  readonly eventsPerSession: number
  readonly keysPerSession: number
  readonly kinds: ReadonlyArray<KeyKind>
}

const job = JSON.parse(process.argv[2] ?? "{}") as Job

/** A key with its ids replaced by `*`: the text between braces (the session), and what follows a stream's `:`. */
const kindOf = (key: string, sessions: ReadonlySet<string>): string => {
  let pattern = key.replace(/\{[^}]*\}/g, "{*}")
  for (const part of pattern.split(/[:~_]/)) if (sessions.has(part)) pattern = pattern.replace(part, "*")
  return pattern.replace(/(\{\*\}:)[^:]+$/, "$1*")
}

const redis = await startRedis()
try {
  const instance = await startInstance({
    store: "redis",
    redis: redis.url,
    prefix: PREFIX,
    name: "A",
    maxSessions: job.sessions * 2
  })
  const agent = new Agent({ keepAlive: true, maxSockets: job.concurrency })
  try {
    const ids = new Set<string>()
    const oneSession = async () => {
      const session = await openSession(instance.url, agent)
      ids.add(session.id)
      resultOf(await sessionCall(instance.url, agent, session, "tools/call", { name: "progress", arguments: { n: 1 } }, true))
    }
    // The server's first sessions load code and fill pools; their memory is not the sessions'.
    await drive(oneSession, job.concurrency, job.concurrency)
    const before = Number((await redis.info("memory")).used_memory)
    const keysBefore = new Set(await redis.keys(PREFIX))
    ids.clear()
    await drive(oneSession, job.sessions, job.concurrency)
    const after = Number((await redis.info("memory")).used_memory)
    const added = (await redis.keys(PREFIX)).filter((key) => !keysBefore.has(key))

    const byKind = new Map<string, Array<string>>()
    for (const key of added) {
      const kind = kindOf(key, ids)
      const list = byKind.get(kind) ?? []
      list.push(key)
      byKind.set(kind, list)
    }
    const kinds: Array<KeyKind> = []
    let events = 0
    for (const [pattern, keys] of byKind) {
      const sample = keys.slice(0, job.sample)
      let bytes = 0
      for (const key of sample) {
        bytes += Number(await redis.command(["MEMORY", "USAGE", key, "SAMPLES", "0"]))
        if (String(await redis.command(["TYPE", key])) === "stream") events += Number(await redis.command(["XLEN", key])) * (keys.length / sample.length)
      }
      kinds.push({ pattern, perSession: keys.length / job.sessions, bytesPerKey: bytes / sample.length })
    }
    const measured: Measured = {
      sessions: job.sessions,
      bytesPerSession: (after - before) / job.sessions,
      eventsPerSession: events / job.sessions,
      keysPerSession: added.length / job.sessions,
      kinds
    }
    process.stdout.write(`${JSON.stringify(measured)}\n`)
  } finally {
    agent.destroy()
    await instance.stop()
  }
} finally {
  await redis.stop()
}
