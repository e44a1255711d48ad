/**
 * The stateless-era (2026-07-28) requests of one HTTP server transport:
 * each has a stream of its own (no session, no store: nothing to resume)
 * and a handler started at once in its request's step, which the request
 * interrupts if it ends first. Counted, so that Sessions can report them in
 * `stats` and wait for them in `awaitIdle`; held, so that a shutdown past
 * its grace period interrupts them as it does a session's work (nothing else
 * would before the listener cuts their connections).
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Latch from "effect/Latch"
import { buildNow } from "../../internal/BuildNow.ts"
import { newStreamId } from "./HttpSession.ts"
import type * as KeepAlive from "./KeepAlive.ts"
import * as OutStream from "./OutStream.ts"

export interface StatelessRequests {
  /** A stream for one request, with the transport's keep-alive. */
  readonly requestStreamUnsafe: () => OutStream.OutStream
  /**
   * Starts a request's handler at once, in the step of `parent` (the
   * request's fiber) that calls this, with the services `run` makes of
   * `parent`'s. Not tied to any scope: whoever calls this interrupts the
   * fiber when the request ends before it. A handler whose effect is an
   * `Exit` when built needs no fiber: that `Exit` comes back instead.
   */
  readonly runStatelessUnsafe: <A, E>(
    parent: Fiber.Fiber<unknown, unknown>,
    start: () => Effect.Effect<A, E>,
    run: StatelessRun
  ) => Fiber.Fiber<A, E> | Exit.Exit<A, E>
  /** Handlers running now. */
  readonly running: () => number
  /** Completes when no handler runs. */
  readonly awaitNone: Effect.Effect<void>
  /**
   * The transport is shutting down: each handler still running is told
   * (`StatelessRun.onShutdown`) and interrupted; completes when they have ended.
   */
  readonly interruptAll: Effect.Effect<void>
}

/** How a stateless handler runs: the services it sees, and what happens when it ends. */
export interface StatelessRun {
  /** The handler's services, from those of the fiber that starts it. */
  readonly services: (current: Context.Context<never>) => Context.Context<never>
  /** Called once the handler's fiber has ended, however it ended. */
  readonly onEnd: () => void
  /** Called when the transport shuts down with the handler still running, just before it is interrupted. */
  readonly onShutdown: () => Effect.Effect<void>
}

export const make = (options: {
  readonly keepAlive: KeepAlive.Ticker
  readonly maxBufferedBytes: number
  readonly onDropped: () => void
}): StatelessRequests => {
  let statelessRequests = 0
  const noStateless = Latch.makeUnsafe(true)
  const running = new Map<Fiber.Fiber<unknown, unknown>, StatelessRun>()
  const requestStreamUnsafe = () =>
    OutStream.makeUnsafe({
      streamId: newStreamId(),
      store: undefined,
      keepAlive: options.keepAlive,
      maxBufferedBytes: options.maxBufferedBytes,
      onDropped: options.onDropped
    })
  const runStatelessUnsafe = <A, E>(
    parent: Fiber.Fiber<unknown, unknown>,
    start: () => Effect.Effect<A, E>,
    run: StatelessRun
  ): Fiber.Fiber<A, E> | Exit.Exit<A, E> => {
    // The handler's effect is built in the caller's step: a throw there is the fiber's defect.
    const effect = buildNow(start)
    // Answered while it was built: no fiber to run it, nothing to count or to interrupt.
    if (Exit.isExit(effect)) {
      run.onEnd()
      return effect as Exit.Exit<A, E>
    }
    // Counted before it starts, so that a handler done while it starts is counted and uncounted alike.
    if (statelessRequests++ === 0) noStateless.closeUnsafe()
    // Started at once, as a session's work is: scheduled instead, each request pays a scheduler round trip.
    const fiber = Effect.runForkWith(run.services(parent.context))(effect)
    let held = false
    // Called at once for a fiber that ended while it started.
    fiber.addObserver(() => {
      if (held) running.delete(fiber)
      if (--statelessRequests === 0) noStateless.openUnsafe()
      run.onEnd()
    })
    // Only a handler still running after its start is held: most answer in it, and cost nothing here.
    if (fiber.pollUnsafe() === undefined) {
      held = true
      running.set(fiber, run)
    }
    return fiber
  }
  const interruptAll = Effect.suspend(() =>
    Effect.forEach(
      [...running],
      ([fiber, run]) => Effect.andThen(run.onShutdown(), Fiber.interrupt(fiber)),
      { concurrency: "unbounded", discard: true }
    )
  )
  return {
    requestStreamUnsafe,
    runStatelessUnsafe,
    running: () => statelessRequests,
    awaitNone: noStateless.await,
    interruptAll
  }
}
