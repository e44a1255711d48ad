/**
 * `notifications/cancelled` for requests not running yet, remembered so
 * that a request arriving after its own cancel (separate HTTP POSTs can
 * overtake each other) is dropped without running: no handler, no reply.
 * The newest `capacity` ids are kept (default 256), each for `ttlMs`
 * (default 60 s). Without options nothing is kept: on an ordered stream a
 * cancel cannot precede its request.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as JsonRpc from "../../JsonRpc.ts"

export interface EarlyCancels {
  /** Whether no cancel is on record: a request has nothing to consult first. */
  readonly none: () => boolean
  /** Records a cancel of `id`, unless `id` is running (the cancel reaches it there). */
  readonly remember: (id: JsonRpc.RequestId) => Effect.Effect<void>
  /**
   * Whether the request was cancelled before it arrived (consumes the
   * record). Looked at when the effect runs, not when it is built: a caller
   * may build the request's effect, wait (a store write), then run it, and
   * a cancel that came meanwhile counts.
   */
  readonly consume: (id: JsonRpc.RequestId) => Effect.Effect<boolean>
}

export const make = (
  options: { readonly capacity?: number | undefined; readonly ttlMs?: number | undefined } | undefined,
  isRunning: (id: JsonRpc.RequestId) => boolean
): EarlyCancels => {
  // id → when its cancel arrived; Map order is arrival order, so the oldest go first.
  const kept = new Map<JsonRpc.RequestId, number>()
  const capacity = options?.capacity ?? 256
  const ttlMs = options?.ttlMs ?? 60_000
  const prune = (now: number) => {
    for (const [id, at] of kept) {
      if (kept.size <= capacity && now - at < ttlMs) break
      kept.delete(id)
    }
  }
  return {
    none: () => kept.size === 0,
    remember: (id) =>
      options === undefined
        ? Effect.void
        : Effect.suspend(() =>
          isRunning(id) ? Effect.void : Effect.map(Clock.currentTimeMillis, (now) => {
            kept.delete(id)
            kept.set(id, now)
            prune(now)
          })
        ),
    consume: (id) =>
      Effect.suspend(() =>
        kept.size === 0
          ? Effect.succeed(false)
          : Effect.map(Clock.currentTimeMillis, (now) => {
            prune(now)
            return kept.delete(id)
          })
      )
  }
}
