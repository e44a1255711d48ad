/**
 * A sliding `PubSub` that knows whether anyone listens, for messages
 * published on a hot path that more often than not nobody reads (a
 * client's notifications: every progress of every call goes through two).
 *
 * A publish with no subscriber does nothing, where a `PubSub` still runs
 * its strategy over its subscribers. A publish to a subscriber whose buffer
 * is full drops that subscriber's oldest message, as a sliding `PubSub`
 * promises: `PubSub.publishUnsafe` would drop the new one instead.
 */
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"

export interface ListenedPubSub<A> {
  /** Hands the value to every current subscriber; `false`, having done nothing, when there is none. */
  readonly publish: (value: A) => boolean
  /** The values published while the stream runs; it subscribes when run. */
  readonly stream: Stream.Stream<A>
  /** Subscribes now, in the caller's scope: the stream holds everything published from here on. */
  readonly subscribe: Effect.Effect<Stream.Stream<A>, never, Scope.Scope>
  /** Ends every subscriber's stream, whatever it still holds. */
  readonly shutdown: Effect.Effect<void>
}

/** A `ListenedPubSub` whose subscribers each hold up to `capacity` values, the oldest dropped first. */
export const sliding = <A>(capacity: number): Effect.Effect<ListenedPubSub<A>> =>
  Effect.map(PubSub.sliding<A>(capacity), (hub) => {
    let listening = 0
    // Counted before the subscription is made and uncounted after it ends (finalizers run in reverse):
    // never a subscriber that the count leaves out.
    const counted = Effect.acquireRelease(
      Effect.sync(() => void listening++),
      () => Effect.sync(() => void listening--)
    )
    const slide = (value: A) => Effect.runSync(PubSub.publish(hub, value))
    return {
      publish: (value) => listening > 0 && (PubSub.publishUnsafe(hub, value) || slide(value)),
      stream: Stream.unwrap(Effect.as(counted, Stream.fromPubSub(hub))),
      subscribe: Effect.andThen(counted, Effect.map(PubSub.subscribe(hub), Stream.fromSubscription)),
      shutdown: PubSub.shutdown(hub)
    }
  })
