/**
 * A wake-up that happens once, whose Deferred is made only if someone waits
 * before it: most exchanges end before anyone would (the handler answered as
 * it started), and those then allocate nothing to wait on.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"

export class WakeOnce {
  woken = false
  #waiting: Deferred.Deferred<void> | undefined = undefined
  wake(): void {
    this.woken = true
    if (this.#waiting !== undefined) Deferred.doneUnsafe(this.#waiting, Effect.void)
  }
  /** Completes once `wake` has run (at once, if it has). */
  get await(): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.woken) return Effect.void
      this.#waiting ??= Deferred.makeUnsafe<void>()
      return Deferred.await(this.#waiting)
    })
  }
}
