/**
 * The server span of every request a server serves (OpenTelemetry's
 * semantic conventions for MCP, kind SERVER): named `{mcp.method.name}
 * {target}`, a child of the client span named by the request's
 * `_meta.traceparent` (the remote parent), linked to the span the transport
 * serves it under (an HTTP server span), ended with status ERROR and
 * `error.type` when the reply is an error or a tool result with `isError`.
 *
 * Also where a failure nobody meant becomes visible: `unexpectedFailure`
 * logs the cause, reports it to Effect's `ErrorReporter`s and puts it on the
 * request's span, while the client gets a bare -32603.
 *
 * With no tracer installed (Effect's default) no span is made and no
 * attribute is built.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as ErrorReporter from "effect/ErrorReporter"
import * as Exit from "effect/Exit"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as Tracer from "effect/Tracer"
import type * as JsonRpc from "../../JsonRpc.ts"
import * as McpSpan from "../../internal/McpSpan.ts"
import * as NetworkPeer from "../../internal/NetworkPeer.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import type { Handler, HandlerContext } from "../Handler.ts"
import type { RequestHeaders } from "../http/RequestHeaders.ts"
import type { SessionRecord } from "../SessionRegistry.ts"
import { isRecord } from "../../internal/Records.ts"

/** Who the transport serves (also what the server's metrics read). */
export type Peer = NetworkPeer.Peer
export const CurrentPeer = NetworkPeer.CurrentPeer
export const PIPE = NetworkPeer.PIPE

/**
 * Serves one HTTP request's messages with its peer known: the client's
 * address, and the span to link (the HTTP server span effect/http made, or
 * else the request's own `traceparent`). Nothing when tracing is off.
 */
export const withHttpPeer = <A, E, R>(
  request: HttpServerRequest.HttpServerRequest,
  headers: RequestHeaders,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    if (!McpSpan.enabled(fiber)) return effect
    const traceparent = headers["traceparent"]
    const link = McpSpan.ambientSpan(fiber) ??
      (traceparent === undefined ? undefined : McpSpan.remoteParent({ _meta: { traceparent } }))
    const address = request.remoteAddress
    return Effect.provideService(effect, CurrentPeer, {
      transport: "tcp",
      protocol: "http",
      address: address._tag === "Some" ? address.value : undefined,
      link,
      protocolVersion: headers["mcp-protocol-version"]
    })
  })

/**
 * `services` with what `current` knows of the request being served, for
 * handlers run with the transport's services in place of the request's:
 * its peer, and the span it runs under (the HTTP server span) unless
 * `services` hold one. Without tracing there is neither, and `services`
 * come back as they are.
 */
export const carryRequest = (current: Context.Context<never>, services: Context.Context<never>): Context.Context<never> => {
  // The peer is there exactly when tracing is on (`withHttpPeer`, which an HTTP transport whose services record
  // nothing skips): without it there is no span to carry either.
  const peer = Context.get(current, CurrentPeer)
  if (peer === undefined) return services
  const withPeer = Context.add(services, CurrentPeer, peer)
  const span = Context.getOrUndefined(current, Tracer.ParentSpan)
  return span === undefined || Context.getOrUndefined(services, Tracer.ParentSpan) !== undefined
    ? withPeer
    : Context.add(withPeer, Tracer.ParentSpan, span)
}

/** One request being served under a span: what `unexpectedFailure` records for the span's end. */
interface Served {
  readonly span: Tracer.Span
  failure: Cause.Cause<unknown> | undefined
}

const CurrentServed = Context.Reference<Served | undefined>("effect-mcp-transport/ServerSpans/CurrentServed", {
  defaultValue: () => undefined
})

/** What the server span needs of a request (`Middleware.McpRequest` has it). */
export interface ServedRequest {
  readonly method: string
  readonly id: JsonRpc.RequestId
  readonly params: unknown
  readonly sessionId: string | undefined
  readonly principal: string | undefined
  readonly era: "modern" | "legacy"
}

