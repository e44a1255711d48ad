/**
 * The stateless-era (2026-07-28) requests of one HTTP server transport:
 * each has a stream of its own (no session, no store: nothing to resume)
 * and a handler that runs in its HTTP exchange's scope. Counted, so that
 * Sessions can report them in `stats` and wait for them in `awaitIdle`.
 */
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
  /** Runs a request's handler in the current request scope (see `Sessions.runStateless`). */
  readonly runStateless: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<Fiber.Fiber<A, E>, never, Scope.Scope>
  /** Handlers running now. */
  readonly running: () => number
  /** Completes when no handler runs. */
  readonly awaitNone: Effect.Effect<void>
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
  const runStateless = <A, E>(effect: Effect.Effect<A, E>) =>
    Effect.uninterruptible(Effect.suspend(() => {
      if (statelessRequests++ === 0) noStateless.closeUnsafe()
      // Started at once, as a session's work is: scheduled instead, each request pays a scheduler round trip.
      return Effect.forkScoped(Effect.ensuring(
        Effect.interruptible(effect),
        Effect.sync(() => {
          if (--statelessRequests === 0) noStateless.openUnsafe()
        })
      ), { startImmediately: true })
    }))
  return {
    requestStreamUnsafe,
    runStateless,
    running: () => statelessRequests,
    awaitNone: noStateless.await
  }
}
