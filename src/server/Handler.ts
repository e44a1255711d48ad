/**
 * The port of the server transports: the one function every server transport
 * (stdio, HTTP, the in-memory pair, the bridge) mounts. It takes an incoming
 * JSON-RPC message and answers with the reply (or `null` for notifications),
 * given a context for talking back to the client. Transports know framing,
 * limits and security; whatever sits behind this port (`McpServer`, a
 * `Router`, a bridge to another server) knows methods. Nothing in a server
 * transport depends on what is behind the port, and nothing behind it on
 * which transport carries the message.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as JsonRpc from "../JsonRpc.ts"
import type { ClientRequestUnavailable, RequestError, TransportClosed } from "../McpError.ts"
import type { AuthInfo } from "./auth/TokenVerifier.ts"
import type { SessionRecord } from "./SessionRegistry.ts"

/**
 * What a handler can do besides answering: learn which session and request it
 * serves, notify the client, and ask the client something.
 *
 * @since 0.1.0
 * @category models
 */
export interface HandlerContext {
  /** The session this message arrived on (HTTP stateful mode); undefined on stdio. */
  readonly sessionId: string | undefined
  /** The id of the request being served, when the message is a request. */
  readonly requestId: JsonRpc.RequestId | undefined
  /**
   * Sends a notification to the client. While a request is being served on
   * HTTP it travels on that request's stream (progress, logging).
   */
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void, TransportClosed>
  /**
   * Sends a request to the client (sampling, elicitation, roots) and waits
   * for its result. On a connection of the stateless era (its first request
   * carried 2026-07-28 `_meta`) it fails at once with `ClientRequestUnavailable`.
   */
  readonly request: (
    method: string,
    params?: unknown,
    options?: { readonly timeout?: Duration.Input | undefined }
  ) => Effect.Effect<unknown, RequestError | ClientRequestUnavailable>
  /**
   * Streamable HTTP only (absent elsewhere): ends the connection currently
   * carrying this request's SSE stream without ending the stream, so the
   * client reconnects with `Last-Event-ID` after the `retry` delay and gets
   * what it missed (SSE polling, 2025-11-25). The request keeps running.
   */
  readonly closeSseStream?: (() => Effect.Effect<void>) | undefined
  /**
   * The id of the principal the transport authenticated the message as
   * (HTTP with an `authenticate` hook); absent where there is none (stdio,
   * in-memory). `McpServer` binds the stateless era's `requestState` to it.
   */
  readonly principal?: string | undefined
  /**
   * What the request's bearer token says (subject, scopes, client id), when
   * the HTTP transport checks tokens (its `authorization` option); absent
   * elsewhere. On a session it is the latest token the session's principal
   * presented.
   */
  readonly auth?: AuthInfo | undefined
  /**
   * True when the message came on its own, with no connection or session
   * behind it (a sessionless POST of the handshake era on HTTP): nothing
   * learned from it may outlive it, and the client cannot answer a request
   * from the server, so `request` fails at once with
   * `ClientRequestUnavailable`. Absent elsewhere (stdio, the in-memory pair
   * and HTTP sessions are connections).
   */
  readonly ephemeral?: boolean | undefined
  /**
   * False when neither metrics nor spans can record the request: the
   * transport runs the handler with services of its own that turn on
   * neither, so the handler need not look. Absent where the transport does
   * not know (the handler then looks in its fiber).
   */
  readonly observed?: boolean | undefined
}

/**
 * A handler's refusal of a new session (`Handler.admitSession`): the HTTP
 * answer is 503 with `Retry-After: retryAfterSeconds` and `message` in its
 * JSON-RPC error.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionRefusal {
  readonly retryAfterSeconds: number
  readonly message: string
}

/**
 * Answers one message. Failures and defects become -32603 Internal error
 * (with no stack trace on the wire); interruption (the client cancelled)
 * drops the reply.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as JsonRpc from "effect-mcp-transport/JsonRpc"
 * import type { Handler } from "effect-mcp-transport/server/Handler"
 *
 * // Answers every request with its params; notifications get no reply.
 * const echo: Handler = (message) =>
 *   Effect.succeed("id" in message ? JsonRpc.success(message.id, message.params ?? {}) : null)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export type Handler<R = never> =
  & ((
    message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification,
    context: HandlerContext
  ) => Effect.Effect<JsonRpc.JsonRpcResponse | null, unknown, R>)
  & {
    /**
     * Ends the handler's long-lived requests (an open `subscriptions/listen`)
     * with their final replies. Stream transports (stdio, the in-memory pair)
     * run it when they stop taking input, before they wait for the requests
     * in flight. Optional; a plain function is a handler too.
     */
    readonly shutdown?: Effect.Effect<void> | undefined
    /**
     * Told that a session has ended, once, after its requests stopped, so
     * the handler can drop what it kept for it: HTTP with its session id
     * (DELETE, idle or handshake expiry, eviction, a legacy SSE connection
     * going away, `closeSession`, shutdown); stdio and the in-memory pair
     * with `undefined` when their connection ends (the end of stdin, `stop`,
     * the pair's scope closing or `kill`). Never for a sessionless HTTP POST.
     * Optional.
     */
    readonly sessionEnded?: ((sessionId: string | undefined) => Effect.Effect<void>) | undefined
    /**
     * Asked by the HTTP transport before it serves a new session (an
     * `initialize` over Streamable HTTP, a legacy SSE connection), after
     * authentication and the transport's own session caps: `undefined`
     * admits it; a refusal answers that request with 503 and the refusal's
     * `Retry-After`, and the session ends (`sessionEnded` is told). For a
     * handler whose sessions cost more than the transport's own (the bridge
     * starts a process for each). Optional (absent: every session is admitted).
     */
    readonly admitSession?: ((sessionId: string) => Effect.Effect<SessionRefusal | undefined>) | undefined
    /**
     * Told by the HTTP transport of a fleet (a `SessionRegistry` present)
     * what the fleet knows of a session this instance serves without having
     * seen its `initialize`: when it takes over a session another instance
     * made, and again whenever the record changed elsewhere (the client
     * finished the handshake, or set its log level, through another
     * instance). `context` is the session's channel for server-initiated
     * traffic. Optional (absent: the handler keeps no handshake record).
     */
    readonly adoptSession?:
      | ((sessionId: string, record: SessionRecord, context: HandlerContext) => Effect.Effect<void>)
      | undefined
    /**
     * Whether the handler serves requests of the stateless era (2026-07-28)
     * on their own, with no session: the HTTP transport then routes such
     * requests to it without a session. Optional (absent: handshake era only).
     */
    readonly stateless?: boolean | undefined
    /**
     * The `inputSchema` of a tool as `tools/list` lists it (`undefined` for
     * an unknown tool): the HTTP transport reads its `x-mcp-header`
     * parameters to check a stateless `tools/call`'s `Mcp-Param-*` headers.
     * Optional (absent: those headers are not checked).
     */
    readonly toolInputSchema?: ((name: string) => Effect.Effect<unknown, never, R>) | undefined
  }