/**
 * Serves `request` (with `effect`) in its server span. A reply of `null`
 * (none) ends the span as it is; an interrupted request (the client
 * cancelled) ends it with `mcp.outcome = interrupted`.
 */
export const serve = <A extends JsonRpc.JsonRpcResponse | null, E, R>(
  request: ServedRequest,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    if (!McpSpan.enabled(fiber)) return effect
    const recordContent = fiber.getRef(McpSpan.RecordToolContent)
    const attributes = McpSpan.requestAttributes(request.method, request.params, recordContent)
    attributes["jsonrpc.request.id"] = String(request.id)
    attributes["mcp.era"] = request.era
    if (request.sessionId !== undefined) attributes["mcp.session.id"] = request.sessionId
    if (request.principal !== undefined) attributes["mcp.principal.id"] = request.principal
    const peer = fiber.getRef(CurrentPeer)
    if (peer !== undefined) {
      attributes["network.transport"] = peer.transport
      if (peer.protocol !== undefined) attributes["network.protocol.name"] = peer.protocol
      if (peer.address !== undefined) attributes["client.address"] = peer.address
      if (peer.protocolVersion !== undefined && attributes["mcp.protocol.version"] === undefined) {
        attributes["mcp.protocol.version"] = peer.protocolVersion
      }
    }
    const remote = McpSpan.remoteParent(request.params)
    const ambient = peer?.link ?? McpSpan.ambientSpan(fiber)
    const links: Array<Tracer.SpanLink> = remote !== undefined && ambient !== undefined
      ? [{ span: ambient, attributes: {} }]
      : []
    const propagated = McpSpan.propagatedOf(request.params)
    return Effect.flatMap(
      Effect.makeSpan(McpSpan.spanName(request.method, request.params), {
        kind: "server",
        attributes,
        links,
        ...(remote === undefined ? {} : { parent: remote })
      }),
      (span) => {
        const served: Served = { span, failure: undefined }
        const inner = Effect.provideService(effect, CurrentServed, served)
        return McpSpan.within(
          span,
          propagated === undefined ? inner : Effect.provideService(inner, McpSpan.IncomingPropagation, propagated),
          (exit) => endOf(span, served, request.method, recordContent, exit)
        )
      }
    )
  })

/**
 * Serves a notification the server receives in its server span (kind
 * SERVER, named like a request's, no `jsonrpc.request.id`), a child of the
 * client span its `_meta.traceparent` names. Nothing when tracing is off.
 */
export const notification = <A, E, R>(
  message: JsonRpc.JsonRpcNotification,
  sessionId: string | undefined,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    if (!McpSpan.enabled(fiber)) return effect
    const attributes = McpSpan.requestAttributes(message.method, message.params, false)
    if (sessionId !== undefined) attributes["mcp.session.id"] = sessionId
    const peer = fiber.getRef(CurrentPeer)
    if (peer !== undefined) {
      attributes["network.transport"] = peer.transport
      if (peer.protocol !== undefined) attributes["network.protocol.name"] = peer.protocol
      if (peer.address !== undefined) attributes["client.address"] = peer.address
    }
    const remote = McpSpan.remoteParent(message.params)
    const ambient = peer?.link ?? McpSpan.ambientSpan(fiber)
    return Effect.flatMap(
      Effect.makeSpan(McpSpan.spanName(message.method, message.params), {
        kind: "server",
        attributes,
        links: remote !== undefined && ambient !== undefined ? [{ span: ambient, attributes: {} }] : [],
        ...(remote === undefined ? {} : { parent: remote })
      }),
      (span) => McpSpan.within(span, effect, (exit) => exit)
    )
  })

