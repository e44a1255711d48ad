/**
 * The Redis inbox against a real redis-server: entries sent by two other
 * instances reach the reader once each, in the order each sent them, and
 * are deleted once delivered (a reader stopped between delivering an entry
 * and deleting it delivers it again: at least once); a send to an
 * instance that is not reading creates nothing and says so; a failing
 * delivery does not stop the reading; the inbox goes when its reader stops
 * (at once when it stops cleanly); with Redis down a send fails at once
 * with `InboxUnavailable`, and the reader delivers again once Redis is back.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { createClient } from "redis"
import { Inbox, type InboxEntry, InboxUnavailable } from "../../../src/server/Inbox.ts"
import * as RedisFleet from "../../../src/server/RedisFleet.ts"
import * as RedisInbox from "../../../src/server/RedisInbox.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"
import * as Collector from "../../fixtures/Collector.ts"

const PREFIX = "i:"

const inboxOn = (url: string, options: RedisInbox.Options = {}) =>
  Effect.map(
    Layer.build(RedisInbox.layer({ prefix: PREFIX, ...options }).pipe(Layer.provide(RedisFleet.layerConnection({ url })))),
    (context) => Context.get(context, Inbox)
  )

const inboxLength = (url: string, instanceId: string) =>
  Effect.promise(async () => {
    const client = createClient({ url })
    client.on("error", () => {})
    await client.connect()
    try {
      return await client.xLen(`${PREFIX}inbox:${instanceId}`)
    } finally {
      client.destroy()
    }
  })

const until = <A>(probe: Effect.Effect<A>, check: (a: A) => boolean): Effect.Effect<A> =>
  Effect.flatMap(probe, (a) => check(a) ? Effect.succeed(a) : Effect.andThen(Effect.sleep("50 millis"), until(probe, check)))

describe.skipIf(!RedisServer.present)("RedisInbox", () => {
  it.live("entries from two senders arrive once each, in each sender's order, and are deleted once delivered", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const reader = yield* inboxOn(redis.url, { instanceId: "R" })
      const b = yield* inboxOn(redis.url)
      const c = yield* inboxOn(redis.url)
      const seen = Collector.make<InboxEntry>()
      let failOnce = true
      yield* reader.receive((entry) =>
        entry.message === "boom" && failOnce
          ? Effect.sync(() => {
            failOnce = false
          }).pipe(Effect.andThen(Effect.die(new Error("a delivery that fails"))))
          : seen.add(entry)
      )
      expect(reader.instanceId).toBe("R")
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual([`${PREFIX}inbox:R`])
      yield* b.send("R", { sessionId: "s", message: "boom" })
      yield* Effect.all([
        Effect.forEach(Array.from({ length: 50 }, (_, i) => i), (i) => b.send("R", { sessionId: "s1", message: `b${i}` })),
        Effect.forEach(Array.from({ length: 50 }, (_, i) => i), (i) => c.send("R", { sessionId: "s2", message: `c${i}` }))
      ], { concurrency: "unbounded" })
      yield* seen.awaitCount(100)
      expect(seen.got.filter((e) => e.sessionId === "s1").map((e) => e.message)).toEqual(
        Array.from({ length: 50 }, (_, i) => `b${i}`)
      )
      expect(seen.got.filter((e) => e.sessionId === "s2").map((e) => e.message)).toEqual(
        Array.from({ length: 50 }, (_, i) => `c${i}`)
      )
      yield* until(inboxLength(redis.url, "R"), (n) => n === 0)
      expect(seen.got).toHaveLength(100)
    }).pipe(Effect.scoped), { timeout: 30_000 })

  it.live("a send to an instance that is not reading creates nothing; an inbox goes with its reader", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const sender = yield* inboxOn(redis.url)
      expect(yield* sender.send("gone", { sessionId: "s", message: "{}" })).toBe(false)
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual([])

      // A clean stop removes the inbox at once.
      const scope = yield* Scope.make()
      const reader = yield* inboxOn(redis.url, { instanceId: "R" }).pipe(Scope.provide(scope))
      yield* reader.receive(() => Effect.void).pipe(Scope.provide(scope))
      expect(yield* sender.send("R", { sessionId: "s", message: "{}" })).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual([])
    }).pipe(Effect.scoped), { timeout: 30_000 })

  it.live("an inbox whose reader stopped without cleaning up expires", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const sender = yield* inboxOn(redis.url)
      const scope = yield* Scope.make()
      const reader = yield* inboxOn(redis.url, { instanceId: "R", ttl: "300 millis" }).pipe(Scope.provide(scope))
      yield* reader.receive(() => Effect.void).pipe(Scope.provide(scope))
      // Redis goes away under the reader: the clean stop cannot remove the inbox.
      yield* redis.kill
      yield* Scope.close(scope, Exit.void)
      yield* redis.start
      yield* until(RedisServer.countKeys(redis.url, PREFIX), (n) => n === 0)
      // The sender's connection comes back on its own backoff (up to a second apart once Redis was
      // down a while, longer on a loaded machine): until then a send fails with InboxUnavailable.
      // The first send Redis answers finds no inbox.
      const sent = yield* until(
        Effect.option(sender.send("R", { sessionId: "s", message: "{}" })),
        (answered) => answered._tag === "Some"
      )
      expect(sent).toEqual(Option.some(false))
    }).pipe(Effect.scoped), { timeout: 30_000 })

  it.live("Redis down: a send fails at once with InboxUnavailable; back: the reader delivers again", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const reader = yield* inboxOn(redis.url, { instanceId: "R" })
      const sender = yield* inboxOn(redis.url)
      const seen = Collector.make<InboxEntry>()
      yield* reader.receive(seen.add)
      yield* sender.send("R", { sessionId: "s", message: "before" })
      yield* seen.awaitCount(1)
      // Delivered and deleted (a reader stopped between the two delivers the entry again once back).
      yield* until(inboxLength(redis.url, "R"), (n) => n === 0)

      yield* redis.kill
      const failed = yield* until(
        Effect.flip(sender.send("R", { sessionId: "s", message: "lost" })).pipe(Effect.orElseSucceed(() => undefined)),
        (e) => e !== undefined
      )
      expect(failed).toBeInstanceOf(InboxUnavailable)
      expect(failed?.instanceId).toBe("R")

      yield* redis.start
      // The reader made its inbox again; what is sent now arrives.
      yield* until(Effect.orElseSucceed(sender.send("R", { sessionId: "s", message: "after" }), () => false), (sent) => sent)
      yield* seen.awaitCount(2)
      expect(seen.got.map((e) => e.message)).toEqual(["before", "after"])
    }).pipe(Effect.scoped), { timeout: 30_000 })
})
