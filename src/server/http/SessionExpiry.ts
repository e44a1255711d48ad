/**
 * How a session of the HTTP server ends on its own: after `idleTimeoutMs`
 * with nothing to do, or when its client has not finished the handshake by
 * `handshakeTimeoutMs`. Each watch runs in the session's scope; the session
 * is let go (`drop`) from the scope of all sessions.
 *
 * Expiry never interrupts work: it only looks when nothing runs and no
 * request or stream is open, and it closes from outside the session scope.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import type * as Scope from "effect/Scope"
import { runsWork, type Session } from "./HttpSession.ts"

/** Lets go of a session; forked in the scope of all sessions, so the session's own scope can close. */
export interface Expiry {
  readonly drop: (session: Session) => Effect.Effect<void>
  readonly parentScope: Scope.Scope
}

// One generator function for each watch, not one per session (docs/design.md, "Per-request code and the old generation").

export const expireWhenIdle = Effect.fnUntraced(function*(
  expiry: Expiry,
  session: Session,
  idleMs: number
): Effect.fn.Return<void> {
  while (!session.closed) {
    const now = yield* Clock.currentTimeMillis
    const busy = session.active > 0 || (yield* session.server.inFlight) > 0 || (yield* FiberSet.size(session.work)) > 0
    const idleFor = now - session.lastActive
    if (!busy && idleFor >= idleMs) {
      yield* Effect.forkIn(expiry.drop(session), expiry.parentScope)
      return
    }
    yield* Effect.sleep(Duration.millis(busy ? idleMs : idleMs - idleFor))
  }
})

// A client that never finishes the handshake has no use for its streams,
// so only running requests hold the session past the deadline.
export const expireUnlessInitialized = Effect.fnUntraced(function*(
  expiry: Expiry,
  session: Session,
  timeoutMs: number
): Effect.fn.Return<void> {
  yield* Effect.sleep(Duration.millis(timeoutMs))
  while (!session.closed && !session.initialized) {
    if (!runsWork(session) && (yield* session.server.inFlight) === 0) {
      yield* Effect.forkIn(expiry.drop(session), expiry.parentScope)
      return
    }
    yield* FiberSet.awaitEmpty(session.work)
  }
})
