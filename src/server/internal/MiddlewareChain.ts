/**
 * Middleware put together around the server (used by McpServer's handler):
 * each request described as middleware sees it, the chain that keeps `next`
 * total, and the span and metrics around the whole. Re-exported by
 * `Middleware`.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as JsonRpc from "../../JsonRpc.ts"
import { RpcError } from "../../McpError.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import * as McpSpan from "../../internal/McpSpan.ts"
import * as Metrics from "../../observability/Metrics.ts"
import { Enabled as MetricsEnabled } from "../../observability/internal/MetricsContext.ts"
import type { HandlerContext } from "../Handler.ts"
import type { McpRequest, Middleware, Next } from "./MiddlewareShape.ts"
import * as ServerSpans from "./ServerSpans.ts"

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

/**
 * Whether metrics or spans could record a request whose handler runs with
 * `services` alone (`HandlerContext.observed`).
 *
 * @since 0.1.0
 * @category utils
 */
export const observedIn = (services: Context.Context<never>): boolean =>
  Context.get(services, MetricsEnabled) || McpSpan.enabledIn(services)

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
  // No middleware: the description is read only by metrics and spans, so a request served
  // without either (the default) is not described at all (it would read `_meta` once more).
  const bare = middleware.length === 0
  return (message, context) =>
    // The transport knows neither can record it: no step to look.
    bare && context.observed === false ? serve(message, context) : Effect.withFiber((fiber) => {
      const recorded = fiber.getRef(MetricsEnabled) || McpSpan.enabled(fiber)
      if (bare && !recorded) return serve(message, context)
      const request = describeRequest(message, context, stateless)
      if (!recorded) return outer(request)
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
