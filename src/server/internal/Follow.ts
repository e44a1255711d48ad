/**
 * A follower of one stream of an event store, as a pull-based `Stream`: it
 * reads what follows its cursor, and when there is nothing yet, waits to be
 * woken by an append (or, for a store whose wake-ups can be lost, at most
 * `pollMs`) and reads again. Reading only when its consumer pulls, a
 * follower never holds more than one read for a client that reads slowly:
 * the store is the buffer.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"

/** What one read found after the cursor: the events to deliver, where the next read starts, whether the end mark was read. */
export interface Read<C, A> {
  readonly events: ReadonlyArray<A>
  readonly cursor: C
  readonly finished: boolean
}

export interface Options<C, A> {
  /** The cursor to read after, taken once the follower is registered (so nothing appended meanwhile is missed). */
  readonly start: Effect.Effect<C>
  readonly read: (cursor: C) => Effect.Effect<Read<C, A>>
  /** Calls `onAppend` whenever the stream may have grown, for as long as the scope lasts. */
  readonly register: (onAppend: () => void) => Effect.Effect<void, never, Scope.Scope>
  /** Longest wait for a wake-up before reading again; unbounded when absent. */
  readonly pollMs?: number | undefined
}

/** Registered and positioned when this completes (an append that follows is delivered); ends with the scope. */
export const make = <C, A>(options: Options<C, A>): Effect.Effect<Stream.Stream<A>, never, Scope.Scope> => follow(options)

/** One generator function for every follower (docs/design.md, "Per-request code and the old generation"). */
const follow = Effect.fnUntraced(function*<C, A>(options: Options<C, A>): Effect.fn.Return<Stream.Stream<A>, never, Scope.Scope> {
  // Set by a wake-up that came while no read was waiting: the next wait returns at once.
  let woken = false
  let waiting: Deferred.Deferred<void> | undefined
  yield* options.register(() => {
    woken = true
    if (waiting !== undefined) {
      Deferred.doneUnsafe(waiting, Effect.void)
      waiting = undefined
    }
  })
  let cursor = yield* options.start
  let finished = false
  const poll = options.pollMs === undefined ? undefined : Duration.millis(options.pollMs)
  const wait = Effect.suspend(() => {
    if (woken) {
      woken = false
      return Effect.void
    }
    const signal = Deferred.makeUnsafe<void>()
    waiting = signal
    const woke = Deferred.await(signal)
    return (poll === undefined ? woke : Effect.asVoid(Effect.timeoutOption(woke, poll))).pipe(
      Effect.ensuring(Effect.sync(() => {
        woken = false
        if (waiting === signal) waiting = undefined
      }))
    )
  })
  const pull: Effect.Effect<readonly [A, ...Array<A>], Cause.Done> = Effect.suspend(() => {
    if (finished) return Cause.done()
    return Effect.flatMap(options.read(cursor), (found) => {
      cursor = found.cursor
      if (found.finished) finished = true
      if (found.events.length > 0) return Effect.succeed(found.events as readonly [A, ...Array<A>])
      if (finished) return Cause.done()
      return Effect.andThen(wait, pull)
    })
  })
  return Stream.fromPull(Effect.succeed(pull))
})
