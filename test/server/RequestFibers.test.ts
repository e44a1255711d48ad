/**
 * The map of fibers serving a session's requests: a fiber is there while it
 * runs and gone once it ends; an id that is taken is refused; `1` and `"1"`
 * are different ids; interrupting, awaiting and closing behave as the
 * session relies on.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Deferred, Effect, Exit, Fiber } from "effect"
import * as RequestFibers from "../../src/server/internal/RequestFibers.ts"

describe("RequestFibers", () => {
  it.effect("holds a fiber while it runs and drops it when it ends, however it ends", () =>
    Effect.gen(function*() {
      const fibers = RequestFibers.make<string>()
      const gate = yield* Deferred.make<string>()
      const fiber = yield* fibers.run(1, Deferred.await(gate))
      expect(fibers.has(1)).toBe(true)
      expect(fibers.has("1")).toBe(false)
      expect(fibers.size()).toBe(1)
      yield* Deferred.succeed(gate, "done")
      expect(yield* Fiber.join(fiber!)).toBe("done")
      expect(fibers.has(1)).toBe(false)

      // Ends while it starts (synchronously): never listed.
      const quick = yield* fibers.run(2, Effect.succeed("now"))
      expect(quick!.pollUnsafe()).toEqual(Exit.succeed("now"))
      expect(fibers.size()).toBe(0)

      const failing = yield* fibers.run(3, Effect.die("boom"))
      yield* Fiber.await(failing!)
      expect(fibers.size()).toBe(0)
    }))

  it.effect("refuses an id that is taken and keeps the running fiber", () =>
    Effect.gen(function*() {
      const fibers = RequestFibers.make<string>()
      const first = yield* fibers.run("a", Effect.never)
      expect(yield* fibers.run("a", Effect.succeed("second"))).toBeUndefined()
      expect(fibers.size()).toBe(1)
      // A different id that reads the same as text is a different request.
      const other = yield* fibers.run(7, Effect.never)
      const text = yield* fibers.run("7", Effect.never)
      expect(other).toBeDefined()
      expect(text).toBeDefined()
      expect(fibers.size()).toBe(3)
      yield* fibers.interrupt("a")
      expect(Exit.hasInterrupts((yield* Fiber.await(first!)))).toBe(true)
      expect(fibers.has("a")).toBe(false)
      yield* fibers.interruptAll
      expect(fibers.size()).toBe(0)
    }))

  it.effect("awaitEmpty completes once the last fiber ends; close interrupts and then refuses", () =>
    Effect.gen(function*() {
      const fibers = RequestFibers.make<number>()
      const gates = yield* Effect.forEach([1, 2, 3], () => Deferred.make<number>())
      yield* Effect.forEach(gates, (gate, i) => fibers.run(i, Deferred.await(gate)))
      const idle = yield* Effect.forkChild(fibers.awaitEmpty)
      yield* Deferred.succeed(gates[0]!, 0)
      yield* Deferred.succeed(gates[2]!, 2)
      yield* Effect.yieldNow
      expect(idle.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(gates[1]!, 1)
      yield* Fiber.join(idle)

      const held = yield* fibers.run(9, Effect.never)
      yield* fibers.close
      expect(Exit.hasInterrupts(yield* Fiber.await(held!))).toBe(true)
      const refused = yield* Effect.exit(fibers.run(10, Effect.succeed(10)))
      expect(Exit.hasInterrupts(refused)).toBe(true)
      yield* fibers.awaitEmpty
    }))

  it.effect("runIn runs at once in the caller's step, hands over the exit, refuses a taken id and a closed map", () =>
    Effect.gen(function*() {
      const fibers = RequestFibers.make<string>()
      const runIn = (id: number | string, effect: Effect.Effect<string>) =>
        Effect.withFiber((parent) => fibers.runIn(parent, id, () => effect, (exit) => Effect.succeed(exit)))
      // Ended while starting: its exit at once, never listed.
      expect(yield* runIn(1, Effect.succeed("now"))).toEqual(Exit.succeed("now"))
      expect(fibers.size()).toBe(0)
      // Still running: listed until it ends, and its exit is what the caller gets.
      const gate = yield* Deferred.make<string>()
      const waiting = yield* Effect.forkChild(runIn(2, Deferred.await(gate)))
      yield* Effect.yieldNow
      expect(fibers.has(2)).toBe(true)
      // Taken: not run, and `then` is handed `undefined`.
      let ranSecond = false
      expect(yield* runIn(2, Effect.sync(() => {
        ranSecond = true
        return "second"
      }))).toBeUndefined()
      expect(ranSecond).toBe(false)
      yield* Deferred.succeed(gate, "done")
      expect(yield* Fiber.join(waiting)).toEqual(Exit.succeed("done"))
      expect(fibers.has(2)).toBe(false)
      // Interrupted by id (a cancel): the caller gets the interruption as an exit.
      const held = yield* Effect.forkChild(runIn(3, Effect.never))
      yield* Effect.yieldNow
      yield* fibers.interrupt(3)
      expect(Exit.hasInterrupts((yield* Fiber.join(held))!)).toBe(true)
      yield* fibers.close
      expect(Exit.hasInterrupts(yield* Effect.exit(runIn(4, Effect.succeed("late"))))).toBe(true)
    }))

  it.effect("runIn starts no fiber for an effect that is an exit when built: `then` reads it as it is", () =>
    Effect.gen(function*() {
      const fibers = RequestFibers.make<string>()
      // The services a fiber would start with are made once per fiber started.
      let fibersStarted = 0
      const services = (callers: Context.Context<never>) => {
        fibersStarted++
        return callers
      }
      const runIn = (id: number, effect: Effect.Effect<string>) =>
        Effect.withFiber((parent) => fibers.runIn(parent, id, () => effect, (exit) => Effect.succeed(exit), services))
      expect(yield* runIn(1, Effect.succeed("built answered"))).toEqual(Exit.succeed("built answered"))
      const failed = yield* runIn(2, Effect.die("refused"))
      expect(failed !== undefined && Exit.isFailure(failed) && Cause.squash(failed.cause)).toBe("refused")
      expect(fibersStarted).toBe(0)
      expect(fibers.size()).toBe(0)
      // Answered in its first step, not as it was built: a fiber runs it.
      expect(yield* runIn(3, Effect.sync(() => "answered at once"))).toEqual(Exit.succeed("answered at once"))
      expect(fibersStarted).toBe(1)
    }))

  it.effect("runIn builds the fiber's effect only when it starts it, and a throw while building is the fiber's defect", () =>
    Effect.gen(function*() {
      const fibers = RequestFibers.make<string>()
      let builds = 0
      const runIn = (id: number, build: () => Effect.Effect<string>) =>
        Effect.withFiber((parent) =>
          fibers.runIn(parent, id, () => {
            builds++
            return build()
          }, (exit) => Effect.succeed(exit))
        )
      const gate = yield* Deferred.make<string>()
      const waiting = yield* Effect.forkChild(runIn(1, () => Deferred.await(gate)))
      yield* Effect.yieldNow
      expect(builds).toBe(1)
      // A taken id: nothing built.
      expect(yield* runIn(1, () => Effect.succeed("second"))).toBeUndefined()
      expect(builds).toBe(1)
      // A throw while building: the fiber dies of it, and the caller gets that exit, not a defect of its own.
      const boom = new Error("boom")
      const thrown = yield* runIn(2, () => {
        throw boom
      })
      expect(thrown !== undefined && Exit.isFailure(thrown) && Cause.squash(thrown.cause)).toBe(boom)
      expect(fibers.has(2)).toBe(false)
      yield* Deferred.succeed(gate, "done")
      expect(yield* Fiber.join(waiting)).toEqual(Exit.succeed("done"))
      // A closed map: nothing built.
      yield* fibers.close
      expect(Exit.hasInterrupts(yield* Effect.exit(runIn(3, () => Effect.succeed("late"))))).toBe(true)
      expect(builds).toBe(2)
    }))

  it.effect("start runs at once with the caller's services, is listed while it runs, refuses a taken id and a closed map", () =>
    Effect.gen(function*() {
      const fibers = RequestFibers.make<string>()
      const gate = yield* Deferred.make<string>()
      const seen: Array<string> = []
      yield* fibers.start(1, Effect.map(Deferred.await(gate), (v) => { seen.push(v); return v }))
      expect(fibers.has(1)).toBe(true)
      // Taken: the second is not run.
      yield* fibers.start(1, Effect.sync(() => { seen.push("second"); return "second" }))
      expect(fibers.size()).toBe(1)
      // Started immediately, and ended while starting: never listed.
      yield* fibers.start(2, Effect.sync(() => { seen.push("now"); return "now" }))
      expect(seen).toEqual(["now"])
      expect(fibers.has(2)).toBe(false)
      // The caller's services reach the fiber.
      class Tag extends Context.Service<Tag, string>()("test/RequestFibers/Tag") {}
      // The fiber finds Tag among the caller's services (the map's type cannot say so).
      const readTag = Effect.map(Tag, (v) => {
        seen.push(v)
        return v
      }) as Effect.Effect<string>
      yield* fibers.start(3, readTag).pipe(Effect.provideService(Tag, "provided"))
      expect(seen).toEqual(["now", "provided"])
      // Or the services made of the caller's.
      yield* fibers.start(5, readTag, (services) => Context.add(services, Tag, "made")).pipe(Effect.provideService(Tag, "provided"))
      expect(seen).toEqual(["now", "provided", "made"])
      seen.splice(2)
      yield* Deferred.succeed(gate, "done")
      yield* fibers.awaitEmpty
      expect(seen).toEqual(["now", "provided", "done"])

      const held = yield* Deferred.make<void>()
      yield* fibers.start(4, Effect.onInterrupt(Effect.never, () => Deferred.succeed(held, undefined)))
      yield* fibers.close
      yield* Deferred.await(held)
      expect(Exit.hasInterrupts(yield* Effect.exit(fibers.start(6, Effect.succeed("late"))))).toBe(true)
    }))
})
