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
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as LogLevel from "effect/LogLevel"
import * as JsonRpc from "../JsonRpc.ts"
import { RpcError } from "../McpError.ts"
import type * as ProtocolVersion from "../ProtocolVersion.ts"
import * as RequestMeta from "../RequestMeta.ts"
import * as McpSpan from "../internal/McpSpan.ts"
import * as Metrics from "../observability/Metrics.ts"
import { Enabled as MetricsEnabled } from "../observability/internal/MetricsContext.ts"
import type { HandlerContext } from "./Handler.ts"
import * as ServerSpans from "./internal/ServerSpans.ts"

// ---------------------------------------------------------------------------
// Models

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

/**
 * Options of `rateLimit`: a token bucket of `capacity` tokens per key, one token back every `refillEvery`.
 *
 * @since 0.1.0
 * @category models
 */
export interface RateLimitOptions {
  /** The largest burst a key may make: its bucket's tokens, full at first. */
  readonly capacity: number
  /** How long one token takes to come back, e.g. `"1 second"`. */
  readonly refillEvery: Duration.Input
  /**
   * Whose bucket a request takes from; `undefined` exempts the request.
   * Default: its principal, and one shared bucket (`"anonymous"`) for
   * requests with none.
   */
  readonly key?: ((request: McpRequest) => string | undefined) | undefined
  /** Buckets kept at most; past it, full buckets (their keys idle) are dropped. Default 10 000. Not for `SharedRateLimitBuckets`, which bounds itself. */
  readonly maxKeys?: number | undefined
}

/**
 * The size of a `rateLimit` bucket: `capacity` tokens, one back every `refillMs`.
 *
 * @since 0.1.0
 * @category models
 */
export interface RateLimitBucket {
  readonly capacity: number
  readonly refillMs: number
}

/**
 * Where `rateLimit` keeps its token buckets. `take` takes one token from
 * `key`'s bucket at `now` (a bucket seen for the first time is full) and
 * answers `undefined`, or, when the bucket is empty, the milliseconds until
 * it has a token again. A store shared by several instances of a server
 * (one on Redis, say) limits a principal across all of them.
 *
 * @since 0.1.0
 * @category models
 */
export interface RateLimitBuckets {
  readonly take: (key: string, bucket: RateLimitBucket, now: number) => Effect.Effect<number | undefined>
}

/** In-memory buckets, read and written synchronously. */
const memoryBuckets = (maxKeys: number) => {
  // Tokens as of `at`; what came back since is added when the bucket is next read.
  const buckets = new Map<string, { tokens: number; at: number; capacity: number; refillMs: number }>()
  const level = (bucket: { tokens: number; at: number; capacity: number; refillMs: number }, now: number) =>
    Math.min(bucket.capacity, bucket.tokens + (now - bucket.at) / bucket.refillMs)
  const sweep = (now: number) => {
    for (const [key, bucket] of buckets) {
      if (level(bucket, now) >= bucket.capacity) buckets.delete(key)
    }
  }
  return (key: string, size: RateLimitBucket, now: number): number | undefined => {
    let bucket = buckets.get(key)
    if (bucket === undefined) {
      if (buckets.size >= maxKeys) sweep(now)
      buckets.set(key, bucket = { tokens: size.capacity, at: now, capacity: size.capacity, refillMs: size.refillMs })
    }
    bucket.capacity = size.capacity
    bucket.refillMs = size.refillMs
    bucket.tokens = level(bucket, now)
    bucket.at = now
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return undefined
    }
    return Math.ceil((1 - bucket.tokens) * size.refillMs)
  }
}

/**
 * Token buckets in this process's memory, at most `maxKeys` of them (default
 * 10 000; past it, full buckets, their keys idle, are dropped). What
 * `rateLimit` uses on its own; provide one as `SharedRateLimitBuckets` to
 * share buckets between servers of one process, e.g. in a test.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRateLimitBuckets = (options: { readonly maxKeys?: number | undefined } = {}): RateLimitBuckets => {
  const take = memoryBuckets(options.maxKeys ?? 10_000)
  return { take: (key, bucket, now) => Effect.sync(() => take(key, bucket, now)) }
}

/**
 * The buckets every `rateLimit` takes from, when provided (to the transport
 * that serves the handler, or around the handler's calls). Default: none,
 * and each `rateLimit` keeps buckets of its own in memory. Buckets are
 * shared by key: give `rateLimit`s with different limits different `key`s.
 *
 * @since 0.1.0
 * @category references
 */
export class SharedRateLimitBuckets extends Context.Reference<RateLimitBuckets | undefined>(
  "effect-mcp-transport/server/Middleware/SharedRateLimitBuckets",
  { defaultValue: () => undefined }
) {}

