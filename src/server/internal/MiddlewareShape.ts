/**
 * What middleware is: the request it sees (`McpRequest`), the rest of the
 * server it wraps (`Next`), the middleware itself, the reply it may answer
 * with on its own, and the error codes of the ready-made middleware.
 * Re-exported by `Middleware`.
 */
import type * as Effect from "effect/Effect"
import * as JsonRpc from "../../JsonRpc.ts"
import type { RpcError } from "../../McpError.ts"
import type * as ProtocolVersion from "../../ProtocolVersion.ts"
import type { HandlerContext } from "../Handler.ts"

/**
 * The request methods of MCP, and any other string (a server may serve its own methods).
 *
 * @since 0.1.0
 * @category models
 */
export type McpMethod =
  | "initialize"
  | "ping"
  | "logging/setLevel"
  | "server/discover"
  | "subscriptions/listen"
  | "tools/list"
  | "tools/call"
  | "prompts/list"
  | "prompts/get"
  | "resources/list"
  | "resources/templates/list"
  | "resources/read"
  | "resources/subscribe"
  | "resources/unsubscribe"
  | "completion/complete"
  | (string & {})

/**
 * One request as middleware sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface McpRequest {
  readonly method: McpMethod
  readonly id: JsonRpc.RequestId
  /**
   * The tool (`tools/call`) or prompt (`prompts/get`) named, or the resource
   * URI (`resources/read`, `resources/subscribe`, `resources/unsubscribe`);
   * undefined for other methods.
   */
  readonly name: string | undefined
  /** The request's params, as sent (`_meta` included). */
  readonly params: unknown
  /** `HandlerContext.principal`: who the transport's `authenticate` hook says is calling; undefined without one. */
  readonly principal: string | undefined
  /** The transport's session id (HTTP sessions); undefined on stdio, in memory and for stateless requests. */
  readonly sessionId: string | undefined
  /** `"modern"` for a request of the stateless era (2026-07-28 `_meta`), `"legacy"` for the handshake era. */
  readonly era: ProtocolVersion.Era
  /** The JSON-RPC request `next` serves: pass a request with another `message` to change what the handlers see. */
  readonly message: JsonRpc.JsonRpcRequest
  /** The transport's context of this request. */
  readonly context: HandlerContext
}

/**
 * The rest of the server, as middleware calls it: total (every failure is already a reply),
 * needing `R`.
 *
 * @since 0.1.0
 * @category models
 */
export type Next<R = never> = (request: McpRequest) => Effect.Effect<JsonRpc.JsonRpcResponse, never, R>

/**
 * A middleware: given the rest of the server, the handler of one request. It
 * answers with `next`'s reply or a reply of its own; an `RpcError` failure is
 * sent as the error reply. `Provides`
 * are the services it gives `next` (removed from what the server needs),
 * `Requires` those it needs itself. Any other failure or defect is logged
 * and answered -32603, so `next` never fails for the middleware around it.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import type * as Middleware from "effect-mcp-transport/server/Middleware"
 *
 * // Times every request and logs the slow ones.
 * const slowLog: Middleware.Middleware = (next) => (request) =>
 *   Effect.timed(next(request)).pipe(
 *     Effect.tap(([took]) => took.valueOf() > 1_000 ? Effect.logWarning(`slow ${request.method}`) : Effect.void),
 *     Effect.map(([, reply]) => reply)
 *   )
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface Middleware<Provides = never, Requires = never> {
  (next: Next<Provides>): (request: McpRequest) => Effect.Effect<JsonRpc.JsonRpcResponse, RpcError, Requires>
}

/**
 * The success reply to `request`, for middleware that answers on its own.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reply = (request: McpRequest, result: unknown): JsonRpc.JsonRpcResponse => JsonRpc.success(request.id, result)

/**
 * The codes of the errors the ready-made middleware answer with (server-defined range).
 *
 * @since 0.1.0
 * @category constants
 */
export const ErrorCode = {
  /** `requirePrincipal`: the transport named no principal. */
  Unauthenticated: -32011,
  /** `requirePrincipal`: the principal may not make this request. */
  Forbidden: -32012,
  /** `rateLimit`: the principal's bucket is empty; `data.retryAfterMs` says when it has a token again. */
  RateLimited: -32029
} as const
