/**
 * Wake-up callbacks by key (a stream, a task), for followers that wait for
 * a store to grow: a follower registers for as long as its scope lasts, an
 * append wakes the key's followers, a reconnect wakes them all (what was
 * announced meanwhile was lost).
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

export interface Wakers {
  readonly wake: (key: string) => void
  readonly wakeAll: () => void
  /** Calls `onWake` on every wake-up of `key` until the scope closes. */
  readonly register: (key: string, onWake: () => void) => Effect.Effect<void, never, Scope.Scope>
}

export const make = (): Wakers => {
  const byKey = new Map<string, Set<() => void>>()
  return {
    wake: (key) => {
      const set = byKey.get(key)
      if (set !== undefined) for (const onWake of set) onWake()
    },
    wakeAll: () => {
      for (const set of byKey.values()) for (const onWake of set) onWake()
    },
    register: (key, onWake) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          let set = byKey.get(key)
          if (set === undefined) byKey.set(key, set = new Set())
          set.add(onWake)
        }),
        () =>
          Effect.sync(() => {
            const set = byKey.get(key)
            set?.delete(onWake)
            if (set?.size === 0) byKey.delete(key)
          })
      )
  }
}
