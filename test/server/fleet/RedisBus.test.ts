/**
 * The Redis bus against a real redis-server: subscribers on two
 * connections (as two instances) each get every publish once, in order; a
 * publish while Redis is down fails at once with `BusUnavailable`; after a
 * restart the subscriptions come back by themselves.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { createClient } from "redis"
import { BusUnavailable } from "../../../src/server/Bus.ts"
import * as RedisBus from "../../../src/server/RedisBus.ts"
import * as RedisFleet from "../../../src/server/RedisFleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"
import * as Collector from "../../fixtures/Collector.ts"

const busOn = (url: string) =>
  Effect.flatMap(Layer.build(RedisFleet.layerConnection({ url })), (context) =>
    Effect.provideContext(RedisBus.make({ prefix: "b:" }), context))

const subscribers = (url: string, channel: string) =>
  Effect.promise(async () => {
    const client = createClient({ url })
    client.on("error", () => {})
    await client.connect()
    try {
      return Number((await client.pubSubNumSub(channel))[channel] ?? 0)
    } finally {
      client.destroy()
    }
  })

const until = <A>(probe: Effect.Effect<A>, check: (a: A) => boolean): Effect.Effect<A> =>
  Effect.flatMap(probe, (a) => check(a) ? Effect.succeed(a) : Effect.andThen(Effect.sleep("50 millis"), until(probe, check)))

describe.skipIf(!RedisServer.present)("RedisBus", () => {
  it.live("each subscriber on each connection gets every publish once, in order; down: BusUnavailable at once; back: delivered again", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* busOn(redis.url)
      const b = yield* busOn(redis.url)
      const onA = Collector.make<string>()
      const onB = Collector.make<string>()
      yield* a.subscribe("t", onA.add)
      yield* b.subscribe("t", onB.add)
      yield* a.publish("t", "1")
      yield* b.publish("t", "2")
      yield* a.publish("other", "not for t")
      yield* a.publish("t", "3")
      yield* Effect.all([onA.awaitCount(3), onB.awaitCount(3)])
      expect(onA.got).toEqual(["1", "2", "3"])
      expect(onB.got).toEqual(["1", "2", "3"])

      yield* redis.kill
      const failed = yield* until(Effect.flip(a.publish("t", "lost")).pipe(Effect.orElseSucceed(() => undefined)), (e) => e !== undefined)
      expect(failed).toBeInstanceOf(BusUnavailable)

      yield* redis.start
      yield* until(subscribers(redis.url, "b:bus:t"), (n) => n === 2)
      yield* until(Effect.exit(b.publish("t", "4")), (exit) => exit._tag === "Success")
      yield* Effect.all([onA.awaitCount(4), onB.awaitCount(4)])
      expect(onA.got.at(-1)).toBe("4")
      expect(onB.got.at(-1)).toBe("4")
    }).pipe(Effect.scoped), 60_000)
})
