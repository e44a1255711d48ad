/**
 * The resumable event log in Redis, shared by every instance of a fleet:
 * one Redis Stream per logical SSE stream, so the events of a stream keep
 * one order whoever appends them, and a client that lost its connection
 * resumes (`Last-Event-ID`) from any instance that reads the same Redis.
 *
 * - Event ids are `<streamId>_<redisId>` (e.g. `ab~Xy-3_1733220000000-0`):
 *   they name their stream, and increase strictly within it.
 * - A stream holds at most `maxEventsPerStream` events (the oldest go).
 * - The streams of one HTTP session (the part of a stream id before `~`)
 *   are indexed together: past `maxStreamsPerSession` the oldest stream of
 *   the session goes whole. A session's log is therefore bounded by the
 *   product of the two.
 * - Every key expires `ttl` after its stream's last event, so the log of a
 *   session whose instance died without removing it goes with the session.
 * - A stream can be followed from any instance (`tail`): every append
 *   publishes the stream's key on `<prefix>tail`, which wakes the followers
 *   of that stream (one subscription per store, made on first use); each
 *   reads what follows its cursor with `XRANGE`, and reads again every
 *   `tailPollInterval` in case a wake-up was lost (Redis restarting).
 *
 * Keys: `<prefix>log:{<session>}:<streamId>` (a stream) and
 * `<prefix>streams:{<session>}` (a sorted set of a session's streams, by
 * last write: past the bound, the stream written least recently goes).
 *
 * Redis failures are defects here (the `EventStoreShape` has no error
 * channel): the HTTP server transport refuses requests that need the log
 * with 503 while Redis is unreachable (see `Availability`), so what fails
 * is only what was already under way when the connection dropped.
 *
 * Needs Redis 6.2 or later (exclusive ranges in `XRANGE`).
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redis from "effect/persistence/Redis"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import {
  EventStore,
  type EventStoreShape,
  type FollowFrom,
  type Replay,
  type StoredEvent,
  type Tail
} from "./EventStore.ts"
import { InstanceLease, type InstanceLeaseShape, LeaseLost, WriterToken } from "./InstanceLease.ts"
import * as Follow from "./internal/Follow.ts"
import * as Wakers from "./internal/Wakers.ts"

/**
 * Bounds and naming of the Redis event log.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Put before every key; one prefix per fleet. Default `"mcp:"`. */
  readonly prefix?: string | undefined
  /** Events kept per stream before the oldest go. Default 1000. */
  readonly maxEventsPerStream?: number | undefined
  /** Streams kept per session before its oldest goes. Default 32. */
  readonly maxStreamsPerSession?: number | undefined
  /** How long a stream is kept after its last event. Default 1 hour. */
  readonly ttl?: Duration.Input | undefined
  /** How often a follower reads again without being woken (a lost wake-up costs at most this). Default 2 seconds. */
  readonly tailPollInterval?: Duration.Input | undefined
}

/**
 * The bounds `Options` leaves out.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults = {
  prefix: "mcp:",
  maxEventsPerStream: 1000,
  maxStreamsPerSession: 32,
  ttlMs: 60 * 60 * 1000,
  tailPollMs: 2000
} as const

/** A stream id's session part: the text before `~`, or `_` for streams of no session (broadcasts). */
const sessionOf = (streamId: string): string => {
  const at = streamId.indexOf("~")
  return at > 0 ? streamId.slice(0, at) : "_"
}

const parseId = (eventId: string): { readonly streamId: string; readonly redisId: string } | undefined => {
  const at = eventId.lastIndexOf("_")
  if (at <= 0 || at === eventId.length - 1) return undefined
  const redisId = eventId.slice(at + 1)
  if (!/^\d{1,20}-\d{1,20}$/.test(redisId)) return undefined
  return { streamId: eventId.slice(0, at), redisId }
}

