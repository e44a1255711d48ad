/**
 * The fibers serving a session's requests, by JSON-RPC id.
 *
 * A request id is a string or a number, compared as JSON-RPC compares them
 * (`1` and `"1"` differ). Clients number their requests, so the table is a
 * ring of slots (SlotTable; other ids go to its overflow `Map`): a `Map`
 * entry per request carried every running fiber into the old generation,
 * about a third of a stdio server's CPU per request for a handler that
 * does not end at once (BENCHMARKS.md, "Running requests in slots"), and
 * `FiberMap`'s hashed map cost ~5 % more still. A fiber leaves the table
 * when it ends; closing interrupts every fiber still running and refuses
 * new ones.
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as JsonRpc from "../../JsonRpc.ts"
import { buildNow } from "../../internal/BuildNow.ts"
import * as SlotTable from "../../internal/SlotTable.ts"

export interface RequestFibers<A> {
  readonly has: (id: JsonRpc.RequestId) => boolean
  readonly size: () => number
  /**
   * Starts `effect` at once in a fiber of its own, outliving the caller,
   * under `id`. Returns `undefined` when `id` is taken (the running fiber
   * keeps it); interrupts the caller once closed.
   */
  readonly run: (id: JsonRpc.RequestId, effect: Effect.Effect<A>) => Effect.Effect<Fiber.Fiber<A> | undefined>
  /**
   * `run` for a caller that waits for the fiber, from inside a step it takes
   * (`Effect.withFiber`, whose fiber is `parent`): `then` of the fiber's exit
   * once it ends, or of `undefined` when `id` is taken, run by the caller. A
   * fiber that ended while it started costs no step more, and an effect that
   * is an `Exit` when built gets no fiber at all. The fiber's effect
   * is built in that step, only when it starts (a throw is the fiber's
   * defect). With `services`, as in `start`.
   */
  readonly runIn: <B>(
    parent: Fiber.Fiber<unknown, unknown>,
    id: JsonRpc.RequestId,
    build: () => Effect.Effect<A>,
    then: (exit: Exit.Exit<A> | undefined) => Effect.Effect<B>,
    services?: ((callers: Context.Context<never>) => Context.Context<never>) | undefined
  ) => Effect.Effect<B>
  /**
   * `run` for a caller that needs no handle on the fiber: one step less per
   * request. With `services`, the fiber runs with the services it makes of
   * the caller's (instead of the caller's own).
   */
  readonly start: (
    id: JsonRpc.RequestId,
    effect: Effect.Effect<A>,
    services?: ((callers: Context.Context<never>) => Context.Context<never>) | undefined
  ) => Effect.Effect<void>
  /** Interrupts the fiber under `id`, if any, and waits for it to end. */
  readonly interrupt: (id: JsonRpc.RequestId) => Effect.Effect<void>
  /** Interrupts every running fiber and waits for them to end. */
  readonly interruptAll: Effect.Effect<void>
  /** Completes once no fiber is running (or the map is closed). */
  readonly awaitEmpty: Effect.Effect<void>
  /** Interrupts every fiber and refuses new ones. */
  readonly close: Effect.Effect<void>
}

export const make = <A>(): RequestFibers<A> => {
  const fibers = SlotTable.make<JsonRpc.RequestId, Fiber.Fiber<A>>()
  let closed = false

  const track = (id: JsonRpc.RequestId, fiber: Fiber.Fiber<A>) => {
    fibers.set(id, fiber)
    fiber.addObserver(() => {
      if (fibers.get(id) === fiber) fibers.delete(id)
    })
  }

  /**
   * Starts `effect` now, as `forkDetach` with `startImmediately` does (no
   * parent link), with `parent`'s services or those `services` makes of
   * them, and lists it under `id` unless it ended while it started.
   */
  const launch = (
    parent: Fiber.Fiber<unknown, unknown>,
    id: JsonRpc.RequestId,
    effect: Effect.Effect<A>,
    services: ((callers: Context.Context<never>) => Context.Context<never>) | undefined
  ): Fiber.Fiber<A> => {
    const fiber = Effect.runForkWith(services === undefined ? parent.context : services(parent.context))(effect)
    if (fiber.pollUnsafe() === undefined) track(id, fiber)
    return fiber
  }

  const interruptAll = Effect.suspend(() => fibers.size() === 0 ? Effect.void : Fiber.interruptAll(fibers.values()))

  return {
    has: (id) => fibers.has(id),
    size: () => fibers.size(),
    run: (id, effect) =>
      Effect.withFiber((parent) => {
        if (closed) return Effect.interrupt
        if (fibers.has(id)) return Effect.succeed(undefined)
        return Effect.succeed(launch(parent, id, effect, undefined))
      }),
    runIn: (parent, id, build, then, services) => {
      if (closed) return Effect.interrupt
      if (fibers.has(id)) return then(undefined)
      const effect = buildNow(build)
      // Answered while it was built: there is nothing for a fiber to run, nor anything to interrupt.
      if (Exit.isExit(effect)) return then(effect as Exit.Exit<A>)
      const fiber = launch(parent, id, effect, services)
      const done = fiber.pollUnsafe()
      return done !== undefined ? then(done) : Effect.flatMap(Fiber.await(fiber), then)
    },
    start: (id, effect, services) =>
      Effect.withFiber((parent) => {
        if (closed) return Effect.interrupt
        if (fibers.has(id)) return Effect.void
        launch(parent, id, effect, services)
        return Effect.void
      }),
    interrupt: (id) =>
      Effect.suspend(() => {
        const fiber = fibers.get(id)
        return fiber === undefined ? Effect.void : Fiber.interrupt(fiber)
      }),
    interruptAll,
    awaitEmpty: Effect.whileLoop({
      while: () => !closed && fibers.size() > 0,
      body: () => Fiber.await(fibers.first()!),
      step: () => {}
    }),
    close: Effect.suspend(() => {
      if (closed) return Effect.void
      closed = true
      return interruptAll
    })
  }
}
