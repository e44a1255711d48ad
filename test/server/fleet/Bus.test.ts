/**
 * The in-process bus: a publish reaches every subscriber of its topic once
 * (the same function subscribed twice, twice), no other topic; a
 * subscriber that fails or dies does not keep the message from the others;
 * closing a subscription's scope ends it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as Bus from "../../../src/server/Bus.ts"

describe("Bus.makeMemory", () => {
  it.effect("delivers to each subscriber of the topic once, contains failures, and stops at scope close", () =>
    Effect.gen(function*() {
      const bus = yield* Bus.makeMemory
      const got: Array<string> = []
      const record = (who: string) => (m: string) => Effect.sync(() => void got.push(`${who}:${m}`))
      const scope = yield* Scope.make()
      yield* Scope.provide(bus.subscribe("t", record("a")), scope)
      yield* Scope.provide(bus.subscribe("t", () => Effect.die("boom")), scope)
      yield* Scope.provide(bus.subscribe("t", () => Effect.fail("nope") as never), scope)
      const twice = record("b")
      yield* Scope.provide(bus.subscribe("t", twice), scope)
      yield* Scope.provide(bus.subscribe("t", twice), scope)
      yield* Scope.provide(bus.subscribe("u", record("u")), scope)
      yield* bus.publish("t", "1")
      expect(got).toEqual(["a:1", "b:1", "b:1"])
      yield* Scope.close(scope, Exit.void)
      yield* bus.publish("t", "2")
      yield* bus.publish("u", "2")
      expect(got).toEqual(["a:1", "b:1", "b:1"])
    }))
})
