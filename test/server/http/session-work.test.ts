/**
 * Work a POST hands to its session: started at once in the session's work
 * set, outliving the POST that started it, its slots held until it ends;
 * in a session already closed it never starts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FiberSet, Scope } from "effect"
import type { Session } from "../../../src/server/http/HttpSession.ts"
import { type Grant, runHoldingSlots } from "../../../src/server/http/SessionSlots.ts"

const grantRecording = (held: Array<Fiber.Fiber<unknown, unknown>>): Grant => ({
  granted: 1,
  short: undefined,
  holdUntilDoneUnsafe: (fiber) => void held.push(fiber)
})

describe("a session's work", () => {
  it.effect("starts at once in the session's work set, holds its slots, and outlives the POST that started it", () =>
    Effect.gen(function*() {
      const work = yield* FiberSet.make<unknown, unknown>()
      const session = { work } as unknown as Session
      const held: Array<Fiber.Fiber<unknown, unknown>> = []
      const gate = yield* Deferred.make<string>()
      const started: Array<string> = []
      const post = yield* Effect.forkChild(
        runHoldingSlots(session, grantRecording(held), Effect.andThen(Effect.sync(() => started.push("work")), Deferred.await(gate)))
      )
      const fiber = yield* Fiber.join(post)
      expect(started).toEqual(["work"])
      expect(held).toEqual([fiber])
      expect(yield* FiberSet.size(work)).toBe(1)
      // The POST is over (its client went away): the work goes on.
      yield* Fiber.interrupt(post)
      yield* Deferred.succeed(gate, "answered")
      expect(yield* Fiber.await(fiber)).toEqual(Exit.succeed("answered"))
      expect(yield* FiberSet.size(work)).toBe(0)
    }))

  it.effect("in a closed session never starts: its fiber is interrupted, and the grant is handed that fiber", () =>
    Effect.gen(function*() {
      // The set closes with the scope it was made in, as a session's does when the session ends.
      const scope = yield* Scope.make()
      const work = yield* Scope.provide(FiberSet.make<unknown, unknown>(), scope)
      yield* Scope.close(scope, Exit.void)
      expect(work.state._tag).toBe("Closed")
      const session = { work } as unknown as Session
      const held: Array<Fiber.Fiber<unknown, unknown>> = []
      let ran = false
      const fiber = yield* runHoldingSlots(session, grantRecording(held), Effect.sync(() => {
        ran = true
      }))
      expect(ran).toBe(false)
      expect(Exit.hasInterrupts((yield* Fiber.await(fiber)) as Exit.Exit<unknown, unknown>)).toBe(true)
      expect(held).toEqual([fiber])
    }))
})
