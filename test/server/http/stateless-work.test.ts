/**
 * A stateless-era request's handler: started at once in the caller's step
 * with the services made for it, counted while it runs, its end reported
 * once however it ends (at once for a handler done while it starts, with
 * no fiber at all for one answered as it was built); at shutdown the ones
 * still running are told, then interrupted.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Option } from "effect"
import * as KeepAlive from "../../../src/server/http/KeepAlive.ts"
import * as StatelessRequests from "../../../src/server/http/StatelessRequests.ts"

class Marker extends Context.Service<Marker, string>()("test/Marker") {}

const requests = () => StatelessRequests.make({ keepAlive: KeepAlive.none, maxBufferedBytes: 1024, onDropped: () => {} })

/** A run that gives the handler `Marker` and records its ends. */
const recording = () => {
  const ends: Array<string> = []
  const run: StatelessRequests.StatelessRun = {
    services: (current) => Context.add(current, Marker, "handler's"),
    onEnd: () => void ends.push("end"),
    onShutdown: () => Effect.sync(() => void ends.push("told of the shutdown"))
  }
  return { ends, run }
}

/** The fiber a handler runs in: every handler here but the one answered as it was built has one. */
const fiberOf = <A, E>(run: Fiber.Fiber<A, E> | Exit.Exit<A, E>): Fiber.Fiber<A, E> => {
  if (Exit.isExit(run)) throw new Error("expected a fiber, got an exit")
  return run
}

describe("a stateless request's handler", () => {
  it.effect("answered as it was built (an exit): no fiber, its end reported, nothing counted", () =>
    Effect.gen(function*() {
      const stateless = requests()
      const { ends, run } = recording()
      const parent = yield* Effect.withFiber((fiber) => Effect.succeed(fiber))
      expect(stateless.runStatelessUnsafe(parent, () => Effect.succeed("answered"), run)).toEqual(Exit.succeed("answered"))
      const thrown = stateless.runStatelessUnsafe(parent, () => {
        throw new Error("built badly")
      }, run)
      expect(Exit.isExit(thrown) && Exit.isFailure(thrown) && String(thrown.cause)).toContain("built badly")
      expect(ends).toEqual(["end", "end"])
      expect(stateless.running()).toBe(0)
      yield* stateless.awaitNone
    }))

  it.effect("done while it starts: its exit is there when the call returns, its end reported, nothing counted", () =>
    Effect.gen(function*() {
      const stateless = requests()
      const { ends, run } = recording()
      const parent = yield* Effect.withFiber((fiber) => Effect.succeed(fiber))
      const fiber = fiberOf(
        stateless.runStatelessUnsafe(parent, () => Effect.map(Effect.serviceOption(Marker), Option.getOrUndefined), run)
      )
      expect(fiber.pollUnsafe()).toEqual(Exit.succeed("handler's"))
      expect(ends).toEqual(["end"])
      expect(stateless.running()).toBe(0)
      yield* stateless.awaitNone
    }))

  it.effect("still running: counted until it ends, awaitNone waits for it, its end reported once", () =>
    Effect.gen(function*() {
      const stateless = requests()
      const { ends, run } = recording()
      const gate = yield* Deferred.make<string>()
      const parent = yield* Effect.withFiber((fiber) => Effect.succeed(fiber))
      const started: Array<string> = []
      const fiber = fiberOf(stateless.runStatelessUnsafe(
        parent,
        () => Effect.andThen(Effect.sync(() => started.push("started")), Deferred.await(gate)),
        run
      ))
      // Started in the caller's step, not scheduled.
      expect(started).toEqual(["started"])
      expect(stateless.running()).toBe(1)
      expect(ends).toEqual([])
      const idle = yield* Effect.forkChild(stateless.awaitNone)
      yield* Effect.yieldNow
      expect(idle.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(gate, "answered")
      expect(yield* Fiber.await(fiber)).toEqual(Exit.succeed("answered"))
      yield* Fiber.join(idle)
      expect(stateless.running()).toBe(0)
      expect(ends).toEqual(["end"])
    }))

  it.effect("interrupted: the fiber's exit says so, and it is uncounted", () =>
    Effect.gen(function*() {
      const stateless = requests()
      const { ends, run } = recording()
      const parent = yield* Effect.withFiber((fiber) => Effect.succeed(fiber))
      const waiting = fiberOf(stateless.runStatelessUnsafe(parent, () => Effect.never, run))
      expect(stateless.running()).toBe(1)
      yield* Fiber.interrupt(waiting)
      expect(Exit.hasInterrupts(yield* Fiber.await(waiting))).toBe(true)
      expect(stateless.running()).toBe(0)
      expect(ends).toEqual(["end"])
    }))

  it.effect("shutdown: each handler still running is told, then interrupted; one that ended is neither", () =>
    Effect.gen(function*() {
      const stateless = requests()
      const parent = yield* Effect.withFiber((fiber) => Effect.succeed(fiber))
      const done = recording()
      const finished = fiberOf(stateless.runStatelessUnsafe(parent, () => Effect.as(Effect.yieldNow, "answered"), done.run))
      yield* Fiber.await(finished)
      const waiting = [recording(), recording()].map((r) => ({
        ...r,
        fiber: fiberOf(stateless.runStatelessUnsafe(parent, () => Effect.never, r.run))
      }))
      expect(stateless.running()).toBe(2)
      yield* stateless.interruptAll
      expect(yield* Fiber.await(finished)).toEqual(Exit.succeed("answered"))
      expect(done.ends).toEqual(["end"])
      for (const w of waiting) {
        expect(Exit.hasInterrupts(yield* Fiber.await(w.fiber))).toBe(true)
        expect(w.ends).toEqual(["told of the shutdown", "end"])
      }
      expect(stateless.running()).toBe(0)
      yield* stateless.interruptAll
      yield* stateless.awaitNone
    }))
})
