/**
 * Middleware around every request a `McpServer` serves, in both eras and on
 * every transport: a function from the rest of the server (`next`) to a new
 * request handler. It sees the request described (`McpRequest`: method, tool,
 * prompt or resource name, params, principal, session, era), may answer it
 * itself (fail with `RpcError`, or succeed with a reply of its own), run
 * effects before and after `next`, and provide services the handlers need.
 *
 * Ready-made pieces: `requirePrincipal` (authentication and authorization),
 * `rateLimit` (a token bucket per principal), `logging`, `provideService`.
 * Every request also runs in a span (`tools/call echo`), whatever
 * middleware there is: see `requestSpan`.
 *
 * Notifications do not pass through middleware: they get no reply to refuse.
 *
 * @since 0.1.0
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as JsonRpc from "../JsonRpc.ts"
import { RpcError } from "../McpError.ts"
import { ErrorCode, type McpMethod, type McpRequest, type Middleware } from "./internal/MiddlewareShape.ts"

export { compose, describeRequest, requestSpan } from "./internal/MiddlewareChain.ts"
export { ErrorCode, type McpMethod, type McpRequest, type Middleware, type Next, reply } from "./internal/MiddlewareShape.ts"
export {
  makeRateLimitBuckets,
  rateLimit,
  type RateLimitBucket,
  type RateLimitBuckets,
  type RateLimitOptions,
  SharedRateLimitBuckets
} from "./internal/RateLimit.ts"
export { logging, type LoggingOptions, type Outcome } from "./internal/RequestLogging.ts"

// ---------------------------------------------------------------------------
// Ready-made middleware

/**
 * A middleware computing a service per request and giving it to the
 * handlers (e.g. the tenant of the principal). Fail with `RpcError` to refuse the request.
 *
 * @since 0.1.0
 * @category constructors
 */
export const provideService = <I, S, R = never>(
  key: Context.Key<I, S>,
  make: (request: McpRequest) => Effect.Effect<S, RpcError, R>
): Middleware<I, R> =>
(next) =>
(request) => Effect.flatMap(make(request), (service) => Effect.provideService(next(request), key, service))

/**
 * Options of `requirePrincipal`.
 *
 * @since 0.1.0
 * @category models
 */
export interface RequirePrincipalOptions<R> {
  /**
   * Whether the principal may make this request (the principal is
   * `request.principal`, never undefined here); false answers `Forbidden`.
   * Default: every principal may make every request.
   */
  readonly allow?: ((request: McpRequest & { readonly principal: string }) => boolean | Effect.Effect<boolean, never, R>) | undefined
  /** Requests served without a principal, by method. Default: none (`ping` and `initialize` included). */
  readonly exempt?: ReadonlyArray<McpMethod> | undefined
}

/**
 * Refuses requests with no principal (`Unauthenticated`, -32011) and, with
 * `allow`, those the principal may not make (`Forbidden`, -32012). The
 * principal comes from the transport (`HandlerContext.principal`, set by the
 * HTTP transport's `authenticate` hook), so on stdio and in memory every
 * request not `exempt` is refused.
 *
 * @since 0.1.0
 * @category constructors
 */
export const requirePrincipal = <R = never>(options: RequirePrincipalOptions<R> = {}): Middleware<never, R> => {
  const exempt = new Set<string>(options.exempt ?? [])
  const allow = options.allow
  return (next) => (request) => {
    if (exempt.has(request.method)) return next(request)
    const principal = request.principal
    if (principal === undefined) {
      return Effect.fail(
        new RpcError({
          code: ErrorCode.Unauthenticated,
          rpcMessage: "Unauthenticated: this server serves authenticated principals only",
          data: { method: request.method }
        })
      )
    }
    if (allow === undefined) return next(request)
    const allowed = allow({ ...request, principal })
    const decide = (ok: boolean): Effect.Effect<JsonRpc.JsonRpcResponse, RpcError> =>
      ok ? next(request) : Effect.fail(
        new RpcError({
          code: ErrorCode.Forbidden,
          rpcMessage: request.name === undefined
            ? `Forbidden: ${principal} may not call ${request.method}`
            : `Forbidden: ${principal} may not call ${request.method} ${request.name}`,
          data: { method: request.method, ...(request.name === undefined ? {} : { name: request.name }) }
        })
      )
    return typeof allowed === "boolean" ? decide(allowed) : Effect.flatMap(allowed, decide)
  }
}
