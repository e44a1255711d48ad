/**
 * One logical SSE stream of server-to-client messages (a POST's response
 * stream, a session's standalone stream, a legacy connection), independent of
 * the HTTP connection that happens to carry it.
 *
 * Messages are pushed, not pulled: while a connection is attached, a message
 * is stored in the event store (which names it) and handed to that
 * connection's queue in one step; with no connection it waits, unstored, in
 * `pending`. So every message a connection could have lost is in the store:
 * a connection that attaches with `Last-Event-ID` replays what the store holds
 * after that id, then takes the pending ones. Nothing is written twice to the
 * new connection and nothing handed out is lost. Only one connection reads at
 * a time; attaching takes the stream over from the previous one.
 *
 * The push design keeps the cost of a message to one store append and one
 * queue offer: a POST answered over SSE (one priming event, one response)
 * runs no per-message pull, race or merge.
 */
import type * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as JsonRpc from "../../JsonRpc.ts"
import * as KeepAlive from "./KeepAlive.ts"
import type { EventStoreShape } from "../EventStore.ts"
import * as SseWire from "./SseWire.ts"

export interface OutStreamOptions {
  readonly streamId: string
  /** Where events are stored for replay; without one, events carry no ids. */
  readonly store: EventStoreShape | undefined
  /** Queue bound for streams that may wait long for a reader (the oldest go first); unbounded when absent. */
  readonly capacity?: number | undefined
  /** Runs once when the stream has ended and every queued message was taken. */
  readonly onDrained?: Effect.Effect<void> | undefined
  /** Feeds idle connections keep-alive comments; none without one. */
  readonly keepAlive?: KeepAlive.Ticker | undefined
}

export interface AttachOptions {
  /** Send a priming event (an id and empty data) first, so the client can resume before any message (2025-11-25). */
  readonly priming: boolean
  /** The SSE `retry` field sent with the priming event, in milliseconds. */
  readonly retryMs: number | undefined
  /** Replay the stored events after this id before the live ones. */
  readonly lastEventId: string | undefined
  /** Frames written before anything else (the legacy `endpoint` event). */
  readonly preamble?: ReadonlyArray<string> | undefined
}

export interface OutStream {
  readonly streamId: string
  /** Queues a message; false once the stream has ended. */
  readonly offer: (message: JsonRpc.JsonRpcMessage) => Effect.Effect<boolean>
  /** No more messages; readers finish after the queued ones. */
  readonly end: Effect.Effect<void>
  readonly isEnded: () => boolean
  /**
   * Completes with `true` as soon as a message that is not a response is
   * queued (the handler streams), or with `false` when the stream ends first.
   */
  readonly awaitStreamingOrEnd: Effect.Effect<boolean>
  readonly awaitEnded: Effect.Effect<void>
  readonly isStreaming: () => boolean
  /** Takes what is queued without a connection (for a JSON answer). */
  readonly takeQueued: Effect.Effect<ReadonlyArray<JsonRpc.JsonRpcMessage>>
  /** The frames for one HTTP connection, until the stream ends or another connection takes over. */
  readonly attach: (options: AttachOptions) => Stream.Stream<Uint8Array>
  /**
   * The whole SSE body at once, for a stream that ended before any connection
   * came and holds nothing but responses, `WHOLE_BODY_LIMIT` at most: stored
   * as `attach` stores it (so it is resumable), after which the stream counts
   * as drained. `undefined` when it has to be streamed with `attach` instead.
   */
  readonly takeWhole: (options: AttachOptions) => Effect.Effect<string | undefined>
  /** Ends the current connection at once (another reader takes over, or the session ends). */
  readonly detach: Effect.Effect<void>
  /**
   * Ends the connection that writes the messages queued so far, after writing
   * them (now, or when the next connection attaches); the stream stays open
   * and later messages wait for the client to resume (SSE polling).
   */
  readonly closeConnection: Effect.Effect<void>
  readonly hasReader: () => boolean
  /** Ends the stream and its connection; later appends to the store stop. */
  readonly close: Effect.Effect<void>
}

// Marks where a connection should end (closeConnection); never written.
const CLOSE = Symbol("OutStream/close")
/** A message already stored and framed (it was handed to a connection that went away unread). */
interface Framed {
  readonly _tag: "Framed"
  readonly bytes: Uint8Array
}
type Pending = JsonRpc.JsonRpcMessage | Framed | typeof CLOSE

const isFramed = (item: Pending): item is Framed =>
  item !== CLOSE && (item as { readonly _tag?: unknown })._tag === "Framed"

interface Connection {
  readonly queue: Queue.Queue<Uint8Array, Cause.Done>
  /** This connection's own opening frames (priming, replay, preamble): never handed to another. */
  head: Uint8Array | undefined
}

const keepAliveFrame = SseWire.encode(": keepalive\n\n")

