/**
 * The Redis event log against a real redis-server: two clients writing one
 * stream get strictly increasing ids and a replay that gives every later
 * event once, in order; the per-stream and per-session bounds and the
 * expiry hold; ids that name nothing replay nothing; removal leaves no key;
 * and while Redis is down a write fails at once instead of hanging.
 */
import * as NodeRedis from "@effect/platform-node/NodeRedis"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option } from "effect"
import * as Redis from "effect/persistence/Redis"
import type { EventStoreShape } from "../../../src/server/EventStore.ts"
import * as RedisEventStore from "../../../src/server/RedisEventStore.ts"
import * as RedisFleet from "../../../src/server/RedisFleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"

const PREFIX = "t:"

/** A store on a connection of its own (as another process would have), closed with the scope. */
const storeOn = (url: string, options: RedisEventStore.Options = {}) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(RedisFleet.layerConnection({ url }))
    const store = yield* Effect.provideContext(RedisEventStore.make({ prefix: PREFIX, ...options }), context)
    return { store, context }
  })

const redisIdOf = (eventId: string) => {
  const [ms, seq] = eventId.slice(eventId.lastIndexOf("_") + 1).split("-").map(BigInt)
  return ms * 1_000_000n + seq
}

const replayed = (store: EventStoreShape, id: string) =>
  Effect.map(store.replayAfter(id), (r) => Option.getOrThrow(r).events.map((e) => e.data))

