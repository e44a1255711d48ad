/**
 * SSE streams held anywhere: with an event store shared by the instances of
 * a fleet (one with a `tail`), a stream is written to the store by whichever
 * instance has something to send, and the instance holding the client's
 * connection delivers it from the store, in the store's order, each event
 * once: a connection follows the stream from where it starts (after the
 * client's `Last-Event-ID`, or after its own priming event) and so writes
 * exactly what followed.
 *
 * `makeStandalone` is a session's standalone stream in such a fleet: its id
 * is derived from the session's, so every instance writes the same stream.
 * `follower` is the connection of a client resuming, on any instance, a
 * stream another instance wrote (a POST's response stream): it ends after
 * the stream's end mark (`Tail.finish`).
 *
 * A connection reads the store only as fast as its client takes frames: a
 * slow client lags behind in the store instead of filling memory, and is
 * never dropped for it (what the store holds of a stream is bounded; see
 * the store's limits).
 */
import type * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as JsonRpc from "../../JsonRpc.ts"
import type { EventStoreShape, FollowFrom, Tail } from "../EventStore.ts"
import * as KeepAlive from "./KeepAlive.ts"
import type { AttachOptions, OutStream } from "./OutStream.ts"
import * as SseWire from "./SseWire.ts"

/** Frames read ahead of what the client took. */
const READ_AHEAD = 32

const keepAliveFrame = SseWire.encode(": keepalive\n\n")

export interface FollowOptions {
  readonly tail: Tail
  readonly streamId: string
  readonly from: FollowFrom
  /** Frames written before the stream's events (preamble, priming event, `retry`). */
  readonly head?: string | undefined
  readonly keepAlive?: KeepAlive.Ticker | undefined
  /** The connection ends when this completes (the session ended), if the stream has not ended first. */
  readonly until?: Effect.Effect<void> | undefined
  /** Told how to end this connection early, once it is open. */
  readonly onOpen?: ((end: () => void) => void) | undefined
  /** Told when the connection's frames are done with (its response ended). */
  readonly onClose?: (() => void) | undefined
}

/** The frames of one connection following a stream of the store: its head, then the stream's events as they come. */
export const follower = (options: FollowOptions): Stream.Stream<Uint8Array> => Stream.unwrap(openFollower(options))

/** One generator function for every connection (docs/design.md, "Per-request code and the old generation"). */
const openFollower = Effect.fnUntraced(function*(
  options: FollowOptions
): Effect.fn.Return<Stream.Stream<Uint8Array>, never, Scope.Scope> {
  const queue = yield* Queue.bounded<Uint8Array, Cause.Done>(READ_AHEAD)
  const head = options.head ?? ""
  // Something on the wire at once, so the response headers go out now.
  const opening = SseWire.encode(head === "" ? ": stream open\n\n" : head)
  const events = yield* options.tail.follow(options.streamId, options.from)
  yield* Queue.offer(queue, opening)
  yield* events.pipe(
    Stream.runForEach((e) => Queue.offer(queue, SseWire.encode(SseWire.event(e.data, e.id, e.event)))),
    Effect.andThen(Queue.end(queue)),
    Effect.forkScoped
  )
  if (options.until !== undefined) yield* Effect.forkScoped(Effect.andThen(options.until, Queue.end(queue)))
  // Only an idle connection needs one, and it never displaces an event.
  const stopKeepAlive = yield* (options.keepAlive ?? KeepAlive.none).add(() => {
    if (Queue.sizeUnsafe(queue) === 0) Queue.offerUnsafe(queue, keepAliveFrame)
  })
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      stopKeepAlive()
      options.onClose?.()
    })
  )
  options.onOpen?.(() => {
    Queue.endUnsafe(queue)
  })
  // One frame per write, and a message that follows another goes out in a later turn (see OutStream).
  let spaced = false
  const take = Effect.map(Queue.take(queue), (bytes): readonly [Uint8Array] => {
    spaced = bytes !== opening && bytes !== keepAliveFrame
    return [bytes]
  })
  return Stream.fromPull(Effect.succeed(Effect.suspend(() =>
    spaced && Queue.sizeUnsafe(queue) > 0 ? Effect.andThen(Effect.yieldNow, take) : take
  )))
})