// Wakes the stream's followers on `<prefix>tail` (the prefix read off the key, so the script takes no more arguments).
const appendScript = Redis.script(
  (stream: string, index: string, data: string, event: string, maxLen: number, ttlMs: number, maxStreams: number) => [
    stream,
    index,
    data,
    event,
    maxLen,
    ttlMs,
    maxStreams
  ],
  {
    numberOfKeys: 2,
    lua: `
local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], '*', 'd', ARGV[1], 'e', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
local now = redis.call('TIME')
if redis.call('ZADD', KEYS[2], tonumber(now[1]) * 1000000 + tonumber(now[2]), KEYS[1]) == 1 then
  local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[5])
  if over > 0 then
    local oldest = redis.call('ZPOPMIN', KEYS[2], over)
    for i = 1, #oldest, 2 do redis.call('DEL', oldest[i]) end
  end
end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('PUBLISH', string.match(KEYS[1], '^(.-)log:{') .. 'tail', KEYS[1])
return id
`
  }
).withReturnType<string>()

// The append of an instance holding a lease: refused (false) unless the lease key holds the writer's token.
const fencedAppendScript = Redis.script(
  (
    stream: string,
    index: string,
    lease: string,
    data: string,
    event: string,
    maxLen: number,
    ttlMs: number,
    maxStreams: number,
    token: string
  ) => [stream, index, lease, data, event, maxLen, ttlMs, maxStreams, token],
  {
    numberOfKeys: 3,
    lua: `if redis.call('GET', KEYS[3]) ~= ARGV[6] then return false end` + appendScript.lua
  }
).withReturnType<string | null>()
// The end mark of a stream (field f; empty data, so replay skips it), on a stream that still exists.
const finishScript = Redis.script(
  (stream: string, maxLen: number, wakeChannel: string) => [stream, maxLen, wakeChannel],
  {
    numberOfKeys: 1,
    lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '*', 'd', '', 'f', '1')
redis.call('PUBLISH', ARGV[2], KEYS[1])
return 1
`
  }
).withReturnType<number>()

// What followed an id, or false when the stream is gone or never issued the id.
const replayScript = Redis.script(
  (stream: string, after: string) => [stream, after],
  {
    numberOfKeys: 1,
    lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if last == nil then return false end
local ams, aseq = string.match(ARGV[1], '^(%d+)-(%d+)$')
local lms, lseq = string.match(last[1], '^(%d+)-(%d+)$')
ams, aseq, lms, lseq = tonumber(ams), tonumber(aseq), tonumber(lms), tonumber(lseq)
if ams > lms or (ams == lms and aseq > lseq) then return false end
return redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+')
`
  }
).withReturnType<ReadonlyArray<readonly [string, ReadonlyArray<string>]> | null>()