describe.skipIf(!RedisServer.present)("RedisEventStore", () => {
  it.effect("two clients writing one stream: ids strictly increase and a replay gives each later event once, in order", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = (yield* storeOn(redis.url)).store
      const b = (yield* storeOn(redis.url)).store
      const stream = "sess1~shared"
      const written = yield* Effect.all(
        [a, b].map((store, who) =>
          Effect.forEach(Array.from({ length: 50 }, (_, i) => i), (i) =>
            Effect.map(store.append(stream, JSON.stringify({ who, i })), (id) => ({ id, data: JSON.stringify({ who, i }) })))
        ),
        { concurrency: "unbounded" }
      )
      const all = written.flat().sort((x, y) => (redisIdOf(x.id) < redisIdOf(y.id) ? -1 : 1))
      expect(new Set(all.map((e) => e.id)).size).toBe(100)
      // Each writer's own ids increase in the order it wrote them.
      for (const mine of written) {
        for (let i = 1; i < mine.length; i++) expect(redisIdOf(mine[i].id) > redisIdOf(mine[i - 1].id)).toBe(true)
      }
      // From either client, after any id: exactly what followed it, in order.
      for (const k of [0, 17, 50, 98]) {
        expect(yield* replayed(k % 2 === 0 ? a : b, all[k].id)).toEqual(all.slice(k + 1).map((e) => e.data))
      }
      expect(yield* replayed(a, all[99].id)).toEqual([])
      expect(Option.getOrThrow(yield* b.streamOf(all[3].id))).toBe(stream)
    }).pipe(Effect.scoped))

  it.effect("keeps the event name, and leaves priming events out of a replay", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const { store } = yield* storeOn(redis.url)
      const priming = yield* store.append("s~p", "")
      yield* store.append("s~p", "one", "custom")
      yield* store.append("s~p", "two")
      const replay = Option.getOrThrow(yield* store.replayAfter(priming))
      expect(replay.streamId).toBe("s~p")
      expect(replay.events.map((e) => [e.event, e.data])).toEqual([["custom", "one"], [undefined, "two"]])
    }).pipe(Effect.scoped))

  it.effect("ids that name nothing (malformed, never issued, another prefix's, removed) replay nothing", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const { store } = yield* storeOn(redis.url)
      const id = yield* store.append("s~x", "a")
      const [ms] = id.slice(id.lastIndexOf("_") + 1).split("-")
      const future = `s~x_${BigInt(ms) + 1000n}-0`
      const other = (yield* storeOn(redis.url, { prefix: "other:" })).store
      for (const unknown of ["", "nope", "s~x_12", "s~x_", future, "s~y_1-0"]) {
        expect(Option.isNone(yield* store.replayAfter(unknown))).toBe(true)
      }
      expect(Option.isNone(yield* other.replayAfter(id))).toBe(true)
      expect(Option.isNone(yield* store.streamOf("s~y_1-0"))).toBe(true)
      yield* store.removeStream("s~x")
      expect(Option.isNone(yield* store.replayAfter(id))).toBe(true)
      expect(Option.isNone(yield* store.streamOf(id))).toBe(true)
      expect(yield* RedisServer.countKeys(redis.url, PREFIX)).toBe(0)
    }).pipe(Effect.scoped))

  it.effect("a stream keeps its newest maxEventsPerStream events", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const { store } = yield* storeOn(redis.url, { maxEventsPerStream: 5 })
      const ids = yield* Effect.forEach(Array.from({ length: 8 }, (_, i) => i), (i) => store.append("s~b", `e${i}`))
      expect(yield* replayed(store, ids[0])).toEqual(["e3", "e4", "e5", "e6", "e7"])
      expect(yield* store.size).toBe(5)
    }).pipe(Effect.scoped))

  it.effect("a session keeps the maxStreamsPerSession streams it wrote last; other sessions are untouched", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const { store } = yield* storeOn(redis.url, { maxStreamsPerSession: 2 })
      const other = yield* store.append("t~keep", "x")
      const first = yield* store.append("s~1", "a")
      const second = yield* store.append("s~2", "b")
      // Writing an existing stream again makes no room, and keeps it (a long-lived standalone stream stays).
      yield* store.append("s~1", "a2")
      expect(Option.isSome(yield* store.streamOf(first))).toBe(true)
      yield* store.append("s~3", "c")
      expect(Option.isNone(yield* store.streamOf(second))).toBe(true)
      expect(Option.isNone(yield* store.replayAfter(second))).toBe(true)
      expect(Option.isSome(yield* store.streamOf(first))).toBe(true)
      expect(Option.isSome(yield* store.streamOf(other))).toBe(true)
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual([
        "t:log:{s}:s~1",
        "t:log:{s}:s~3",
        "t:log:{t}:t~keep",
        "t:streams:{s}",
        "t:streams:{t}"
      ])
    }).pipe(Effect.scoped))

  it.effect("every key expires ttl after its stream's last event, and removing a session's streams leaves no key", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const { context, store } = yield* storeOn(redis.url, { ttl: "90 seconds" })
      yield* store.append("s~1", "a")
      yield* store.append("s~2", "b")
      yield* store.append("broadcast", "c")
      const keys = yield* RedisServer.keysUnder(redis.url, PREFIX)
      expect(keys.length).toBe(5)
      const r = Context.get(context, Redis.Redis)
      for (const key of keys) {
        const ttl = Number(yield* r.send<number>("PTTL", key))
        expect(ttl).toBeGreaterThan(0)
        expect(ttl).toBeLessThanOrEqual(90_000)
      }
      yield* store.removeStream("s~1")
      yield* store.removeStream("s~2")
      yield* store.removeStream("broadcast")
      expect(yield* RedisServer.countKeys(redis.url, PREFIX)).toBe(0)
    }).pipe(Effect.scoped))

  it.effect("while Redis is down a write fails at once and the connection says so; back up, writes go on", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const { context, store } = yield* storeOn(redis.url)
      const before = yield* store.append("s~d", "a")
      yield* redis.kill
      const c = Context.get(context, NodeRedis.NodeRedis).client
      if (c.isReady) yield* Effect.callback<void>((resume) => void c.once("end", () => resume(Effect.void)).once("error", () => resume(Effect.void)))
      expect(c.isReady).toBe(false)
      const failed = yield* Effect.exit(store.append("s~d", "lost"))
      expect(Exit.isFailure(failed) && Exit.hasDies(failed)).toBe(true)
      yield* redis.start
      if (!c.isReady) yield* Effect.callback<void>((resume) => void c.once("ready", () => resume(Effect.void)))
      yield* store.append("s~d", "b")
      // The append-only file kept what was written before the crash.
      expect(yield* replayed(store, before)).toEqual(["b"])
    }).pipe(Effect.scoped))
})
