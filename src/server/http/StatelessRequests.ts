/**
 * The stateless-era (2026-07-28) requests of one HTTP server transport:
 * each has a stream of its own (no session, no store: nothing to resume)
 * and a handler started at once in its request's step, which the request
 * interrupts if it ends first. Counted, so that Sessions can report them in
 * `stats` and wait for them in `awaitIdle`.
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
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
   * fiber when the request ends before it.
   */
  readonly runStatelessUnsafe: <A, E>(
    parent: Fiber.Fiber<unknown, unknown>,
    start: () => Effect.Effect<A, E>,
    run: StatelessRun
  ) => Fiber.Fiber<A, E>
  /** Handlers running now. */
  readonly running: () => number
  /** Completes when no handler runs. */
  readonly awaitNone: Effect.Effect<void>
}

/** How a stateless handler runs: the services it sees, and what happens when it ends. */
export interface StatelessRun {
  /** The handler's services, from those of the fiber that starts it. */
  readonly services: (current: Context.Context<never>) => Context.Context<never>
  /** Called once the handler's fiber has ended, however it ended. */
  readonly onEnd: () => void
}

export const make = (options: {
  readonly keepAlive: KeepAlive.Ticker
  readonly maxBufferedBytes: number
  readonly onDropped: () => void
}): StatelessRequests => {
  let statelessRequests = 0
  const noStateless = Latch.makeUnsafe(true)
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
  ): Fiber.Fiber<A, E> => {
    // Started at once, as a session's work is: scheduled instead, each request pays a scheduler round trip.
    // Counted before it starts, so that a handler done while it starts is counted and uncounted alike.
    if (statelessRequests++ === 0) noStateless.closeUnsafe()
    const ended = () => {
      if (--statelessRequests === 0) noStateless.openUnsafe()
      run.onEnd()
    }
    // The handler's effect is built in the caller's step: a throw there is the fiber's defect.
    const fiber = Effect.runForkWith(run.services(parent.context))(buildNow(start))
    // Called at once for a fiber that ended while it started.
    fiber.addObserver(ended)
    return fiber
  }
  return {
    requestStreamUnsafe,
    runStatelessUnsafe,
    running: () => statelessRequests,
    awaitNone: noStateless.await
  }
}