const endOf = (
  span: Tracer.Span,
  served: Served,
  method: string,
  recordContent: boolean,
  exit: Exit.Exit<JsonRpc.JsonRpcResponse | null, unknown>
): Exit.Exit<unknown, unknown> => {
  if (exit._tag === "Failure") return exit
  const response = exit.value
  if (response === null) return exit
  if ("error" in response) {
    span.attribute("mcp.outcome", "error")
    const status = McpSpan.rpcFailure(span, response.error.code, response.error.message)
    // The cause stays on the span (and in the exporter's exception event); the client saw none of it.
    return served.failure === undefined ? status : Exit.failCause(served.failure)
  }
  const result = response.result
  if (isRecord(result) && result.resultType === "input_required") {
    span.attribute("mcp.outcome", "input_required")
    return exit
  }
  if (McpSpan.isToolError(method, result)) {
    span.attribute("mcp.outcome", "error")
    return McpSpan.toolFailure(span)
  }
  span.attribute("mcp.outcome", "ok")
  if (method === "initialize" && isRecord(result) && typeof result.protocolVersion === "string") {
    span.attribute("mcp.protocol.version", result.protocolVersion)
  }
  if (recordContent && method === "tools/call") span.attribute("gen_ai.tool.call.result", McpSpan.json(result))
  return exit
}

/**
 * `effect`, with the protocol revision the request is served under recorded
 * on its span (`mcp.protocol.version`) first: the handshake era knows it only
 * from the session.
 */
export const withProtocolVersion = <A, E, R>(version: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    fiber.getRef(CurrentServed)?.span.attribute("mcp.protocol.version", version)
    return effect
  })

/**
 * A failure or defect of a handler (or middleware) that is no deliberate
 * JSON-RPC error, about to be answered -32603 with no detail: logged with
 * its cause, reported through Effect's `ErrorReporter`s, and kept for the
 * request's span (status ERROR with the cause, `error.type = -32603`).
 */
export const unexpectedFailure = (method: string, cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    const served = fiber.getRef(CurrentServed)
    if (served !== undefined) served.failure = cause
    return Effect.andThen(
      ErrorReporter.report(cause),
      Effect.logError(`MCP ${method} failed; answered -32603 (Internal error)`, Cause.pretty(cause))
    )
  })

/**
 * A handler whose requests are served in server spans: for handlers that
 * are not an `McpServer` (whose middleware does it), such as the bridge.
 * The revision of a handshake-era session is learnt from its `initialize`
 * answer.
 */
export const traceHandler = <R>(handler: Handler<R>): Handler<R> => {
  const versions = new Map<string, string>()
  const learn = (sessionId: string | undefined, reply: JsonRpc.JsonRpcResponse | null) => {
    const version = reply !== null && "result" in reply && isRecord(reply.result) ? reply.result.protocolVersion : undefined
    if (typeof version === "string") versions.set(sessionId ?? "", version)
  }
  const traced = (message: JsonRpc.JsonRpcRequest, context: HandlerContext) => {
    const served = handler(message, context)
    if (message.method !== "initialize") {
      const version = versions.get(context.sessionId ?? "")
      return version === undefined ? served : withProtocolVersion(version, served)
    }
    return Effect.tap(served, (reply) => Effect.sync(() => learn(context.sessionId, reply)))
  }
  const sessionEnded = handler.sessionEnded
  return Object.assign(
    (message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification, context: HandlerContext) =>
      "id" in message
        ? serve({
          method: message.method,
          id: message.id,
          params: message.params,
          sessionId: context.sessionId,
          principal: context.principal,
          era: message.method !== "initialize" && RequestMeta.readMeta(message.params)._tag !== "Absent" ? "modern" : "legacy"
        }, traced(message, context))
        : notification(message, context.sessionId, handler(message, context)),
    handler,
    sessionEnded === undefined ? {} : {
      sessionEnded: (sessionId: string | undefined) =>
        Effect.andThen(Effect.sync(() => versions.delete(sessionId ?? "")), sessionEnded(sessionId))
    },
    {
      // A session another instance of a fleet made: its revision comes with its record.
      adoptSession: (sessionId: string, record: SessionRecord, context: HandlerContext) =>
        Effect.andThen(
          Effect.sync(() => versions.set(sessionId, record.protocolVersion)),
          handler.adoptSession?.(sessionId, record, context) ?? Effect.void
        )
    }
  )
}
