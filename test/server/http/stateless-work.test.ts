/**
 * A stateless-era request's handler: started at once in the caller's step
 * with the services made for it, counted while it runs, its end reported
 * once however it ends (at once for a handler done while it starts); at
 * shutdown the ones still running are told, then interrupted.
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

describe("a stateless request's handler", () => {
  it.effect("done while it starts: its exit is there when the call returns, its end reported, nothing counted", () =>
    Effect.gen(function*() {
      const stateless = requests()
      const { ends, run } = recording()
      const parent = yield* Effect.withFiber((fiber) => Effect.succeed(fiber))
      const fiber = stateless.runStatelessUnsafe(parent, () => Effect.map(Effect.serviceOption(Marker), Option.getOrUndefined), run)
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
      const fiber = stateless.runStatelessUnsafe(
        parent,
        () => Effect.andThen(Effect.sync(() => started.push("started")), Deferred.await(gate)),
        run
      )
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

  it.effect("interrupted, or thrown while its effect is built: the fiber's exit says so, and it is uncounted", () =>
    Effect.gen(function*() {
      const stateless = requests()
      const { ends, run } = recording()
      const parent = yield* Effect.withFiber((fiber) => Effect.succeed(fiber))
      const waiting = stateless.runStatelessUnsafe(parent, () => Effect.never, run)
      expect(stateless.running()).toBe(1)
      yield* Fiber.interrupt(waiting)
      expect(Exit.hasInterrupts(yield* Fiber.await(waiting))).toBe(true)
      const thrown = stateless.runStatelessUnsafe(parent, () => {
        throw new Error("built badly")
      }, run)
      const exit = yield* Fiber.await(thrown)
      expect(Exit.isFailure(exit) && String(exit.cause)).toContain("built badly")
      expect(stateless.running()).toBe(0)
      expect(ends).toEqual(["end", "end"])
    }))

  it.effect("shutdown: each handler still running is told, then interrupted; one that ended is neither", () =>
    Effect.gen(function*() {
      const stateless = requests()
      const parent = yield* Effect.withFiber((fiber) => Effect.succeed(fiber))
      const done = recording()
      const finished = stateless.runStatelessUnsafe(parent, () => Effect.succeed("answered"), done.run)
      const waiting = [recording(), recording()].map((r) => ({ ...r, fiber: stateless.runStatelessUnsafe(parent, () => Effect.never, r.run) }))
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
