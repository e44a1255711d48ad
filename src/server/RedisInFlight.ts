/**
 * The in-flight registry on Redis, and the reaper that answers the requests
 * of instances that died.
 *
 * Keys (hashes, each expiring `ttl` after its last write):
 * - `<prefix>running:<instanceId>`: field `[session, requestId]` (JSON),
 *   value `[token, streamId]` (JSON): what the instance serves, under which
 *   lease.
 * - `<prefix>run:{<session>}`: field = the request id (JSON), value
 *   `<instanceId> <streamId>`: who serves a session's request (a cancel
 *   made anywhere is routed with it).
 *
 * Both writes of a request (one when it starts, one when it ends) are a
 * single script each, fenced: refused unless the instance's lease key holds
 * the token the instance has now.
 *
 * The reaper runs on every instance, every `leaseMs / 2` (±20 %, so
 * instances do not scan in step). For each member of `<prefix>instances`
 * whose lease key is gone, it claims the instance once (`<prefix>reap:<id>`,
 * taken only while the lease key is still absent, expiring on its own),
 * appends to the stream of each request the instance was serving a
 * JSON-RPC error (`InFlight.stoppedResponse`) through the `EventStore`
 * (so the append is fenced by the reaper's own lease) and marks the
 * stream finished (`Tail.finish`: a client following it on any instance
 * is done), then deletes the
 * entries, the member and the claim. An instance that took a new lease after
 * losing one reaps its own entries of the older lease the same way.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redis from "effect/persistence/Redis"
import type * as Scope from "effect/Scope"
import type * as JsonRpc from "../JsonRpc.ts"
import { EventStore } from "./EventStore.ts"
import { type Entry, InFlight, type InFlightShape, stoppedResponse } from "./InFlight.ts"
import { InstanceLease, LeaseLost } from "./InstanceLease.ts"
import { instancesKey, leaseKey, runningKey } from "./RedisInstanceLease.ts"

/**
 * Naming and timing of the registry.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Put before every key; one prefix per fleet. Default `"mcp:"`. */
  readonly prefix?: string | undefined
  /** The fleet's lease time, which paces the reaper. Default 5000. */
  readonly leaseMs?: number | undefined
  /** How long an entry outlives its last write if nothing removes it. Default 1 hour. */
  readonly ttlMs?: number | undefined
}

const defaults = { prefix: "mcp:", leaseMs: 5000, ttlMs: 60 * 60 * 1000 } as const

/**
 * The key of a session's running requests (request id → `<instanceId> <streamId>`).
 *
 * @since 0.1.0
 * @category utils
 */
export const sessionRunKey = (prefix: string, session: string): string => `${prefix}run:{${session}}`

// KEYS: lease, running, then one run:{session} per entry.
// ARGV: token, ttlMs, then per entry: running field, running value, run field, run value.
const addScript = Redis.script(
  (keys: ReadonlyArray<string>, args: ReadonlyArray<string>) => [...keys, ...args],
  {
    numberOfKeys: (keys) => keys.length,
    lua: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
for i = 3, #KEYS do
  local b = 2 + (i - 3) * 4
  redis.call('HSET', KEYS[2], ARGV[b + 1], ARGV[b + 2])
  redis.call('HSET', KEYS[i], ARGV[b + 3], ARGV[b + 4])
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
`
  }
).withReturnType<number>()

// KEYS as addScript; ARGV: token, then per entry: running field, run field, run value (removed only if still ours).
const removeScript = Redis.script(
  (keys: ReadonlyArray<string>, args: ReadonlyArray<string>) => [...keys, ...args],
  {
    numberOfKeys: (keys) => keys.length,
    lua: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
for i = 3, #KEYS do
  local b = 1 + (i - 3) * 3
  redis.call('HDEL', KEYS[2], ARGV[b + 1])
  if redis.call('HGET', KEYS[i], ARGV[b + 2]) == ARGV[b + 3] then redis.call('HDEL', KEYS[i], ARGV[b + 2]) end
end
return 1
`
  }
).withReturnType<number>()

// The claim on a dead instance: taken only while its lease key is absent. KEYS: lease, claim. ARGV: claimer, ms.
const claimDeadScript = Redis.script(
  (lease: string, claim: string, claimer: string, ms: number) => [lease, claim, claimer, ms],
  {
    numberOfKeys: 2,
    lua: `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`
  }
).withReturnType<number>()