/**
 * The event log on the `Redis` service in context.
 *
 * @example
 * ```ts
 * import * as NodeRedis from "@effect/platform-node/NodeRedis"
 * import * as Effect from "effect/Effect"
 * import * as Option from "effect/Option"
 * import * as RedisEventStore from "effect-mcp-transport/server/RedisEventStore"
 *
 * const program = Effect.gen(function*() {
 *   const store = yield* RedisEventStore.make({ prefix: "example:" })
 *   const first = yield* store.append("session-a~stream-1", `{"jsonrpc":"2.0","method":"notifications/progress"}`)
 *   yield* store.append("session-a~stream-1", `{"jsonrpc":"2.0","id":1,"result":{}}`)
 *   const replay = yield* store.replayAfter(first)
 *   if (Option.isSome(replay)) yield* Effect.log(`${replay.value.events.length} event(s) to replay`)
 * }).pipe(Effect.scoped, Effect.provide(NodeRedis.layer({ url: "redis://127.0.0.1:6379" })))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options?: Options): Effect.Effect<EventStoreShape, never, Redis.Redis | Scope.Scope> =>
  Effect.gen(function*() {
    const redis = yield* Redis.Redis
    const scope = yield* Effect.scope
    const prefix = options?.prefix ?? defaults.prefix
    const maxLen = Math.max(1, options?.maxEventsPerStream ?? defaults.maxEventsPerStream)
    const maxStreams = Math.max(1, options?.maxStreamsPerSession ?? defaults.maxStreamsPerSession)
    const ttlMs = options?.ttl === undefined
      ? defaults.ttlMs
      : Math.max(1, Duration.toMillis(Duration.fromInputUnsafe(options.ttl)))
    const pollMs = options?.tailPollInterval === undefined
      ? defaults.tailPollMs
      : Math.max(1, Duration.toMillis(Duration.fromInputUnsafe(options.tailPollInterval)))
    const streamKey = (streamId: string) => `${prefix}log:{${sessionOf(streamId)}}:${streamId}`
    const indexKey = (streamId: string) => `${prefix}streams:{${sessionOf(streamId)}}`
    const lease = Option.getOrUndefined(yield* Effect.serviceOption(InstanceLease))
    const append = fenced(redis, lease) ?? redis.eval(appendScript)
    const wakeChannel = `${prefix}tail`
    const replay = redis.eval(replayScript)
    const finish = redis.eval(finishScript)
    const tail = makeTail(redis, scope, { streamKey, wakeChannel, pollMs, finish: (key) => finish(key, maxLen, wakeChannel) })

    const store: EventStoreShape = {
      append: (streamId, data, event) =>
        append(streamKey(streamId), indexKey(streamId), data, event ?? "", maxLen, ttlMs, maxStreams).pipe(
          Effect.map((redisId) => `${streamId}_${redisId}`),
          Effect.orDie
        ),
      replayAfter: (lastEventId) =>
        Effect.suspend(() => {
          const parsed = parseId(lastEventId)
          if (parsed === undefined) return Effect.succeed(Option.none<Replay>())
          return replay(streamKey(parsed.streamId), parsed.redisId).pipe(
            Effect.map((entries): Option.Option<Replay> => {
              if (entries === null) return Option.none()
              const events: Array<StoredEvent> = []
              for (const [redisId, fields] of entries) {
                const data = fieldOf(fields, "d") ?? ""
                // A priming event marks a position; there is nothing in it to replay.
                if (data === "") continue
                const event = fieldOf(fields, "e")
                events.push({ id: `${parsed.streamId}_${redisId}`, event: event === "" ? undefined : event, data })
              }
              return Option.some({ streamId: parsed.streamId, events })
            }),
            Effect.orDie
          )
        }),
      streamOf: (eventId) =>
        Effect.suspend(() => {
          const parsed = parseId(eventId)
          if (parsed === undefined) return Effect.succeed(Option.none<string>())
          return redis.send<number>("EXISTS", streamKey(parsed.streamId)).pipe(
            Effect.map((n) => Number(n) === 1 ? Option.some(parsed.streamId) : Option.none()),
            Effect.orDie
          )
        }),
      removeStream: (streamId) =>
        Effect.andThen(
          redis.send("ZREM", indexKey(streamId), streamKey(streamId)),
          redis.send("DEL", streamKey(streamId))
        ).pipe(Effect.asVoid, Effect.orDie),
      // Diagnostics only: walks the keyspace.
      size: Effect.gen(function*() {
        let cursor = "0"
        let total = 0
        do {
          const [next, keys] = yield* redis.send<readonly [string, ReadonlyArray<string>]>(
            "SCAN",
            cursor,
            "MATCH",
            `${prefix}log:*`,
            "COUNT",
            "1000"
          )
          cursor = next
          for (const key of keys) total += Number(yield* redis.send<number>("XLEN", key))
        } while (cursor !== "0")
        return total
      }).pipe(Effect.orDie),
      tail
    }
    return store
  })

/**
 * Appends checked against the instance's lease, where there is one to check
 * against. A refused append is a defect (`LeaseLost`): `append` has no error
 * channel, and what was writing the stream ends with it.
 */
const fenced = (redis: Redis.Redis["Service"], lease: InstanceLeaseShape | undefined) => {
  const key = lease?.key
  if (lease === undefined || key === undefined) return undefined
  const run = redis.eval(fencedAppendScript)
  return (stream: string, index: string, data: string, event: string, maxLen: number, ttlMs: number, maxStreams: number) =>
    fencedAppend(run, lease, key, stream, index, data, event, maxLen, ttlMs, maxStreams)
}

/** One fenced append; one generator function for every append (docs/design.md, "Per-request code and the old generation"). */
const fencedAppend = Effect.fnUntraced(function*(
  run: (...params: Parameters<typeof fencedAppendScript.params>) => Effect.Effect<string | null, Redis.RedisError>,
  lease: InstanceLeaseShape,
  key: string,
  stream: string,
  index: string,
  data: string,
  event: string,
  maxLen: number,
  ttlMs: number,
  maxStreams: number
) {
  // Work started under an older lease keeps its token, and the script refuses it.
  const pinned = yield* WriterToken
  const token = lease.token() === undefined ? undefined : pinned ?? lease.token()
  const id = token === undefined
    ? null
    : yield* run(stream, index, key, data, event, maxLen, ttlMs, maxStreams, String(token))
  if (id === null) return yield* Effect.die(new LeaseLost({ instanceId: lease.id }))
  return id
})

