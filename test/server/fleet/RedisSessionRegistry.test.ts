/**
 * The Redis session registry against a real redis-server: a record written
 * by one instance is loaded by another, its expiry moved on by each load;
 * phase and level updates reach every reader; an end is claimed by exactly
 * one of many concurrent callers and heard once by every listening
 * instance; so is a delivery (once per id, none for an ended session); a record past its idle time is gone; with Redis down every
 * operation fails at once with `RegistryUnavailable`, and works again once
 * Redis is back.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { createClient } from "redis"
import * as RedisBus from "../../../src/server/RedisBus.ts"
import * as RedisFleet from "../../../src/server/RedisFleet.ts"
import * as RedisSessionRegistry from "../../../src/server/RedisSessionRegistry.ts"
import { RegistryUnavailable, type SessionRecord, SessionRegistry } from "../../../src/server/SessionRegistry.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"

const PREFIX = "r:"

/** A registry on a connection of its own, as one instance has. */
const registryOn = (url: string) =>
  Effect.map(
    Layer.build(
      RedisSessionRegistry.layer({ prefix: PREFIX }).pipe(
        Layer.provide(RedisBus.layer({ prefix: PREFIX })),
        Layer.provide(RedisFleet.layerConnection({ url }))
      )
    ),
    (context) => Context.get(context, SessionRegistry)
  )

const record: SessionRecord = {
  principal: "alice",
  protocolVersion: "2025-11-25",
  phase: "initializing",
  clientInfo: { name: "probe", version: "1.0.0", title: "Probe" },
  clientCapabilities: { elicitation: { form: {} } },
  logLevel: undefined,
  createdAt: 1_700_000_000_000
}

const pttl = (url: string, key: string) =>
  Effect.promise(async () => {
    const client = createClient({ url })
    client.on("error", () => {})
    await client.connect()
    try {
      return await client.pTTL(key)
    } finally {
      client.destroy()
    }
  })

const until = <A>(probe: Effect.Effect<A>, check: (a: A) => boolean): Effect.Effect<A> =>
  Effect.flatMap(probe, (a) => check(a) ? Effect.succeed(a) : Effect.andThen(Effect.sleep("50 millis"), until(probe, check)))

describe.skipIf(!RedisServer.present)("RedisSessionRegistry", () => {
  it.live("a record written by one instance is loaded by another, each load moving its expiry on; updates reach every reader", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* registryOn(redis.url)
      const b = yield* registryOn(redis.url)
      yield* a.create("s1", record, 60_000)
      expect(yield* b.load("s1", 120_000)).toEqual(Option.some(record))
      const ttl = yield* pttl(redis.url, `${PREFIX}sess:{s1}`)
      expect(ttl).toBeGreaterThan(60_000)
      expect(ttl).toBeLessThanOrEqual(120_000)

      yield* b.update("s1", { phase: "ready" })
      yield* a.update("s1", { logLevel: "debug" })
      expect(yield* a.load("s1", 60_000)).toEqual(Option.some({ ...record, phase: "ready", logLevel: "debug" }))

      // Unknown sessions: nothing loaded, an update makes nothing.
      expect(yield* a.load("nope", 60_000)).toEqual(Option.none())
      yield* a.update("nope", { phase: "ready" })
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual([`${PREFIX}sess:{s1}`])
    }).pipe(Effect.scoped), { timeout: 30_000 })

  it.live("a delivery is claimed by one caller of many; once per id; none for a session that ended; no key of its own", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const registries = [yield* registryOn(redis.url), yield* registryOn(redis.url), yield* registryOn(redis.url)]
      yield* registries[0].create("s1", record, 60_000)
      const claims = yield* Effect.forEach(registries, (r) => r.claimDelivery!("s1", "n1"), { concurrency: "unbounded" })
      expect(claims.filter((won) => won)).toHaveLength(1)
      expect(yield* registries[1].claimDelivery!("s1", "n1")).toBe(false)
      expect(yield* registries[1].claimDelivery!("s1", "n2")).toBe(true)
      // The record reads as before.
      expect(yield* registries[2].load("s1", 60_000)).toEqual(Option.some(record))
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual([`${PREFIX}sess:{s1}`])

      yield* registries[0].end("s1")
      expect(yield* registries[0].claimDelivery!("s1", "n3")).toBe(false)
      expect(yield* registries[0].claimDelivery!("never", "n1")).toBe(false)
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual([])
    }).pipe(Effect.scoped), { timeout: 30_000 })

  it.live("an end is claimed by one caller of many and heard once by every listening instance", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* registryOn(redis.url)
      const b = yield* registryOn(redis.url)
      const heard: Record<"a" | "b", Array<string>> = { a: [], b: [] }
      const waiters = new Set<() => void>()
      const listen = (name: "a" | "b") => (id: string) =>
        Effect.sync(() => {
          heard[name].push(id)
          for (const w of waiters) w()
        })
      yield* a.ended(listen("a"))
      yield* b.ended(listen("b"))
      const heardBoth = (id: string) =>
        Effect.callback<void>((resume) => {
          const check = () => {
            if (heard.a.includes(id) && heard.b.includes(id)) {
              waiters.delete(check)
              resume(Effect.void)
            }
          }
          waiters.add(check)
          check()
          return Effect.sync(() => void waiters.delete(check))
        })
      yield* a.create("s1", record, 60_000)
      yield* a.create("s2", record, 60_000)
      const claims = yield* Effect.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).end("s1")),
        { concurrency: "unbounded" }
      )
      expect(claims.filter((c) => c)).toHaveLength(1)
      yield* heardBoth("s1")
      // Delivery is in order: had s1 been announced twice, the second would come before s2.
      expect(yield* b.end("s2")).toBe(true)
      yield* heardBoth("s2")
      expect(heard).toEqual({ a: ["s1", "s2"], b: ["s1", "s2"] })
      expect(yield* a.load("s1", 60_000)).toEqual(Option.none())
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual([])
    }).pipe(Effect.scoped), { timeout: 30_000 })

  it.live("a record nobody loads within its idle time is gone", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* registryOn(redis.url)
      yield* a.create("brief", record, 100)
      yield* until(RedisServer.countKeys(redis.url, PREFIX), (n) => n === 0)
      expect(yield* a.load("brief", 60_000)).toEqual(Option.none())
    }).pipe(Effect.scoped), { timeout: 30_000 })

  it.live("Redis down: every operation fails at once with RegistryUnavailable; back: it works again", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* registryOn(redis.url)
      yield* a.create("s1", record, 60_000)
      yield* redis.kill
      const failure = (effect: Effect.Effect<unknown, RegistryUnavailable>) =>
        until(Effect.flip(effect).pipe(Effect.orElseSucceed(() => undefined)), (e) => e !== undefined)
      const load = yield* failure(a.load("s1", 60_000))
      expect(load).toBeInstanceOf(RegistryUnavailable)
      expect(load?.operation).toBe("load")
      expect((yield* failure(a.create("s2", record, 60_000)))?.operation).toBe("create")
      expect((yield* failure(a.update("s1", { phase: "ready" })))?.operation).toBe("update")
      expect((yield* failure(a.end("s1")))?.operation).toBe("end")
      expect((yield* failure(a.claimDelivery!("s1", "n1")))?.operation).toBe("claim")

      yield* redis.start
      const back = yield* until(Effect.option(a.load("s1", 60_000)), Option.isSome)
      // The append-only file kept the record across the restart.
      expect(back).toEqual(Option.some(Option.some(record)))
    }).pipe(Effect.scoped), { timeout: 30_000 })
})
