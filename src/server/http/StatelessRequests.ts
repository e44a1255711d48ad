/**
 * The stateless-era (2026-07-28) requests of one HTTP server transport:
 * each has a stream of its own (no session, no store: nothing to resume)
 * and a handler that runs in its HTTP exchange's scope. Counted, so that
 * Sessions can report them in `stats` and wait for them in `awaitIdle`.
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Latch from "effect/Latch"
import type * as Scope from "effect/Scope"
import { newStreamId } from "./HttpSession.ts"
import type * as KeepAlive from "./KeepAlive.ts"
import * as OutStream from "./OutStream.ts"

export interface StatelessRequests {
  /** A stream for one request, with the transport's keep-alive. */
  readonly requestStreamUnsafe: () => OutStream.OutStream
  /** Runs a request's handler in its request scope (see `Sessions.runStateless`). */
  readonly runStateless: <A, E>(
    scope: Scope.Scope,
    start: () => Effect.Effect<A, E>,
    run: StatelessRun
  ) => Effect.Effect<Fiber.Fiber<A, E>>
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
  const runStateless = <A, E>(scope: Scope.Scope, start: () => Effect.Effect<A, E>, run: StatelessRun) =>
    // Started at once, as a session's work is: scheduled instead, each request pays a scheduler round trip.
    // The fiber's first step counts it, sets its services, registers its end and builds the handler's
    // effect (a throw there is the fiber's defect), so no wrapper steps are needed around the handler.
    // A fiber never started (its scope closed first) was never counted.
    Effect.forkIn(
      Effect.withFiber((fiber) => {
        if (statelessRequests++ === 0) noStateless.closeUnsafe()
        fiber.setContext(run.services(fiber.context))
        fiber.addObserver(() => {
          if (--statelessRequests === 0) noStateless.openUnsafe()
          run.onEnd()
        })
        return start()
      }),
      scope,
      { startImmediately: true }
    )
  return {
    requestStreamUnsafe,
    runStateless,
    running: () => statelessRequests,
    awaitNone: noStateless.await
  }
}