type Entries = ReadonlyArray<readonly [string, ReadonlyArray<string>]>

/** A follower retries a failed read this often until Redis answers again (its scope closing stops it). */
const readRetry = Schedule.spaced("200 millis")

const makeTail = (
  redis: Redis.Redis["Service"],
  scope: Scope.Scope,
  options: {
    readonly streamKey: (streamId: string) => string
    readonly wakeChannel: string
    readonly pollMs: number
    readonly finish: (key: string) => Effect.Effect<number, Redis.RedisError>
  }
): Tail => {
  // Followers of this store by stream key, woken by the messages of one subscription.
  const followers = Wakers.make()
  let subscribed: Deferred.Deferred<void> | undefined
  const listen = Effect.scoped(Effect.gen(function*() {
    const queue = yield* redis.subscribe(options.wakeChannel)
    Deferred.doneUnsafe(subscribed!, Effect.void)
    // Appends made while there was no subscription woke nobody.
    followers.wakeAll()
    return yield* Effect.forever(Effect.map(Queue.take(queue), (message) => followers.wake(message.message)))
  })).pipe(
    Effect.catchCause((cause) => Effect.logWarning("Event log wake-ups interrupted; subscribing again", cause)),
    Effect.repeat(Schedule.spaced("1 second"))
  )
  // Subscribed on first use, for the life of the store; a follower waits for it briefly (it polls anyway).
  const subscription = Effect.suspend(() => {
    if (subscribed === undefined) {
      subscribed = Deferred.makeUnsafe<void>()
      return Effect.andThen(Effect.forkIn(listen, scope), Deferred.await(subscribed))
    }
    return Deferred.await(subscribed)
  }).pipe(Effect.timeoutOption(Duration.millis(options.pollMs)), Effect.asVoid)

  const read = (key: string, cursor: string): Effect.Effect<Follow.Read<string, StoredEvent>> =>
    redis.send<Entries>("XRANGE", key, `(${cursor}`, "+", "COUNT", "256").pipe(
      Effect.retry(readRetry),
      Effect.orDie,
      Effect.map((entries) => {
        const events: Array<StoredEvent> = []
        let next = cursor
        const streamId = key.slice(key.indexOf("}:") + 2)
        for (const [redisId, fields] of entries) {
          next = redisId
          if (fieldOf(fields, "f") !== undefined) return { events, cursor: next, finished: true }
          const data = fieldOf(fields, "d") ?? ""
          if (data === "") continue
          const event = fieldOf(fields, "e")
          events.push({ id: `${streamId}_${redisId}`, event: event === "" ? undefined : event, data })
        }
        return { events, cursor: next, finished: false }
      })
    )

  const start = (key: string, streamId: string, from: FollowFrom): Effect.Effect<string> => {
    if (from === "start") return Effect.succeed("0-0")
    if (from === "end") {
      return redis.send<Entries>("XREVRANGE", key, "+", "-", "COUNT", "1").pipe(
        Effect.retry(readRetry),
        Effect.orDie,
        Effect.map((last) => last[0]?.[0] ?? "0-0")
      )
    }
    const parsed = parseId(from.after)
    return parsed !== undefined && parsed.streamId === streamId
      ? Effect.succeed(parsed.redisId)
      : Effect.die(new Error(`event id ${from.after} does not belong to stream ${streamId}`))
  }

  return {
    follow: (streamId, from) => {
      const key = options.streamKey(streamId)
      return Follow.make({
        start: start(key, streamId, from),
        read: (cursor) => read(key, cursor),
        pollMs: options.pollMs,
        register: (onAppend) =>
          Effect.andThen(followers.register(key, onAppend), subscription)
      })
    },
    finish: (streamId) => Effect.asVoid(Effect.orDie(options.finish(options.streamKey(streamId))))
  }
}

const fieldOf = (fields: ReadonlyArray<string>, name: string): string | undefined => {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1]
  return undefined
}

/**
 * The Redis event log as the `EventStore` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<EventStore, never, Redis.Redis> =>
  Layer.effect(EventStore)(make(options))