export interface StandaloneOptions {
  readonly streamId: string
  readonly store: EventStoreShape
  readonly tail: Tail
  readonly keepAlive?: KeepAlive.Ticker | undefined
}

/**
 * A session's standalone stream written to the shared store: an offer is an
 * append, from whichever instance makes it; a connection on this instance
 * delivers from the store. Nothing is held here, so there is nothing to
 * buffer, reclaim or drop. A first connection without `Last-Event-ID`
 * starts at the start of what the store holds (what was sent before the
 * client opened its stream), a later one at the end, as a fresh stream
 * does.
 */
export const makeStandalone = (options: StandaloneOptions): OutStream => {
  const { store, streamId, tail } = options
  const settled = Deferred.makeUnsafe<boolean>()
  const ended = Deferred.makeUnsafe<void>()
  let isEnded = false
  let closed = false
  let streaming = false
  let attachedOnce = false
  // Ends the connection open on this instance, if any.
  let current: (() => void) | undefined

  const endCurrent = () => {
    const end = current
    current = undefined
    end?.()
  }

  const offer = (message: JsonRpc.JsonRpcMessage) =>
    Effect.suspend(() => {
      if (isEnded) return Effect.succeed(false)
      if (!streaming && !JsonRpc.isResponse(message)) {
        streaming = true
        Deferred.doneUnsafe(settled, Effect.succeed(true))
      }
      return Effect.as(store.append(streamId, JSON.stringify(message)), true)
    })

  const end = Effect.sync(() => {
    if (isEnded) return
    isEnded = true
    Deferred.doneUnsafe(settled, Effect.succeed(false))
    Deferred.doneUnsafe(ended, Effect.void)
    endCurrent()
  })

  const attach = (attachOptions: AttachOptions): Stream.Stream<Uint8Array> =>
    Stream.unwrap(Effect.suspend(() => {
      if (closed || isEnded) return Effect.succeed(Stream.empty)
      const from: FollowFrom = attachedOnce ? "end" : "start"
      attachedOnce = true
      return Effect.map(position(store, streamId, attachOptions, from), (at) => {
        let mine: (() => void) | undefined
        return follower({
          tail,
          streamId,
          from: at.from,
          head: at.head,
          keepAlive: options.keepAlive,
          onOpen: (endThis) => {
            // Attaching takes the stream over from the connection before.
            endCurrent()
            mine = endThis
            current = endThis
          },
          onClose: () => {
            if (current === mine) current = undefined
          }
        })
      })
    }))

  return {
    streamId,
    offer,
    end,
    isEnded: () => isEnded,
    awaitStreamingOrEnd: Deferred.await(settled),
    awaitEnded: Deferred.await(ended),
    isStreaming: () => streaming,
    takeQueued: Effect.succeed([]),
    bufferedBytes: () => 0,
    attach,
    takeWhole: () => Effect.succeed(undefined),
    detach: Effect.sync(endCurrent),
    closeConnection: Effect.sync(endCurrent),
    hasReader: () => current !== undefined,
    close: Effect.suspend(() => {
      closed = true
      return end
    })
  } satisfies OutStream
}

/**
 * Where a connection attaching to a standalone stream starts (`from`, moved
 * past its priming event or to the client's `Last-Event-ID`) and what it
 * writes first. One generator function for every attach (docs/design.md,
 * "Per-request code and the old generation").
 */
const position = Effect.fnUntraced(function*(
  store: EventStoreShape,
  streamId: string,
  attachOptions: AttachOptions,
  from: FollowFrom
): Effect.fn.Return<{ readonly from: FollowFrom; readonly head: string }> {
  const head: Array<string> = [...(attachOptions.preamble ?? [])]
  if (attachOptions.priming) {
    const id = yield* store.append(streamId, "")
    head.push(SseWire.event("", id))
    if (from === "end") from = { after: id }
  }
  if (attachOptions.retryMs !== undefined) head.push(SseWire.retry(attachOptions.retryMs))
  if (attachOptions.lastEventId !== undefined) {
    const of = yield* store.streamOf(attachOptions.lastEventId)
    if (Option.isSome(of) && of.value === streamId) from = { after: attachOptions.lastEventId }
  }
  return { from, head: head.join("") }
})