/**
 * Refuses a request when its key's bucket is empty, with `RateLimited`
 * (-32029) and `data.retryAfterMs`. The buckets live in the middleware value
 * (every handler built from a server with it shares them), unless
 * `SharedRateLimitBuckets` provides a store.
 *
 * @since 0.1.0
 * @category constructors
 */
export const rateLimit = (options: RateLimitOptions): Middleware => {
  const size: RateLimitBucket = {
    capacity: Math.max(1, options.capacity),
    refillMs: Math.max(1, Duration.toMillis(Duration.fromInputUnsafe(options.refillEvery)))
  }
  const keyOf = options.key ?? ((request: McpRequest) => request.principal ?? "anonymous")
  const own = memoryBuckets(options.maxKeys ?? 10_000)
  return (next) => (request) => {
    const key = keyOf(request)
    if (key === undefined) return next(request)
    const decide = (retryAfterMs: number | undefined) =>
      retryAfterMs === undefined ? next(request) : Effect.fail(
        new RpcError({
          code: ErrorCode.RateLimited,
          rpcMessage: `Rate limited: retry in ${retryAfterMs} ms`,
          data: { retryAfterMs }
        })
      )
    return Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.flatMap(SharedRateLimitBuckets, (shared) =>
        shared === undefined ? decide(own(key, size, now)) : Effect.flatMap(shared.take(key, size, now), decide)))
  }
}

/**
 * Options of `logging`.
 *
 * @since 0.1.0
 * @category models
 */
export interface LoggingOptions {
  /** The level of the line logged per request. Default `"Info"`. */
  readonly level?: LogLevel.Severity | undefined
}

/**
 * Logs one line per request once it is answered (`MCP tools/call echo ok`),
 * annotated with `mcp.method`, `mcp.name`, `mcp.era`, `mcp.session`,
 * `mcp.principal`, `mcp.outcome` and `mcp.durationMs`. An interrupted
 * request (cancelled) is logged as `interrupted`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const logging = (options: LoggingOptions = {}): Middleware => {
  const log = Effect.logWithLevel(options.level ?? "Info")
  return (next) => (request) =>
    Effect.flatMap(Clock.currentTimeMillis, (start) =>
      Effect.onExit(next(request), (exit) =>
        Effect.flatMap(Clock.currentTimeMillis, (end) => {
          const o = outcomeOf(exit)
          const text = o.code === undefined ? o.outcome : `${o.outcome} ${o.code}`
          return log(`MCP ${title(request)} ${text}`).pipe(
            Effect.annotateLogs({
              "mcp.method": request.method,
              ...(request.name === undefined ? {} : { "mcp.name": request.name }),
              "mcp.era": request.era,
              ...(request.sessionId === undefined ? {} : { "mcp.session": request.sessionId }),
              ...(request.principal === undefined ? {} : { "mcp.principal": request.principal }),
              "mcp.outcome": text,
              "mcp.durationMs": end - start
            })
          )
        })))
}

// ---------------------------------------------------------------------------
// Composition (used by McpServer)

const NAMED: ReadonlyMap<string, "name" | "uri"> = new Map([
  ["tools/call", "name"],
  ["prompts/get", "name"],
  ["resources/read", "uri"],
  ["resources/subscribe", "uri"],
  ["resources/unsubscribe", "uri"]
])

const nameOf = (message: JsonRpc.JsonRpcRequest): string | undefined => {
  const field = NAMED.get(message.method)
  const params = message.params as Record<string, unknown> | undefined
  if (field === undefined || typeof params !== "object" || params === null) return undefined
  const value = params[field]
  return typeof value === "string" ? value : undefined
}

/**
 * Describes a request as middleware sees it. `stateless`: whether the server
 * serves the stateless era (else every request is of the handshake era).
 *
 * @since 0.1.0
 * @category utils
 */
export const describeRequest = (message: JsonRpc.JsonRpcRequest, context: HandlerContext, stateless: boolean): McpRequest => ({
  method: message.method,
  id: message.id,
  name: nameOf(message),
  params: message.params,
  principal: context.principal,
  sessionId: context.sessionId,
  era: stateless && message.method !== "initialize" && RequestMeta.readMeta(message.params)._tag !== "Absent"
    ? "modern"
    : "legacy",
  message,
  context
})

const title = (request: McpRequest) =>
  request.method === "tools/call" || request.method === "prompts/get"
    ? request.name === undefined ? request.method : `${request.method} ${request.name}`
    : request.method

/**
 * How a request ended: `ok`, `input_required` (a stateless request asking
 * the client for more), `error` with the JSON-RPC code (a failure or defect
 * is the -32603 the transport sends), or `interrupted` (the client
 * cancelled; no reply).
 *
 * @since 0.1.0
 * @category models
 */
export interface Outcome {
  readonly outcome: "ok" | "input_required" | "error" | "interrupted"
  readonly code?: number | undefined
}

