/**
 * Following a stream of the event log (`EventStoreShape.tail`), on the
 * in-memory store and on a real redis-server: a follower gets what follows
 * its position in order, each event once, without priming events, and ends
 * at the end mark, which replay never shows; writers on other connections
 * wake it; it is woken again after Redis restarts; and nothing of it (nor of
 * the store's wake-up subscription) is left once its scope closes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option, Schedule, Stream } from "effect"
import * as Redis from "effect/persistence/Redis"
import * as EventStore from "../../../src/server/EventStore.ts"
import type { EventStoreShape, Tail } from "../../../src/server/EventStore.ts"
import * as RedisEventStore from "../../../src/server/RedisEventStore.ts"
import type * as Duration from "effect/Duration"
import * as RedisFleet from "../../../src/server/RedisFleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"

const PREFIX = "tail:"

/** A Redis store on a connection of its own (as another instance would have), closed with the scope. */
const redisStore = (url: string, tailPollInterval: Duration.Input = "500 millis") =>
  Effect.gen(function*() {
    const context = yield* Layer.build(RedisFleet.layerConnection({ url }))
    return yield* Effect.provideContext(RedisEventStore.make({ prefix: PREFIX, tailPollInterval }), context)
  })

const tailOf = (store: EventStoreShape): Tail => {
  if (store.tail === undefined) throw new Error("the store has no tail")
  return store.tail
}

const follow = (store: EventStoreShape, streamId: string, from: EventStore.FollowFrom) =>
  Effect.flatMap(tailOf(store).follow(streamId, from), (events) =>
    Effect.forkScoped(Effect.map(Stream.runCollect(events), (all) => all.map((e) => e.data))))

/** The contract both stores keep; `writer` and `reader` may be the same store or two instances' stores. */
const contract = (name: string, stores: Effect.Effect<{ writer: EventStoreShape; reader: EventStoreShape }, unknown, any>) => {
  it.live(`${name}: a follower gets what follows its position, in order, once, no priming, and ends at the end mark`, () =>
    Effect.gen(function*() {
      const { reader, writer } = yield* stores
      const a = yield* writer.append("s~f", "a")
      yield* writer.append("s~f", "")
      yield* writer.append("s~f", "b", "custom")
      const afterA = yield* follow(reader, "s~f", { after: a })
      const fromStart = yield* follow(reader, "s~f", "start")
      const fromEnd = yield* follow(reader, "s~f", "end")
      yield* writer.append("s~f", "c")
      yield* tailOf(writer).finish("s~f")
      yield* writer.append("s~f", "after the mark")
      expect(yield* Fiber.join(afterA)).toEqual(["b", "c"])
      expect(yield* Fiber.join(fromStart)).toEqual(["a", "b", "c"])
      expect(yield* Fiber.join(fromEnd)).toEqual(["c"])
      // The mark is never replayed; what came after it is (the stream was written again).
      const replay = Option.getOrThrow(yield* reader.replayAfter(a))
      expect(replay.events.map((e) => e.data)).toEqual(["b", "c", "after the mark"])
      expect(replay.events[0].event).toBe("custom")
      // A follower that starts after the mark ends there at once.
      expect(yield* Fiber.join(yield* follow(reader, "s~f", { after: a }))).toEqual(["b", "c"])
    }).pipe(Effect.scoped), 30_000)

  it.live(`${name}: a follower waits for appends and gets each as it comes, with the event ids it was stored under`, () =>
    Effect.gen(function*() {
      const { reader, writer } = yield* stores
      const events = yield* tailOf(reader).follow("s~w", "end")
      const got = yield* Effect.forkScoped(Stream.runCollect(Stream.take(events, 20)))
      const ids: Array<string> = []
      for (let i = 0; i < 20; i++) ids.push(yield* writer.append("s~w", `e${i}`))
      const received = (yield* Fiber.join(got))
      expect(received.map((e) => e.data)).toEqual(ids.map((_, i) => `e${i}`))
      expect(received.map((e) => e.id)).toEqual(ids)
    }).pipe(Effect.scoped), 30_000)
}

describe("event log tail, in memory", () => {
  it("is offered only when asked for: a single process delivers its streams directly", () => {
    expect(EventStore.makeMemoryUnsafe().tail).toBeUndefined()
    expect(EventStore.makeMemoryUnsafe({ tail: true }).tail).toBeDefined()
  })
  contract(
    "memory",
    Effect.sync(() => {
      const store = EventStore.makeMemoryUnsafe({ tail: true })
      return { reader: store, writer: store }
    })
  )
})

