/**
 * An effect built by code that may throw, built in the caller's step: the
 * throw becomes the effect's defect, as with `Effect.suspend`, without the
 * step `Effect.suspend` takes when it runs. For per-request code whose caller
 * is already inside a step of its own.
 */
import * as Effect from "effect/Effect"

/** `build()` now; a throw becomes `Effect.die` of what was thrown. */
export const buildNow = <A, E, R>(build: () => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  try {
    return build()
  } catch (defect) {
    return Effect.die(defect)
  }
}
