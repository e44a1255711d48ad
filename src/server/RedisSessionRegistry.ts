/**
 * The `SessionRegistry` on Redis: one hash per session,
 * `<prefix>sess:{<sessionId>}`, expiring after the idle timeout and set to
 * expire again by every `load`. Loading (read and touch) and ending (delete
 * and announce) are each one script, so an end is claimed by exactly one
 * caller and announced in the same step: the announcement goes out on the
 * channel the Redis `Bus` uses for the topic `session-ended`, and `ended`
 * listens through the `Bus` in context.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redis from "effect/persistence/Redis"
import { Bus } from "./Bus.ts"
import {
  ENDED_TOPIC,
  RegistryUnavailable,
  type SessionRecord,
  SessionRegistry,
  type SessionRegistryShape
} from "./SessionRegistry.ts"

/**
 * Where the records live.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Put before every key and channel; one prefix per fleet, the same as the `Bus`'s. Default `"mcp:"`. */
  readonly prefix?: string | undefined
}

const createScript = Redis.script(
  (key: string, ttlMs: number, ...fields: ReadonlyArray<string>) => [key, ttlMs, ...fields],
  {
    numberOfKeys: 1,
    lua: `
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`
  }
).withReturnType<number>()

// The record, its expiry moved on; nothing for a session that ended or expired.
const loadScript = Redis.script(
  (key: string, ttlMs: number) => [key, ttlMs],
  {
    numberOfKeys: 1,
    lua: `
if redis.call('PEXPIRE', KEYS[1], ARGV[1]) == 0 then return false end
return redis.call('HGETALL', KEYS[1])
`
  }
).withReturnType<ReadonlyArray<string> | null>()

const updateScript = Redis.script(
  (key: string, ...fields: ReadonlyArray<string>) => [key, ...fields],
  {
    numberOfKeys: 1,
    lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
`
  }
).withReturnType<number>()

// Claimed by the one caller whose DEL removed the record, which announces it in the same step.
const endScript = Redis.script(
  (key: string, channel: string, sessionId: string) => [key, channel, sessionId],
  {
    numberOfKeys: 1,
    lua: `
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
`
  }
).withReturnType<number>()

// The latest deliveries claimed are kept in the record (bounded), so a claim needs no key of its own.
const claimScript = Redis.script(
  (key: string, deliveryId: string, kept: number) => [key, deliveryId, kept],
  {
    numberOfKeys: 1,
    lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local seen = redis.call('HGET', KEYS[1], 'delivered')
local list = {}
if seen then list = cjson.decode(seen) end
for _, id in ipairs(list) do
  if id == ARGV[1] then return 0 end
end
table.insert(list, ARGV[1])
while #list > tonumber(ARGV[2]) do table.remove(list, 1) end
redis.call('HSET', KEYS[1], 'delivered', cjson.encode(list))
return 1
`
  }
).withReturnType<number>()

/** Deliveries a record remembers: an instance this many notifications behind the others delivers again. */
const DELIVERIES_KEPT = 64

const encode = (record: SessionRecord): Array<string> => [
  "principal",
  record.principal,
  "protocolVersion",
  record.protocolVersion,
  "phase",
  record.phase,
  "clientInfo",
  JSON.stringify(record.clientInfo),
  "clientCapabilities",
  JSON.stringify(record.clientCapabilities),
  "logLevel",
  record.logLevel ?? "",
  "createdAt",
  String(record.createdAt)
]

