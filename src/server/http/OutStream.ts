/**
 * One logical SSE stream of server-to-client messages (a POST's response
 * stream, a session's standalone stream, a legacy connection), independent of
 * the HTTP connection that happens to carry it.
 *
 * Messages wait in a queue until a connection takes them. Taking a message
 * and storing it in the event store happen together, shielded from
 * interruption, so every message that left the queue can be replayed: a
 * connection that attaches with `Last-Event-ID` first replays what the store
 * holds after that id, then continues with the queue. Nothing is written
 * twice to the new connection and nothing taken is lost. Only one connection
 * reads at a time; attaching takes the stream over from the previous one.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as JsonRpc from "../../JsonRpc.ts"
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
}

export interface AttachOptions {
  /** Send a priming event (an id and empty data) first, so the client can resume before any message (2025-11-25). */
  readonly priming: boolean
  /** The SSE `retry` field sent with the priming event, in milliseconds. */
  readonly retryMs: number | undefined
  /** Replay the stored events after this id before the live ones. */
  readonly lastEventId: string | undefined
  readonly keepAliveMs: number | undefined
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
  /** Completes when a message that is not a response is queued (the handler streams). */
  readonly awaitStreaming: Effect.Effect<void>
  readonly awaitEnded: Effect.Effect<void>
  readonly isStreaming: () => boolean
  /** Takes what is queued without a connection (for a JSON answer). */
  readonly takeQueued: Effect.Effect<ReadonlyArray<JsonRpc.JsonRpcMessage>>
  /** The frames for one HTTP connection, until the stream ends or another connection takes over. */
  readonly attach: (options: AttachOptions) => Stream.Stream<Uint8Array>
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
type Item = JsonRpc.JsonRpcMessage | typeof CLOSE

export const make = (options: OutStreamOptions): Effect.Effect<OutStream> =>
  Effect.gen(function*() {
    const queue = options.capacity === undefined
      ? yield* Queue.unbounded<Item, Cause.Done>()
      : yield* Queue.sliding<Item, Cause.Done>(options.capacity)
    const permit = yield* Semaphore.make(1)
    const streaming = yield* Deferred.make<void>()
    const ended = yield* Deferred.make<void>()
    const store = options.store
    let isEnded = false
    let closed = false
    let drainedSignalled = false
    let tokens = 0
    let current: { readonly token: number; readonly detach: Deferred.Deferred<void> } | undefined

    const offer = (message: JsonRpc.JsonRpcMessage) =>
      Effect.suspend(() => {
        if (isEnded) return Effect.succeed(false)
        if (!JsonRpc.isResponse(message)) Deferred.doneUnsafe(streaming, Effect.void)
        return Queue.offer(queue, message)
      })

    const end = Effect.suspend(() => {
      if (isEnded) return Effect.void
      isEnded = true
      Deferred.doneUnsafe(ended, Effect.void)
      return Effect.asVoid(Queue.end(queue))
    })

    const frame = (message: JsonRpc.JsonRpcMessage): Effect.Effect<string> => {
      const data = JSON.stringify(message)
      return store === undefined
        ? Effect.succeed(SseWire.event(data))
        : Effect.map(store.append(options.streamId, data), (id) => SseWire.event(data, id))
    }

    const signalDrained = Effect.suspend(() => {
      if (drainedSignalled) return Effect.void
      drainedSignalled = true
      return options.onDrained ?? Effect.void
    })

    // One pull: wait for a message (interruptible), then take and store it
    // (not interruptible), so a message is never taken without being stored.
    // One message per write: some clients dispatch a chunk's events
    // synchronously and would see a response before the progress before it.
    const pull = (token: number): Effect.Effect<Uint8Array, Cause.Done> =>
      permit.withPermit(Effect.uninterruptibleMask((restore) => {
        if (closed || current?.token !== token) return Cause.done()
        return restore(Queue.take(queue)).pipe(
          Effect.tapError(() => signalDrained),
          Effect.flatMap((item) => item === CLOSE ? Cause.done() : frame(item)),
          Effect.map(SseWire.encode)
        )
      }))

    const attach = (attachOptions: AttachOptions): Stream.Stream<Uint8Array> =>
      Stream.unwrap(Effect.gen(function*() {
        const token = ++tokens
        const detach = yield* Deferred.make<void>()
        const previous = current
        current = { token, detach }
        if (previous !== undefined) yield* Deferred.succeed(previous.detach, undefined)
        const head = yield* permit.withPermit(Effect.gen(function*() {
          const frames: Array<string> = [...(attachOptions.preamble ?? [])]
          if (attachOptions.priming && store !== undefined) {
            const id = yield* store.append(options.streamId, "")
            frames.push(SseWire.event("", id))
            if (attachOptions.retryMs !== undefined) frames.push(SseWire.retry(attachOptions.retryMs))
          } else if (attachOptions.retryMs !== undefined && store !== undefined) {
            frames.push(SseWire.retry(attachOptions.retryMs))
          }
          if (attachOptions.lastEventId !== undefined && store !== undefined) {
            const replay = yield* store.replayAfter(attachOptions.lastEventId)
            if (Option.isSome(replay) && replay.value.streamId === options.streamId) {
              for (const e of replay.value.events) frames.push(SseWire.event(e.data, e.id, e.event))
            }
          }
          // Something on the wire at once, so the response headers go out now
          // rather than with the first message (or keep-alive).
          if (frames.length === 0) frames.push(": stream open\n\n")
          return frames
        }))
        const live = Stream.fromEffectRepeat(pull(token))
        const frames = Stream.concat(Stream.make(SseWire.encode(head.join(""))), live)
        return SseWire.withKeepAlive(
          frames.pipe(Stream.interruptWhen(Deferred.await(detach))),
          attachOptions.keepAliveMs
        ).pipe(
          Stream.ensuring(Effect.sync(() => {
            if (current?.token === token) current = undefined
          }))
        )
      }))

    const detach = Effect.suspend(() =>
      current === undefined ? Effect.void : Effect.asVoid(Deferred.succeed(current.detach, undefined))
    )

    const closeConnection = Effect.suspend(() => isEnded ? Effect.void : Effect.asVoid(Queue.offer(queue, CLOSE)))

    const close = Effect.suspend(() => {
      closed = true
      return Effect.andThen(end, detach)
    })

    return {
      streamId: options.streamId,
      offer,
      end,
      isEnded: () => isEnded,
      awaitStreaming: Deferred.await(streaming),
      awaitEnded: Deferred.await(ended),
      isStreaming: () => Deferred.isDoneUnsafe(streaming),
      takeQueued: Queue.clear(queue).pipe(
        Effect.catch(() => Effect.succeed([] as Array<Item>)),
        Effect.map((items) => items.filter((i): i is JsonRpc.JsonRpcMessage => i !== CLOSE))
      ),
      attach,
      detach,
      closeConnection,
      hasReader: () => current !== undefined,
      close
    } satisfies OutStream
  })
