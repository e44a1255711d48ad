/**
 * What a server session is and is made of (`ServerSession.make`): the
 * options a transport gives it and the operations it answers with.
 */
import type * as Cause from "effect/Cause"
import type * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type * as JsonRpc from "../../JsonRpc.ts"
import type { TransportClosed } from "../../McpError.ts"
import type { Handler, HandlerContext } from "../Handler.ts"

/** What a frame produces: one reply, a batch of replies, or nothing. */
export type Reply = JsonRpc.JsonRpcResponse | ReadonlyArray<JsonRpc.JsonRpcResponse> | null

export interface ServerSessionOptions<R> {
  readonly handler: Handler<R>
  /** Writes a server-initiated message (notification, request) to the client. */
  readonly send: (message: JsonRpc.JsonRpcMessage) => Effect.Effect<void, TransportClosed>
  readonly sessionId?: string | undefined
  /**
   * Whether the session lives for one HTTP exchange only (a sessionless
   * POST): its contexts say so, and a request to the client fails at once,
   * since no later POST can carry the answer back to this session.
   */
  readonly ephemeral?: boolean | undefined
  /** Whether a JSON array frame is accepted (2025-03-26 allows batches; later revisions do not). */
  readonly allowBatch?: boolean | undefined
  /** Entries a batch may hold; a longer one gets a single -32600 and none of it runs. Default 100. */
  readonly maxBatchSize?: number | undefined
  /**
   * Routes messages the handler sends while serving a request to that
   * request's channel (an HTTP response stream). Defaults to `send`.
   */
  readonly sendFor?: ((requestId: JsonRpc.RequestId) => (message: JsonRpc.JsonRpcMessage) => Effect.Effect<void, TransportClosed>) | undefined
  readonly defaultRequestTimeoutMs?: number | undefined
  /**
   * Whether the session is one connection whose first request decides its
   * era (stdio, the in-memory pair). HTTP decides per request instead.
   */
  readonly decideEra?: boolean | undefined
  /**
   * Whether the transport writes the replies produced in one callback
   * together (stdio): request fibers then share one dispatcher, so those
   * that yield in the same turn resume in the same callback.
   */
  readonly sharedDispatcher?: boolean | undefined
  /**
   * Whether handlers run with the session's services alone, carrying from
   * the fiber a request starts in only its peer and span (HTTP: that fiber
   * is the POST's, a context of its own per request). Otherwise the
   * session's services go on top of that fiber's context.
   */
  readonly servicesOnly?: boolean | undefined
  /**
   * Transport-specific extras for the context of one request (HTTP adds
   * `closeSseStream`). Merged over the base context.
   */
  readonly extendContext?: ((requestId: JsonRpc.RequestId) => Partial<Pick<HandlerContext, "closeSseStream">>) | undefined
  /**
   * Who the session's messages come from, read when a handler asks (the
   * HTTP transport refreshes it with each request's token).
   */
  readonly identity?: (() => Pick<HandlerContext, "principal" | "auth">) | undefined
  /**
   * Remember `notifications/cancelled` for ids not running yet, so a request
   * that arrives after its own cancel (separate HTTP POSTs can overtake each
   * other) is dropped without running: no handler, no reply. Keeps the newest
   * `capacity` ids (default 256) for `ttlMs` (default 60 s). Off when absent:
   * on an ordered stream a cancel cannot precede its request.
   */
  readonly earlyCancels?: { readonly capacity?: number | undefined; readonly ttlMs?: number | undefined } | undefined
  /**
   * What the ids of requests sent to the client start with (default `s`);
   * an instance of a fleet puts its own id there, so whichever instance
   * the client answers knows where the answer goes.
   */
  readonly idPrefix?: string | undefined
  /**
   * Sees why a handler failed or died before the client gets a bare -32603
   * (the wire never carries the cause); transports log it to stderr.
   */
  readonly onHandlerError?:
    | ((message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification, cause: Cause.Cause<unknown>) => Effect.Effect<void>)
    | undefined
}

export interface ServerSession {
  /**
   * Decodes one frame and answers it. Requests in a batch run concurrently;
   * `null` entries are filtered and an empty batch reply is `null`.
   */
  readonly handleFrame: (text: string) => Effect.Effect<Reply>
  /** `handleFrame` for a frame the transport already decoded (to route it before answering). */
  readonly handleDecoded: (decoded: JsonRpc.Decoded, text: string) => Effect.Effect<Reply>
  /** Answers one already-decoded message. */
  readonly handleMessage: (message: JsonRpc.Classified) => Effect.Effect<JsonRpc.JsonRpcResponse | null>
  /**
   * Answers a request as `handleMessage` does, handing its reply (`null`:
   * none, the request was cancelled or its id is taken) to `onReply` in the
   * caller's fiber, in the step that reads it.
   */
  readonly handleRequest: <B>(
    request: JsonRpc.JsonRpcRequest,
    onReply: (reply: JsonRpc.JsonRpcResponse | null) => Effect.Effect<B>
  ) => Effect.Effect<B>
  /**
   * `handleRequest` from inside a step of `parent` (`Effect.withFiber`): the
   * handler starts in that step, and a reply known by then comes back as an
   * `Exit` of what `onReply` gave it.
   */
  readonly handleRequestIn: <B>(
    parent: Fiber.Fiber<unknown, unknown>,
    request: JsonRpc.JsonRpcRequest,
    onReply: (reply: JsonRpc.JsonRpcResponse | null) => Effect.Effect<B>
  ) => Effect.Effect<B>
  /**
   * Starts a request in its own fiber and hands its reply to `onReply` from
   * that fiber; returns once the request is registered (so a later
   * `notifications/cancelled` finds it). A cancelled request gets no reply.
   * `handleMessage` for stream transports: one fiber per request instead of
   * a caller waiting for the handler's fiber.
   */
  readonly serve: (
    request: JsonRpc.JsonRpcRequest,
    onReply: (reply: JsonRpc.JsonRpcResponse) => Effect.Effect<void>
  ) => Effect.Effect<void>
  /** Completes once no request is being served. */
  readonly awaitIdle: Effect.Effect<void>
  /** A context not tied to any request, for server-initiated traffic. */
  readonly context: HandlerContext
  /** Whether JSON-RPC batches are accepted (`allowBatch`, default true). */
  readonly allowBatch: boolean
  /** Entries a batch may hold (`maxBatchSize`). */
  readonly maxBatchSize: number
  /** Requests being served right now. */
  readonly inFlight: Effect.Effect<number>
  readonly close: (error: TransportClosed) => Effect.Effect<void>
  /**
   * `close`, then tells the handler the session ended (`Handler.sessionEnded`),
   * once: for a connection that ends before its scope closes (the end of
   * stdin). Closing the scope does the same.
   */
  readonly end: (error: TransportClosed) => Effect.Effect<void>
  /**
   * Fails the requests the server sent the client (and any later ones) with
   * `error`, leaving running handlers alone: for when the client can no
   * longer answer (stdin ended) but replies may still be written.
   */
  readonly closeOutgoing: (error: TransportClosed) => Effect.Effect<void>
  /** Whether request `id` of the client is being served here. */
  readonly isServing: (id: JsonRpc.RequestId) => boolean
  /**
   * A client's cancel of request `id` received by another instance: the
   * request is interrupted if it runs here, or remembered as an early
   * cancel (when those are kept). The handler is not told: the instance
   * that received the cancel told its own.
   */
  readonly cancelRemote: (id: JsonRpc.RequestId) => Effect.Effect<void>
}