const parseObject = (text: string | undefined): Record<string, unknown> | undefined => {
  if (text === undefined) return undefined
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

/**
 * The record a hash holds (its fields and values in turn, as `HGETALL`
 * answers), or none when it is not one (nothing this registry wrote).
 *
 * @since 0.1.0
 * @category utils
 */
export const decode = (flat: ReadonlyArray<string>): Option.Option<SessionRecord> => {
  const fields = new Map<string, string>()
  for (let i = 0; i + 1 < flat.length; i += 2) fields.set(String(flat[i]), String(flat[i + 1]))
  const principal = fields.get("principal")
  const protocolVersion = fields.get("protocolVersion")
  const phase = fields.get("phase")
  const clientInfo = parseObject(fields.get("clientInfo"))
  const clientCapabilities = parseObject(fields.get("clientCapabilities"))
  const createdAt = Number(fields.get("createdAt"))
  if (
    principal === undefined || protocolVersion === undefined || (phase !== "initializing" && phase !== "ready") ||
    clientInfo === undefined || typeof clientInfo.name !== "string" || typeof clientInfo.version !== "string" ||
    clientCapabilities === undefined || !Number.isFinite(createdAt)
  ) {
    return Option.none()
  }
  const logLevel = fields.get("logLevel")
  return Option.some({
    principal,
    protocolVersion,
    phase,
    clientInfo: clientInfo as SessionRecord["clientInfo"],
    clientCapabilities,
    logLevel: logLevel === undefined || logLevel === "" ? undefined : logLevel,
    createdAt
  })
}

/**
 * The registry on the `Redis` and `Bus` services in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options?: Options): Effect.Effect<SessionRegistryShape, never, Redis.Redis | Bus> =>
  Effect.gen(function*() {
    const redis = yield* Redis.Redis
    const bus = yield* Bus
    const prefix = options?.prefix ?? "mcp:"
    // One hash tag per session, so that whatever else is kept for a session can sit in the same slot.
    const key = (sessionId: string) => `${prefix}sess:{${sessionId}}`
    // The channel the Redis Bus carries the topic on (RedisBus: `<prefix>bus:<topic>`).
    const endedChannel = `${prefix}bus:${ENDED_TOPIC}`
    const create = redis.eval(createScript)
    const load = redis.eval(loadScript)
    const update = redis.eval(updateScript)
    const end = redis.eval(endScript)
    const claim = redis.eval(claimScript)
    const unavailable = (operation: RegistryUnavailable["operation"], sessionId: string) => (cause: unknown) =>
      new RegistryUnavailable({ operation, sessionId, cause })
    return {
      create: (sessionId, record, ttlMs) =>
        create(key(sessionId), Math.max(1, Math.ceil(ttlMs)), ...encode(record)).pipe(
          Effect.asVoid,
          Effect.mapError(unavailable("create", sessionId))
        ),
      load: (sessionId, ttlMs) =>
        load(key(sessionId), Math.max(1, Math.ceil(ttlMs))).pipe(
          Effect.map((flat) => flat === null || flat.length === 0 ? Option.none() : decode(flat)),
          Effect.mapError(unavailable("load", sessionId))
        ),
      update: (sessionId, changes) => {
        const fields: Array<string> = []
        if (changes.phase !== undefined) fields.push("phase", changes.phase)
        if (changes.logLevel !== undefined) fields.push("logLevel", changes.logLevel)
        if (fields.length === 0) return Effect.void
        return update(key(sessionId), ...fields).pipe(Effect.asVoid, Effect.mapError(unavailable("update", sessionId)))
      },
      end: (sessionId) =>
        end(key(sessionId), endedChannel, sessionId).pipe(
          Effect.map((n) => Number(n) === 1),
          Effect.mapError(unavailable("end", sessionId))
        ),
      ended: (onEnded) => bus.subscribe(ENDED_TOPIC, onEnded),
      claimDelivery: (sessionId, deliveryId) =>
        claim(key(sessionId), deliveryId, DELIVERIES_KEPT).pipe(
          Effect.map((n) => Number(n) === 1),
          Effect.mapError(unavailable("claim", sessionId))
        )
    } satisfies SessionRegistryShape
  })

/**
 * The Redis registry as the `SessionRegistry` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<SessionRegistry, never, Redis.Redis | Bus> =>
  Layer.effect(SessionRegistry)(make(options))