describe.skipIf(!RedisServer.present)("event log tail, on Redis", () => {
  contract(
    "redis, two connections",
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      return { writer: yield* redisStore(redis.url), reader: yield* redisStore(redis.url) }
    })
  )

  it.live("an append on another connection wakes the follower: it needs no poll (here, one an hour)", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const writer = yield* redisStore(redis.url)
      const reader = yield* redisStore(redis.url, "1 hour")
      const events = yield* tailOf(reader).follow("s~wake", "end")
      const got = yield* Effect.forkScoped(Stream.runCollect(Stream.take(events, 2)))
      yield* writer.append("s~wake", "one")
      yield* writer.append("s~wake", "two")
      expect((yield* Fiber.join(got)).map((e) => e.data)).toEqual(["one", "two"])
      // The end mark wakes it too.
      const rest = yield* Effect.forkScoped(Stream.runCollect(yield* tailOf(reader).follow("s~wake", "end")))
      yield* tailOf(writer).finish("s~wake")
      expect(yield* Fiber.join(rest)).toEqual([])
    }).pipe(Effect.scoped), 60_000)

  it.live("producers on two connections write one stream; a follower on a third gets every event once, in strictly increasing order", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* redisStore(redis.url)
      const b = yield* redisStore(redis.url)
      const c = yield* redisStore(redis.url)
      const events = yield* tailOf(c).follow("s~shared", "start")
      const got = yield* Effect.forkScoped(Stream.runCollect(events))
      const written = yield* Effect.all(
        [a, b].map((store, who) =>
          Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) => store.append("s~shared", `${who}:${i}`))
        ),
        { concurrency: "unbounded" }
      )
      yield* tailOf(a).finish("s~shared")
      const received = (yield* Fiber.join(got))
      expect(received.length).toBe(200)
      expect(new Set(received.map((e) => e.id))).toEqual(new Set(written.flat()))
      const order = received.map((e) => redisIdOf(e.id))
      for (let i = 1; i < order.length; i++) expect(order[i] > order[i - 1]).toBe(true)
      // Each producer's events arrive in the order it wrote them.
      for (const who of [0, 1]) {
        expect(received.filter((e) => e.data.startsWith(`${who}:`)).map((e) => e.data)).toEqual(
          Array.from({ length: 100 }, (_, i) => `${who}:${i}`)
        )
      }
    }).pipe(Effect.scoped), 60_000)

  it.live("a follower is woken again after Redis restarts, and misses nothing written before or after", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const writer = yield* redisStore(redis.url)
      const reader = yield* redisStore(redis.url)
      const first = yield* writer.append("s~r", "before")
      const events = yield* tailOf(reader).follow("s~r", { after: first })
      const got = yield* Effect.forkScoped(Stream.runCollect(Stream.take(events, 2)))
      yield* writer.append("s~r", "one")
      yield* redis.kill
      yield* redis.start
      // The writer's client reconnects by itself; until then its appends fail.
      yield* Effect.exit(writer.append("s~r", "two")).pipe(
        Effect.flatMap((exit) => exit._tag === "Success" ? Effect.void : Effect.fail("not yet")),
        Effect.retry(Schedule.spaced("50 millis"))
      )
      expect((yield* Fiber.join(got)).map((e) => e.data)).toEqual(["one", "two"])
    }).pipe(Effect.scoped), 60_000)

  it.live("once the scopes close, no follower reads and no connection of the store is left", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const clients = yield* Layer.build(RedisFleet.layerConnection({ url: redis.url }))
      const r = Context.get(clients, Redis.Redis)
      const connections = Effect.map(r.send<string>("CLIENT", "LIST"), (list) => list.trim().split("\n").length)
      const before = yield* connections
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* redisStore(redis.url)
        yield* Effect.scoped(Effect.gen(function*() {
          const events = yield* tailOf(store).follow("s~c", "end")
          const got = yield* Effect.forkScoped(Stream.runCollect(Stream.take(events, 1)))
          yield* store.append("s~c", "x")
          yield* Fiber.join(got)
          // A follower left waiting when its scope closes.
          yield* Effect.forkScoped(Stream.runDrain(yield* tailOf(store).follow("s~c", "end")))
          // The store's connection and its wake-up subscription.
          expect(yield* connections).toBe(before + 2)
        }))
        // Followers gone, the store and its subscription stay while the store does.
        expect(yield* connections).toBe(before + 2)
      }))
      // Connections are closed asynchronously by node-redis: wait for Redis to see it, without a deadline.
      yield* connections.pipe(
        Effect.flatMap((n) => n === before ? Effect.void : Effect.fail(n)),
        Effect.retry(Schedule.spaced("20 millis"))
      )
    }).pipe(Effect.scoped), 60_000)
})

const redisIdOf = (eventId: string) => {
  const [ms, seq] = eventId.slice(eventId.lastIndexOf("_") + 1).split("-").map(BigInt)
  return ms * 1_000_000n + seq
}
