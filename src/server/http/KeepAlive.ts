/**
 * Keep-alive comments for the SSE connections of one transport: a single
 * ticker feeds every idle connection a comment each interval, so an open
 * connection costs a set entry rather than a timer of its own. The ticker
 * runs only while some connection is registered (it stops at a tick that
 * finds none). A connection gets its first comment within one interval.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"

export interface Ticker {
  /** Calls `feed` on every tick until the returned function is called. */
  readonly add: (feed: () => void) => Effect.Effect<() => void>
}

/** A ticker that never ticks (keep-alive turned off). */
export const none: Ticker = { add: () => Effect.succeed(() => {}) }

export const make = (intervalMs: number | undefined): Effect.Effect<Ticker, never, Scope.Scope> =>
  Effect.gen(function*() {
    if (intervalMs === undefined || intervalMs <= 0 || !Number.isFinite(intervalMs)) return none
    const scope = yield* Effect.scope
    const feeds = new Set<() => void>()
    let running = false
    const tick: Effect.Effect<void> = Effect.flatMap(Effect.sleep(Duration.millis(intervalMs)), () => {
      if (feeds.size === 0) {
        running = false
        return Effect.void
      }
      for (const feed of feeds) feed()
      return tick
    })
    return {
      add: (feed) =>
        Effect.suspend(() => {
          feeds.add(feed)
          const remove = () => {
            feeds.delete(feed)
          }
          if (running) return Effect.succeed(remove)
          running = true
          return Effect.as(Effect.forkIn(tick, scope), remove)
        })
    }
  })