// KEYS: running, instances, claim, lease, then one run:{session} per entry.
// ARGV: instance id, claimer, then per entry: running field, run field, run value.
const finishScript = Redis.script(
  (keys: ReadonlyArray<string>, args: ReadonlyArray<string>) => [...keys, ...args],
  {
    numberOfKeys: (keys) => keys.length,
    lua: `
for i = 5, #KEYS do
  local b = 2 + (i - 5) * 3
  redis.call('HDEL', KEYS[1], ARGV[b + 1])
  if redis.call('HGET', KEYS[i], ARGV[b + 2]) == ARGV[b + 3] then redis.call('HDEL', KEYS[i], ARGV[b + 2]) end
end
if redis.call('EXISTS', KEYS[4]) == 0 and redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[1])
end
if redis.call('GET', KEYS[3]) == ARGV[2] then redis.call('DEL', KEYS[3]) end
return 1
`
  }
).withReturnType<number>()

interface Recorded {
  readonly field: string
  readonly session: string
  readonly requestId: JsonRpc.RequestId
  readonly token: number
  readonly streamId: string
}

const parseEntry = (field: string, value: string): Recorded | undefined => {
  try {
    const [session, requestId] = JSON.parse(field) as [unknown, unknown]
    const [token, streamId] = JSON.parse(value) as [unknown, unknown]
    if (typeof session !== "string" || typeof streamId !== "string" || typeof token !== "number") return undefined
    if (typeof requestId !== "string" && typeof requestId !== "number") return undefined
    return { field, session, requestId, token, streamId }
  } catch {
    return undefined
  }
}

