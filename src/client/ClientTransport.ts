/**
 * The service every client transport provides. Everything above the
 * transports (McpClient, McpManager) talks to this interface only.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type * as SubscriptionRef from "effect/SubscriptionRef"
import type * as JsonRpc from "../JsonRpc.ts"
import type { AuthError } from "../AuthError.ts"
import type { NotifyError, RequestError, RpcError, TransportClosed } from "../McpError.ts"

/**
 * Where a transport's connection stands; `state` holds the current one and its changes.
 *
 * `Reconnecting` and `SessionExpired` occur on Streamable HTTP only; `Closed` is final.
 *
 * @since 0.1.0
 * @category models
 */
export type ConnectionState = Data.TaggedEnum<{
  Connecting: {}
  Ready: {}
  Reconnecting: { readonly attempt: number; readonly delayMs: number }
  SessionExpired: { readonly sessionId: string }
  Closed: { readonly error: TransportClosed }
}>

/**
 * Constructors and matchers (`$is`, `$match`) for `ConnectionState`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const ConnectionState = Data.taggedEnum<ConnectionState>()

/**
 * Things worth knowing that do not fail a request: skipped lines, stray responses, listener trouble.
 *
 * @since 0.1.0
 * @category models
 */
export type Diagnostic = Data.TaggedEnum<{
  MalformedFrame: { readonly text: string; readonly reason: string }
  InvalidMessage: { readonly text: string; readonly reason: string }
  UnknownResponse: { readonly id: JsonRpc.RequestId | null }
  /** An incoming message over the size limit, skipped; `size` is a lower bound. */
  MessageTooLarge: { readonly size: number; readonly limit: number }
  ListenerError: { readonly error: unknown }
}>

/**
 * Constructors and matchers (`$is`, `$match`) for `Diagnostic`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const Diagnostic = Data.taggedEnum<Diagnostic>()

/**
 * Per-request options of `ClientTransportShape.request`.
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestOptions {
  /** Overrides the transport's default (30 s). `Duration.infinity` disables the timeout. */
  readonly timeout?: Duration.Input | undefined
  /**
   * Called once the request's timeout is running, with a function that
   * restarts it (the timeout counts again from then; a no-op once the request
   * settled). The protocol layer restarts it on each progress notification,
   * so a call stays alive while the server reports progress. Never called
   * when the request has no timeout.
   */
  readonly onDeadline?: ((restart: () => void) => void) | undefined
  /**
   * Extra HTTP headers for this request (the stateless era's `Mcp-Param-*`
   * headers); transports without headers ignore them.
   */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Receives the request's JSON-RPC id once assigned (subscriptions are known by it). */
  readonly onId?: ((id: JsonRpc.RequestId) => void) | undefined
}

/**
 * Answers a request the server sends us. A failure with `RpcError` becomes the JSON-RPC error reply.
 *
 * @since 0.1.0
 * @category models
 */
export type RequestHandler = (request: JsonRpc.JsonRpcRequest) => Effect.Effect<unknown, RpcError>

/**
 * A connected client transport: requests and notifications to the server, and what comes back.
 *
 * Built by each transport's `make` for the life of its scope; closing the scope closes the connection.
 * `A` is what signing in can fail with: `never` for transports that cannot
 * sign in (stdio, in-memory), `AuthError` for HTTP ones.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClientTransportShape<A = AuthError> {
  readonly kind: "stdio" | "streamable-http" | "sse" | "in-memory"
  /** The server's URL, for the HTTP transports (`server.address` and `server.port` of the client spans). */
  readonly url?: string | undefined
  /** Sends a request and waits for its result (or typed failure). Interrupting it cancels it at the peer. */
  readonly request: (
    method: string,
    params?: unknown,
    options?: RequestOptions
  ) => Effect.Effect<unknown, RequestError<A>>
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void, NotifyError<A>>
  /**
   * Notifications from the server. Bounded: a subscriber that falls behind
   * loses the oldest. The stream subscribes when it is run, so one forked
   * just before a request may miss what the request makes the server say;
   * `subscribeNotifications` subscribes at once.
   */
  readonly notifications: Stream.Stream<JsonRpc.JsonRpcNotification>
  /**
   * Subscribes now, in the caller's scope, and returns the notifications
   * from this moment on, however late the stream is run (same bound as
   * `notifications`). The subscription ends with the scope or the transport.
   */
  readonly subscribeNotifications: Effect.Effect<Stream.Stream<JsonRpc.JsonRpcNotification>, never, Scope.Scope>
  /** Replaces the handler for server-to-client requests (default: `ping` → `{}`, else -32601). */
  readonly setRequestHandler: (handler: RequestHandler) => Effect.Effect<void>
  readonly state: SubscriptionRef.SubscriptionRef<ConnectionState>
  readonly diagnostics: Stream.Stream<Diagnostic>
  /** Server stderr, line by line (stdio only; empty elsewhere). */
  readonly stderr: Stream.Stream<string>
  /**
   * Called by the protocol layer once the version is known (HTTP sends it as a
   * header). A stateless revision (2026-07-28 on) puts an HTTP transport in the
   * stateless mode: routing headers on every POST, no session, no GET stream;
   * a handshake revision puts it back.
   */
  readonly setProtocolVersion: (version: string) => Effect.Effect<void>
  /** Completes with the close reason when the transport closes, for whatever reason. */
  readonly awaitClosed: Effect.Effect<TransportClosed>
  /** Requests still waiting for a response (diagnostics and tests). */
  readonly pendingCount: Effect.Effect<number>
}

/**
 * The authorization errors of a transport (`never` when it cannot sign in).
 *
 * @since 0.1.0
 * @category models
 */
export type AuthErrorOf<T> = T extends { readonly request: (...args: ReadonlyArray<any>) => Effect.Effect<any, infer E, any> }
  ? Extract<E, AuthError>
  : never

/**
 * The client transport as a service: each transport's `layer` provides it, `McpClient.make` and
 * `McpClient.layer` use it.
 *
 * @since 0.1.0
 * @category services
 */
export class ClientTransport extends Context.Service<ClientTransport, ClientTransportShape>()(
  "effect-mcp-transport/ClientTransport"
) {}

