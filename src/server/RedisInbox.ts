/**
 * The `Inbox` on Redis: one Redis Stream per instance,
 * `<prefix>inbox:<instanceId>`. A sender appends with `NOMKSTREAM`, so a
 * message for an instance that is gone creates nothing. The instance reads
 * its own stream with `XREAD BLOCK` on a connection reserved for it (a
 * blocking read would hold up every command behind it on the shared one),
 * deletes what it delivered, and keeps the stream alive with an expiry it
 * renews at every read: once the instance stops, its inbox expires. A clean
 * stop removes it at once.
 *
 * Delivery is at least once: a reader stopped between delivering an entry
 * and deleting it delivers it again. (A client's answer delivered twice
 * finds no pending request the second time, and is dropped.)
 *
 * Redis unreachable: a send fails with `InboxUnavailable`; the reader
 * retries with backoff and delivers what arrived meanwhile.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redis from "effect/persistence/Redis"
import * as Schedule from "effect/Schedule"
import { Inbox, type InboxEntry, type InboxShape, InboxUnavailable, randomInstanceId } from "./Inbox.ts"

/**
 * The inbox's key and timing.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Put before every key; one prefix per fleet. Default `"mcp:"`. */
  readonly prefix?: string | undefined
  /** This instance's id. Default: a random one. */
  readonly instanceId?: string | undefined
  /** How long an inbox outlives its last read. Default 30 seconds. */
  readonly ttl?: Duration.Input | undefined
  /** Entries an inbox holds at most (the oldest go). Default 10000. */
  readonly maxEntries?: number | undefined
}

// Made empty if missing (an XADD trimmed to nothing leaves the stream), then given its expiry.
const openScript = Redis.script(
  (key: string, ttlMs: number) => [key, ttlMs],
  {
    numberOfKeys: 1,
    lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('XADD', KEYS[1], 'MAXLEN', '0', '*', 'o', '')
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`
  }
).withReturnType<number>()

// Delivered entries go; the inbox lives on.
const ackScript = Redis.script(
  (key: string, ttlMs: number, ...ids: ReadonlyArray<string>) => [key, ttlMs, ...ids],
  {
    numberOfKeys: 1,
    lua: `
redis.call('XDEL', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`
  }
).withReturnType<number>()

type Entries = ReadonlyArray<readonly [string, ReadonlyArray<string>]>
// node-redis answers XREAD with an object keyed by stream; a plain RESP2 client with pairs.
type XRead = Readonly<Record<string, Entries>> | ReadonlyArray<readonly [string, Entries]> | null

const streamsOf = (read: Exclude<XRead, null>): ReadonlyArray<Entries> =>
  Array.isArray(read) ? read.map(([, entries]) => entries) : Object.values(read as Readonly<Record<string, Entries>>)

const fieldOf = (fields: ReadonlyArray<string>, name: string): string | undefined => {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1]
  return undefined
}

/**
 * The inbox on the `Redis` service in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options?: Options): Effect.Effect<InboxShape, never, Redis.Redis> =>
  Effect.gen(function*() {
    const redis = yield* Redis.Redis
    const prefix = options?.prefix ?? "mcp:"
    const instanceId = options?.instanceId ?? randomInstanceId()
    const ttlMs = options?.ttl === undefined ? 30_000 : Math.max(10, Duration.toMillis(Duration.fromInputUnsafe(options.ttl)))
    // Each read blocks for a third of the lifetime at most, so the expiry is renewed in time.
    const blockMs = Math.max(5, Math.floor(ttlMs / 3))
    const maxEntries = Math.max(1, options?.maxEntries ?? 10_000)
    const key = (id: string) => `${prefix}inbox:${id}`
    const own = key(instanceId)

    const send = (to: string, entry: InboxEntry) =>
      redis.send<string | null>(
        "XADD",
        key(to),
        "NOMKSTREAM",
        "MAXLEN",
        "~",
        String(maxEntries),
        "*",
        "s",
        entry.sessionId,
        "m",
        entry.message
      ).pipe(
        Effect.map((id) => id !== null),
        Effect.mapError((cause) => new InboxUnavailable({ instanceId: to, cause }))
      )

    const receive = (onEntry: (entry: InboxEntry) => Effect.Effect<void>) =>
      Effect.gen(function*() {
        const scope = yield* Effect.scope
        const open = redis.eval(openScript)
        // The inbox exists before anyone is told this instance's id.
        yield* Effect.ignore(open(own, ttlMs))
        const deliver = (entry: InboxEntry) =>
          Effect.catchCause(Effect.suspend(() => onEntry(entry)), (cause) =>
            Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning("Inbox: a delivery failed", cause))
        // One connection for as long as it works; a failure ends it, and the loop starts over on a new one.
        const reading = Effect.scoped(Effect.gen(function*() {
          const connection = yield* redis.reserve
          const openOn = connection.eval(openScript)
          const ack = connection.eval(ackScript)
          while (true) {
            yield* openOn(own, ttlMs)
            // Entries are deleted once delivered: whatever is left is new (or was not delivered yet).
            const read = yield* connection.send<XRead>("XREAD", "COUNT", "100", "BLOCK", String(blockMs), "STREAMS", own, "0-0")
            if (read === null) continue
            const ids: Array<string> = []
            for (const entries of streamsOf(read)) {
              for (const [id, fields] of entries) {
                ids.push(id)
                const sessionId = fieldOf(fields, "s")
                const message = fieldOf(fields, "m")
                if (sessionId !== undefined && message !== undefined) yield* deliver({ sessionId, message })
              }
            }
            if (ids.length > 0) yield* ack(own, ttlMs, ...ids)
          }
        }))
        // A clean stop takes the inbox away at once (otherwise it expires); after the reader stopped, which runs first.
        yield* Effect.addFinalizer(() =>
          redis.send("DEL", own).pipe(Effect.ignore, Effect.timeoutOption("1 second"), Effect.asVoid)
        )
        yield* reading.pipe(
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning("Inbox: reading failed; reading again", cause)),
          Effect.repeat(Schedule.exponential("50 millis").pipe(
            Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.seconds(1))))
          )),
          Effect.forkIn(scope)
        )
      })

    return { instanceId, send, receive } satisfies InboxShape
  })

/**
 * The Redis inbox as the `Inbox` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<Inbox, never, Redis.Redis> => Layer.effect(Inbox)(make(options))