/** Answers up to this many characters of JSON go out as one whole body (`takeWhole`). */
export const WHOLE_BODY_LIMIT = 64 * 1024

export const make = (options: OutStreamOptions): Effect.Effect<OutStream> =>
  Effect.gen(function*() {
    // Serialises storing and handing out, so the store's order is the wire's order.
    const permit = yield* Semaphore.make(1)
    const settled = yield* Deferred.make<boolean>()
    const ended = yield* Deferred.make<void>()
    const store = options.store
    const capacity = options.capacity
    const pending: Array<Pending> = []
    let isEnded = false
    let closed = false
    let drainedSignalled = false
    let streaming = false
    let current: Connection | undefined

    const keep = (item: Pending) => {
      pending.push(item)
      // The oldest message goes first when nobody reads for long.
      if (capacity !== undefined && pending.length > capacity) pending.shift()
    }

    // JSON of messages `takeWhole` looked at and left to `attach` (too large to send whole).
    const serialized = new WeakMap<JsonRpc.JsonRpcMessage, string>()

    const frame = (message: JsonRpc.JsonRpcMessage): Effect.Effect<Uint8Array> => {
      const data = serialized.get(message) ?? JSON.stringify(message)
      return store === undefined
        ? Effect.succeed(SseWire.encode(SseWire.event(data)))
        : Effect.map(store.append(options.streamId, data), (id) => SseWire.encode(SseWire.event(data, id)))
    }

    /** Ends a connection after what it holds; what it never took goes back to `pending` when `reclaim`. */
    const release = (connection: Connection, reclaim: boolean) => {
      if (current === connection) current = undefined
      if (reclaim) {
        const back: Array<Pending> = []
        for (let taken = Queue.takeUnsafe(connection.queue); taken?._tag === "Success"; taken = Queue.takeUnsafe(connection.queue)) {
          if (taken.value !== keepAliveFrame && taken.value !== connection.head) back.push({ _tag: "Framed", bytes: taken.value })
        }
        if (back.length > 0) pending.unshift(...back)
      }
      Queue.endUnsafe(connection.queue)
    }

    // Stores and hands one item to the attached connection (under the permit).
    const deliver = (connection: Connection, item: JsonRpc.JsonRpcMessage): Effect.Effect<void> =>
      Effect.map(frame(item), (bytes) => {
        Queue.offerUnsafe(connection.queue, bytes)
      })

    const offer = (message: JsonRpc.JsonRpcMessage) =>
      Effect.suspend(() => {
        if (isEnded) return Effect.succeed(false)
        if (!streaming && !JsonRpc.isResponse(message)) {
          streaming = true
          Deferred.doneUnsafe(settled, Effect.succeed(true))
        }
        return permit.withPermit(Effect.suspend(() => {
          const connection = current
          if (connection === undefined) {
            keep(message)
            return Effect.succeed(true)
          }
          return Effect.as(deliver(connection, message), true)
        }))
      })

    const end = Effect.suspend(() => {
      if (isEnded) return Effect.void
      isEnded = true
      Deferred.doneUnsafe(settled, Effect.succeed(false))
      Deferred.doneUnsafe(ended, Effect.void)
      return permit.withPermit(Effect.sync(() => {
        if (current !== undefined) release(current, false)
      }))
    })

    const signalDrained = Effect.suspend(() => {
      if (drainedSignalled) return Effect.void
      drainedSignalled = true
      return options.onDrained ?? Effect.void
    })

    // Moves `pending` into a new connection: framed items unless a replay already
    // covered them, messages stored now, up to a close marker.
    const drainPending = (connection: Connection, replayed: boolean): Effect.Effect<void> =>
      Effect.gen(function*() {
        while (pending.length > 0) {
          const item = pending.shift()!
          if (item === CLOSE) {
            release(connection, false)
            return
          }
          if (isFramed(item)) {
            if (!replayed) Queue.offerUnsafe(connection.queue, item.bytes)
          } else {
            yield* deliver(connection, item)
          }
        }
        if (isEnded) release(connection, false)
      })

    /** The priming event and `retry` field a connection starts with, appended to `into`. */
    const opening = (attachOptions: AttachOptions, into: Array<string>): Effect.Effect<void> => {
      if (store === undefined) return Effect.void
      if (!attachOptions.priming) {
        if (attachOptions.retryMs !== undefined) into.push(SseWire.retry(attachOptions.retryMs))
        return Effect.void
      }
      return Effect.map(store.append(options.streamId, ""), (id) => {
        into.push(SseWire.event("", id))
        if (attachOptions.retryMs !== undefined) into.push(SseWire.retry(attachOptions.retryMs))
      })
    }

    const takeWhole = (attachOptions: AttachOptions): Effect.Effect<string | undefined> =>
      permit.withPermit(Effect.suspend(() => {
        if (!isEnded || closed || current !== undefined || attachOptions.lastEventId !== undefined) {
          return Effect.succeed(undefined)
        }
        // A notification must not share a write with the response after it (see `attach`).
        for (const item of pending) {
          if (item === CLOSE || isFramed(item) || !JsonRpc.isResponse(item)) return Effect.succeed(undefined)
        }
        // Large answers are streamed instead: one body string would hold another copy of them.
        const data: Array<string> = []
        let size = 0
        for (const message of pending as Array<JsonRpc.JsonRpcMessage>) {
          const text = JSON.stringify(message)
          data.push(text)
          size += text.length
          if (size > WHOLE_BODY_LIMIT) {
            for (let i = 0; i < data.length; i++) serialized.set(pending[i] as JsonRpc.JsonRpcMessage, data[i]!)
            return Effect.succeed(undefined)
          }
        }
        pending.length = 0
        const parts: Array<string> = [...(attachOptions.preamble ?? [])]
        return Effect.gen(function*() {
          yield* opening(attachOptions, parts)
          for (const text of data) {
            parts.push(store === undefined ? SseWire.event(text) : SseWire.event(text, yield* store.append(options.streamId, text)))
          }
          return parts.join("")
        })
      })).pipe(Effect.tap((body) => body === undefined ? Effect.void : signalDrained))

    const attach = (attachOptions: AttachOptions): Stream.Stream<Uint8Array> =>
      Stream.unwrap(Effect.gen(function*() {
        if (closed) return Stream.empty
        const queue = capacity === undefined
          ? yield* Queue.unbounded<Uint8Array, Cause.Done>()
          : yield* Queue.sliding<Uint8Array, Cause.Done>(capacity)
        const connection: Connection = { queue, head: undefined }
        yield* permit.withPermit(Effect.gen(function*() {
          const previous = current
          current = connection
          // The connection taken over gives back what it never took.
          if (previous !== undefined) release(previous, true)
          const head: Array<string> = [...(attachOptions.preamble ?? [])]
          yield* opening(attachOptions, head)
          let replayed = false
          if (attachOptions.lastEventId !== undefined && store !== undefined) {
            const replay = yield* store.replayAfter(attachOptions.lastEventId)
            if (Option.isSome(replay) && replay.value.streamId === options.streamId) {
              replayed = true
              for (const e of replay.value.events) head.push(SseWire.event(e.data, e.id, e.event))
            }
          }
          // Something on the wire at once, so the response headers go out now
          // rather than with the first message (or keep-alive).
          if (head.length === 0) head.push(": stream open\n\n")
          connection.head = SseWire.encode(head.join(""))
          Queue.offerUnsafe(queue, connection.head)
          yield* drainPending(connection, replayed)
        }))
        // Only an idle connection needs one, and it never displaces a message.
        const stopKeepAlive = yield* (options.keepAlive ?? KeepAlive.none).add(() => {
          if (Queue.sizeUnsafe(queue) === 0) Queue.offerUnsafe(queue, keepAliveFrame)
        })
        yield* Effect.addFinalizer(() =>
          permit.withPermit(Effect.suspend(() => {
            stopKeepAlive()
            const wasCurrent = current === connection
            release(connection, wasCurrent)
            return isEnded && pending.length === 0 ? signalDrained : Effect.void
          }))
        )
        // One frame per write, and a message that follows another message goes
        // out in a later turn: some clients dispatch a chunk's events out of
        // order (a response before the progress that preceded it on the wire).
        let spaced = false
        const take = Effect.map(Queue.take(queue), (bytes): readonly [Uint8Array] => {
          spaced = bytes !== connection.head && bytes !== keepAliveFrame
          return [bytes]
        })
        return Stream.fromPull(Effect.succeed(Effect.suspend(() =>
          spaced && Queue.sizeUnsafe(queue) > 0 ? Effect.andThen(Effect.yieldNow, take) : take
        )))
      }))

    const detach = permit.withPermit(Effect.sync(() => {
      if (current !== undefined) release(current, true)
    }))

    const closeConnection = permit.withPermit(Effect.sync(() => {
      if (isEnded) return
      if (current !== undefined) release(current, false)
      else keep(CLOSE)
    }))

    const close = Effect.suspend(() => {
      closed = true
      return end
    })

    return {
      streamId: options.streamId,
      offer,
      end,
      isEnded: () => isEnded,
      awaitStreamingOrEnd: Deferred.await(settled),
      awaitEnded: Deferred.await(ended),
      isStreaming: () => streaming,
      takeQueued: Effect.sync(() => {
        const messages = pending.filter((i): i is JsonRpc.JsonRpcMessage => i !== CLOSE && !isFramed(i))
        pending.length = 0
        return messages
      }),
      attach,
      takeWhole,
      detach,
      closeConnection,
      hasReader: () => current !== undefined,
      close
    } satisfies OutStream
  })
