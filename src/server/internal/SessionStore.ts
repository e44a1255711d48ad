/**
 * The values of the `SessionState` slots of one session (or, with no
 * session behind a request, of one request), made on first use, and the
 * scope their `initial` effects acquire resources in, closed when the
 * session ends.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import type { SessionState } from "../SessionState.ts"

export interface SessionStore {
  /** The slot's `Ref`, made on its first use here; concurrent first uses share one `initial` run. */
  readonly get: <A, E, R>(state: SessionState<A, E, R>) => Effect.Effect<Ref.Ref<A>, E, R>
  /** Runs the finalizers of the slots made so far, newest first. A use after this is a defect. */
  readonly close: Effect.Effect<void>
}

type Slot = Deferred.Deferred<Ref.Ref<unknown>, unknown>

export const make = (): SessionStore => {
  const scope = Scope.makeUnsafe("sequential")
  const slots = new Map<SessionState<any, any, any>, Slot>()
  let closed = false

  const get = <A, E, R>(state: SessionState<A, E, R>): Effect.Effect<Ref.Ref<A>, E, R> =>
    Effect.suspend((): Effect.Effect<Ref.Ref<A>, E, R> => {
      if (closed) return Effect.die(new Error(`session state "${state.name}" used after its session ended`))
      const found = slots.get(state) as Deferred.Deferred<Ref.Ref<A>, E> | undefined
      if (found !== undefined) {
        // A first use that was interrupted left no value: this use makes it.
        return Effect.catchCause(Deferred.await(found), (cause) =>
          Cause.hasInterruptsOnly(cause) && slots.get(state) !== (found as Slot) ? get(state) : Effect.failCause(cause))
      }
      const made = Deferred.makeUnsafe<Ref.Ref<A>, E>()
      slots.set(state, made as Slot)
      // Its own scope inside the session's: a failed `initial` releases what it acquired at once.
      const own = Scope.forkUnsafe(scope, "sequential")
      return Effect.uninterruptibleMask((restore) =>
        restore(Scope.provide(state.initial, own)).pipe(
          Effect.exit,
          Effect.flatMap((exit): Effect.Effect<Ref.Ref<A>, E> => {
            if (Exit.isSuccess(exit)) {
              const ref = Ref.makeUnsafe(exit.value)
              Deferred.doneUnsafe(made, Exit.succeed(ref))
              const release = state.release
              // Added after `initial`'s finalizers, so it runs before them, while what they release is still there.
              return release === undefined
                ? Effect.succeed(ref)
                : Effect.as(Scope.addFinalizer(own, Effect.flatMap(Ref.get(ref), release)), ref)
            }
            if (slots.get(state) === (made as Slot)) slots.delete(state)
            const failed = exit as Exit.Exit<never, E>
            Deferred.doneUnsafe(made, failed)
            return Effect.andThen(Scope.close(own, failed), failed)
          })
        )
      )
    })

  const close = Effect.suspend(() => {
    if (closed) return Effect.void
    closed = true
    slots.clear()
    return Scope.close(scope, Exit.void)
  })

  return { get, close }
}