/**
 * The registry and its reaper (a fiber of the scope), on the `Redis`,
 * `InstanceLease` and `EventStore` services in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options?: Options
): Effect.Effect<InFlightShape, never, Redis.Redis | InstanceLease | EventStore | Scope.Scope> =>
  Effect.gen(function*() {
    const redis = yield* Redis.Redis
    const lease = yield* InstanceLease
    const store = yield* EventStore
    const prefix = options?.prefix ?? defaults.prefix
    const leaseMs = Math.max(300, options?.leaseMs ?? defaults.leaseMs)
    const ttlMs = Math.max(1000, options?.ttlMs ?? defaults.ttlMs)
    const leaseKeyOf = (id: string) => leaseKey(prefix, id)
    const running = runningKey(prefix, lease.id)
    const add = redis.eval(addScript)
    const remove = redis.eval(removeScript)
    const claimDead = redis.eval(claimDeadScript)
    const finish = redis.eval(finishScript)
    const refused = () => new LeaseLost({ instanceId: lease.id })

    const fieldOf = (e: Entry) => JSON.stringify([e.session, e.requestId])
    const runValue = (e: Entry) => `${lease.id} ${e.streamId}`

    const record = (entries: ReadonlyArray<Entry>, token: number) =>
      add(
        [lease.key ?? leaseKeyOf(lease.id), running, ...entries.map((e) => sessionRunKey(prefix, e.session))],
        [
          String(token),
          String(ttlMs),
          ...entries.flatMap((e) => [fieldOf(e), JSON.stringify([token, e.streamId]), JSON.stringify(e.requestId), runValue(e)])
        ]
      ).pipe(
        Effect.orDie,
        Effect.flatMap((ok) => Number(ok) === 1 ? Effect.void : Effect.fail(refused()))
      )

    const forget = (entries: ReadonlyArray<Entry>, token: number) =>
      remove(
        [lease.key ?? leaseKeyOf(lease.id), running, ...entries.map((e) => sessionRunKey(prefix, e.session))],
        [String(token), ...entries.flatMap((e) => [fieldOf(e), JSON.stringify(e.requestId), runValue(e)])]
      ).pipe(
        Effect.flatMap((ok) =>
          Number(ok) === 1
            ? Effect.void
            : Effect.logDebug(`Instance ${lease.id}: running requests not removed (the lease is lost); a reaper answers them`)
        ),
        Effect.catchCause((cause) => Effect.logDebug("In-flight registry: removing running requests failed", cause))
      )

    const runRecordingLater: NonNullable<InFlightShape["runRecordingLater"]> = (entries, work) =>
      lease.run(Effect.suspend(() => {
        if (entries.length === 0) return work(Effect.void)
        // The first `record`'s outcome, which later calls and the work's end wait for.
        let recording: Deferred.Deferred<void, LeaseLost> | undefined
        // The token the entries were recorded under, once they were.
        let recordedUnder: number | undefined
        // Once the work is over (a fiber it left behind may still ask), there is nothing to record.
        let ended = false
        const recordOnce = Effect.suspend(() => {
          if (recording !== undefined) return Deferred.await(recording)
          if (ended) return Effect.void
          const done = recording = Deferred.makeUnsafe<void, LeaseLost>()
          const token = lease.token()
          const made: Effect.Effect<void, LeaseLost> = token === undefined
            ? Effect.fail(refused())
            : Effect.map(record(entries, token), () => {
              recordedUnder = token
            })
          // Not cut short once sent: its removal at the work's end must know whether it was made.
          return Effect.uninterruptible(Effect.onExit(made, (exit) => Deferred.done(done, exit)))
        })
        return Effect.ensuring(
          work(recordOnce),
          Effect.suspend(() => {
            ended = true
            return recording === undefined
              ? Effect.void
              : Effect.andThen(Effect.exit(Deferred.await(recording)), () =>
                recordedUnder === undefined ? Effect.void : forget(entries, recordedUnder))
          })
        )
      }))

    const registry: InFlightShape = {
      // Recorded before the work starts: refused, the work never runs.
      run: (entries, work) => runRecordingLater(entries, (record) => Effect.andThen(record, work)),
      runRecordingLater
    }

    /** Answers each request in `entries` with the stopped error, then forgets them (and the instance, once it has no lease). */
    const reap = (id: string, claimer: string, entries: ReadonlyArray<Recorded>) =>
      Effect.gen(function*() {
        for (const e of entries) {
          // A stream that was never written to has no reader to tell (the client got no event id from it).
          const exists = yield* store.streamOf(`${e.streamId}_0-0`)
          if (Option.isNone(exists)) continue
          yield* store.append(e.streamId, JSON.stringify(stoppedResponse(e.requestId)))
          // The error is the stream's last event: a client following it on any instance is done.
          if (store.tail !== undefined) yield* store.tail.finish(e.streamId)
        }
        yield* finish(
          [
            runningKey(prefix, id),
            instancesKey(prefix),
            `${prefix}reap:${id}`,
            leaseKeyOf(id),
            ...entries.map((e) => sessionRunKey(prefix, e.session))
          ],
          [id, claimer, ...entries.flatMap((e) => [e.field, JSON.stringify(e.requestId), `${id} ${e.streamId}`])]
        )
        if (entries.length > 0) {
          yield* Effect.logInfo(`Answered ${entries.length} request(s) of instance ${id}, which stopped`)
        }
      })

    const entriesOf = (id: string) =>
      Effect.map(redis.send<ReadonlyArray<string> | Record<string, string>>("HGETALL", runningKey(prefix, id)), (raw) => {
        const pairs: Array<[string, string]> = Array.isArray(raw)
          ? Array.from({ length: raw.length / 2 }, (_, i) => [raw[2 * i], raw[2 * i + 1]] as [string, string])
          : Object.entries(raw as Record<string, string>)
        return pairs.flatMap(([f, v]) => {
          const parsed = parseEntry(f, v)
          return parsed === undefined ? [] : [parsed]
        })
      })

    const claimer = `${lease.id}:${Math.random().toString(36).slice(2)}`
    const claimMs = String(leaseMs * 4)
    // The token whose older entries this instance has reaped already.
    let ownReapedFor: number | undefined

    const pass = Effect.gen(function*() {
      const token = lease.token()
      if (token === undefined) return
      const ids = yield* redis.send<ReadonlyArray<string>>("ZRANGE", instancesKey(prefix), "0", "-1")
      for (const id of ids) {
        if (id === lease.id) continue
        if (Number(yield* redis.send<number>("EXISTS", leaseKeyOf(id))) === 1) continue
        if (Number(yield* claimDead(leaseKeyOf(id), `${prefix}reap:${id}`, claimer, Number(claimMs))) !== 1) continue
        yield* reap(id, claimer, yield* entriesOf(id))
      }
      if (ownReapedFor !== token) {
        const claimed = yield* redis.send<string | null>("SET", `${prefix}reap:${lease.id}`, claimer, "NX", "PX", claimMs)
        if (claimed !== null) {
          yield* reap(lease.id, claimer, (yield* entriesOf(lease.id)).filter((e) => e.token < token))
          ownReapedFor = token
        }
      }
    }).pipe(
      Effect.catchCause((cause) => Effect.logDebug("Reaper pass failed; trying again", cause))
    )

    const interval = () => Math.floor((leaseMs / 2) * (0.8 + Math.random() * 0.4))
    // A pass is not cut short by the instance stopping: its claim would stay behind until it expired, and
    // the stopped instance's streams half answered. Every command it sends is bounded by the client's timeout.
    yield* Effect.forever(Effect.andThen(Effect.suspend(() => Effect.sleep(interval())), Effect.uninterruptible(pass))).pipe(
      Effect.forkScoped
    )

    return registry
  })

/**
 * The Redis registry and its reaper as the `InFlight` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<InFlight, never, Redis.Redis | InstanceLease | EventStore> =>
  Layer.effect(InFlight)(make(options))
