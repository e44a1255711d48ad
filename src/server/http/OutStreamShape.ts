/**
 * What an OutStream is to the code that uses it: its options, how a
 * connection attaches, and its operations (OutStream.ts makes one).
 */
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type * as JsonRpc from "../../JsonRpc.ts"
import type { EventStoreShape } from "../EventStore.ts"
import type * as KeepAlive from "./KeepAlive.ts"

export interface OutStreamOptions {
  readonly streamId: string
  /** Where events are stored for replay; without one, events carry no ids. */
  readonly store: EventStoreShape | undefined
  /**
   * Messages kept for streams that may wait long for a reader (the oldest go
   * first, as they do past `maxBufferedBytes`), and frames a connection may
   * fall behind by before it is dropped; unbounded when absent.
   */
  readonly capacity?: number | undefined
  /** Bytes held for a slow or absent reader before it is dropped (see above); unbounded when absent. */
  readonly maxBufferedBytes?: number | undefined
  /** Told each time a connection is dropped for falling behind. */
  readonly onDropped?: (() => void) | undefined
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
  /** Ends this connection's HTTP response at once, unwritten bytes lost: how a reader that fell behind is dropped. */
  readonly cut?: (() => void) | undefined
}

/** A message waiting for a JSON answer, with its JSON (already computed to size it). */
export interface Queued {
  readonly message: JsonRpc.JsonRpcMessage
  readonly json: string
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
  readonly takeQueued: Effect.Effect<ReadonlyArray<Queued>>
  /** Bytes held for the client now: waiting without a connection, queued for one, or handed to its writer. */
  readonly bufferedBytes: () => number
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
