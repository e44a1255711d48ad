import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Scheduler } from "effect"
import * as SharedDispatcher from "../../src/internal/SharedDispatcher.ts"

/** A scheduler that counts the event-loop callbacks its dispatchers ask for. */
const counting = () => {
  let callbacks = 0
  const scheduler = new Scheduler.MixedScheduler("async", (f) => {
    callbacks++
    const timer = setImmediate(f)
    return () => clearImmediate(timer)
  })
  return { scheduler, callbacks: () => callbacks }
}

/** Forks `n` fibers under `scheduler` that each yield once; returns their dispatchers. */
const yieldingFibers = (scheduler: Scheduler.Scheduler, n: number) =>
  Effect.gen(function*() {
    const fibers = yield* Effect.forEach(
      Array.from({ length: n }),
      () => Effect.forkChild(Effect.andThen(Effect.yieldNow, Effect.withFiber((f) => Effect.succeed(f.currentDispatcher)))),
      { concurrency: 1 }
    )
    return yield* Fiber.joinAll(fibers)
  }).pipe(Effect.provideService(Scheduler.Scheduler, scheduler))

describe("SharedDispatcher", () => {
  it.live("fibers of a shared scheduler resume from one event-loop callback, not one each", () =>
    Effect.gen(function*() {
      const own = counting()
      const ownDispatchers = yield* yieldingFibers(own.scheduler, 10)
      expect(new Set(ownDispatchers).size).toBe(10)
      expect(own.callbacks()).toBeGreaterThanOrEqual(10)

      const shared = counting()
      const sharedDispatchers = yield* yieldingFibers(SharedDispatcher.share(shared.scheduler), 10)
      expect(new Set(sharedDispatchers).size).toBe(1)
      expect(shared.callbacks()).toBeLessThanOrEqual(2)
    }))

  it("wraps a scheduler once, keeps its execution mode and yield budget, and never wraps a wrapper", () => {
    const base = new Scheduler.MixedScheduler("sync")
    const wrapper = SharedDispatcher.share(base)
    expect(SharedDispatcher.share(base)).toBe(wrapper)
    expect(SharedDispatcher.share(wrapper)).toBe(wrapper)
    expect(wrapper.executionMode).toBe("sync")
    expect(wrapper.makeDispatcher()).toBe(wrapper.makeDispatcher())
    const fiber = { currentOpCount: 5000, cache: { maxOpsBeforeYield: 2048 } } as never
    expect(wrapper.shouldYield(fiber)).toBe(base.shouldYield(fiber))
  })

})