const outcomeOf = (exit: Exit.Exit<JsonRpc.JsonRpcResponse, unknown>): Outcome => {
  if (exit._tag === "Failure") {
    return Cause.hasInterruptsOnly(exit.cause)
      ? { outcome: "interrupted" }
      : { outcome: "error", code: JsonRpc.ErrorCode.InternalError }
  }
  const response = exit.value
  if ("error" in response) return { outcome: "error", code: response.error.code }
  const result = response.result as { readonly resultType?: unknown } | undefined
  return result?.resultType === "input_required" ? { outcome: "input_required" } : { outcome: "ok" }
}

/**
 * Runs the serving of one request in a server span, by OpenTelemetry's
 * semantic conventions for MCP: named `{mcp.method.name} {target}`
 * (`tools/call echo`, `tools/list`), kind SERVER, a child of the client span
 * named by the request's `_meta.traceparent`, with `mcp.method.name`,
 * `jsonrpc.request.id`, `gen_ai.tool.name` / `gen_ai.prompt.name` /
 * `mcp.resource.uri`, `gen_ai.operation.name`, `mcp.protocol.version`,
 * `mcp.session.id`, `network.transport`, `client.address`, and when it fails
 * `error.type`, `rpc.response.status_code` and status ERROR; beside them
 * `mcp.era`, `mcp.principal.id` and `mcp.outcome` (`Outcome`). See
 * docs/observability.md. Nothing is done unless a tracer is installed
 * (Effect's default tracer exports nothing); turn spans off with
 * `References.TracerEnabled`.
 *
 * @since 0.1.0
 * @category utils
 */
export const requestSpan = <E, R>(
  request: McpRequest,
  effect: Effect.Effect<JsonRpc.JsonRpcResponse, E, R>
): Effect.Effect<JsonRpc.JsonRpcResponse, E, R> => ServerSpans.serve(request, effect)

/**
 * Composes middleware around `serve` (the server without them): the last in
 * the list is the outermost, the first sees the request last, just before
 * `serve`. The whole runs in `requestSpan`, and is recorded in the server's
 * metrics (`observability/Metrics`) under the revision `sessionVersion`
 * says the request's session negotiated.
 *
 * @since 0.1.0
 * @category utils
 */
export const compose = <R>(
  middleware: ReadonlyArray<Middleware<any, any>>,
  stateless: boolean,
  serve: (message: JsonRpc.JsonRpcRequest, context: HandlerContext) => Effect.Effect<JsonRpc.JsonRpcResponse, never, R>,
  sessionVersion: (context: HandlerContext) => string | undefined = () => undefined
): (message: JsonRpc.JsonRpcRequest, context: HandlerContext) => Effect.Effect<JsonRpc.JsonRpcResponse, never, R> => {
  let app: Next<any> = (request) => serve(request.message, request.context)
  for (const m of middleware) {
    const wrapped = m(app)
    // Replies here keep `next` total for the middleware around this one.
    app = (request) =>
      Effect.catchCause(Effect.suspend(() => wrapped(request)), (cause) => {
        if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        const failure = cause.reasons.find((r) => r._tag === "Fail")
        if (failure !== undefined && failure._tag === "Fail" && failure.error instanceof RpcError) {
          const e = failure.error
          return Effect.succeed(JsonRpc.failure(request.id, e.code, e.rpcMessage, e.data))
        }
        return Effect.as(ServerSpans.unexpectedFailure(request.method, cause), JsonRpc.internalError(request.id))
      })
  }
  const outer = app
  return (message, context) =>
    Effect.withFiber((fiber) => {
      const request = describeRequest(message, context, stateless)
      // Neither metrics nor a tracer (the default): nothing to record around the request.
      if (!fiber.getRef(MetricsEnabled) && !McpSpan.enabled(fiber)) return outer(request)
      return Metrics.serverOperation(request.method, request.name, versionOf(request, sessionVersion), requestSpan(request, outer(request)))
    })
}

/** The revision a request is served under: its own `_meta` (stateless era), the one `initialize` answered with, else the session's. */
const versionOf = (request: McpRequest, sessionVersion: (context: HandlerContext) => string | undefined) =>
(exit: Exit.Exit<JsonRpc.JsonRpcResponse, unknown>): string | undefined => {
  if (request.era === "modern") {
    const meta = RequestMeta.readMeta(request.params)
    if (meta._tag === "Valid") return meta.meta.protocolVersion
  }
  if (request.method === "initialize") {
    const result = exit._tag === "Success" && "result" in exit.value ? exit.value.result as { protocolVersion?: unknown } : undefined
    return typeof result?.protocolVersion === "string" ? result.protocolVersion : undefined
  }
  return sessionVersion(request.context)
}
