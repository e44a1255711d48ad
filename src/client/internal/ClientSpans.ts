/**
 * The client span of every request and notification a client sends
 * (OpenTelemetry's semantic conventions for MCP, kind CLIENT), made around
 * the transport so that every sender (McpClient, McpManager's clients, the
 * bridge's upstream) gets them: named `{mcp.method.name} {target}`, with the
 * span's W3C trace context injected into `params._meta` (`traceparent`,
 * unprefixed, and the `tracestate` / `baggage` of the request being served,
 * if any) so that the server's span is its child.
 *
 * With no tracer installed (Effect's default) requests go out as they are:
 * no span, no attributes, no `_meta` added. One-shot calls (`OneShot`),
 * which use no transport, get the same through `oneShot` and `sending`.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import type * as Tracer from "effect/Tracer"
import type * as JsonRpc from "../../JsonRpc.ts"
import * as McpSpan from "../../internal/McpSpan.ts"
import type { ClientTransportShape } from "../ClientTransport.ts"

interface Endpoint {
  readonly transport: "pipe" | "tcp" | undefined
  readonly address: string | undefined
  readonly port: number | undefined
}

const endpointOf = (transport: ClientTransportShape<any>): Endpoint => {
  if (transport.kind === "stdio") return { transport: "pipe", address: undefined, port: undefined }
  if (transport.kind === "in-memory") return { transport: undefined, address: undefined, port: undefined }
  let address: string | undefined
  let port: number | undefined
  if (transport.url !== undefined) {
    try {
      const url = new URL(transport.url)
      address = url.hostname.replace(/^\[|\]$/g, "")
      port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port)
    } catch {
      // Not a URL: no address.
    }
  }
  return { transport: "tcp", address, port }
}

const TRACED = Symbol.for("effect-mcp-transport/ClientSpans/traced")
const INNER = Symbol.for("effect-mcp-transport/ClientSpans/inner")

/**
 * Which transport a request sent from `fiber` goes through: for a transport
 * from `traced` and a fiber that traces nothing, the transport it wraps. A
 * sender that already looked at its fiber (`McpCallEngine`) calls that one,
 * and an untraced request costs no second look.
 */
export const senderFor = <T extends ClientTransportShape<any>>(transport: T): (fiber: Fiber.Fiber<unknown, unknown>) => T => {
  const inner = (transport as { readonly [INNER]?: T })[INNER]
  if (inner === undefined) return () => transport
  return (fiber) => McpSpan.enabled(fiber) ? transport : inner
}

/**
 * The transport with a client span around each request and notification it
 * sends. Tracing is decided per message, by the tracer of the fiber sending it.
 */
export const traced = <T extends ClientTransportShape<any>>(transport: T): T => {
  if ((transport as { readonly [TRACED]?: true })[TRACED] === true) return transport
  const endpoint = endpointOf(transport)
  let negotiated: string | undefined
  const sessionIdOf = (transport as { readonly sessionId?: unknown }).sessionId
  const sessionId = Effect.isEffect(sessionIdOf) ? sessionIdOf as Effect.Effect<string | undefined> : undefined

  const attributesOf = (method: string, params: unknown, recordContent: boolean) => {
    const attributes = McpSpan.requestAttributes(method, params, recordContent)
    if (attributes["mcp.protocol.version"] === undefined && negotiated !== undefined) {
      attributes["mcp.protocol.version"] = negotiated
    }
    if (endpoint.transport !== undefined) attributes["network.transport"] = endpoint.transport
    if (endpoint.transport === "tcp") attributes["network.protocol.name"] = "http"
    if (endpoint.address !== undefined) attributes["server.address"] = endpoint.address
    if (endpoint.port !== undefined) attributes["server.port"] = endpoint.port
    return attributes
  }

  const annotateSession = (span: Tracer.Span) =>
    sessionId === undefined ? Effect.void : Effect.map(sessionId, (id) => {
      if (id !== undefined) span.attribute("mcp.session.id", id)
    })

  const request: ClientTransportShape<any>["request"] = (method, params, options) =>
    Effect.withFiber((fiber) => {
      if (!McpSpan.enabled(fiber)) return transport.request(method, params, options)
      const recordContent = fiber.getRef(McpSpan.RecordToolContent)
      const propagated = fiber.getRef(McpSpan.IncomingPropagation)
      return Effect.flatMap(
        Effect.makeSpan(McpSpan.spanName(method, params), { kind: "client", attributes: attributesOf(method, params, recordContent) }),
        (span) => {
          const onId = (id: JsonRpc.RequestId) => {
            span.attribute("jsonrpc.request.id", String(id))
            options?.onId?.(id)
          }
          const sent = transport.request(method, McpSpan.injectInto(params, span, propagated), { ...options, onId })
          return McpSpan.within(
            span,
            Effect.tap(sent, (result) => {
              if (method === "initialize") {
                const version = (result as { readonly protocolVersion?: unknown } | null)?.protocolVersion
                if (typeof version === "string") span.attribute("mcp.protocol.version", version)
              }
              return annotateSession(span)
            }),
            (exit) => endOf(span, method, recordContent, exit)
          )
        }
      )
    })

  const notify: ClientTransportShape<any>["notify"] = (method, params) =>
    Effect.withFiber((fiber) => {
      if (!McpSpan.enabled(fiber)) return transport.notify(method, params)
      const propagated = fiber.getRef(McpSpan.IncomingPropagation)
      return Effect.flatMap(
        Effect.makeSpan(McpSpan.spanName(method, params), { kind: "client", attributes: attributesOf(method, params, false) }),
        (span) =>
          McpSpan.within(
            span,
            Effect.tap(transport.notify(method, McpSpan.injectInto(params, span, propagated)), () => annotateSession(span)),
            (exit) => failureOf(span, exit) ?? exit
          )
      )
    })

  const setProtocolVersion: ClientTransportShape<any>["setProtocolVersion"] = (version) =>
    Effect.suspend(() => {
      negotiated = version
      return transport.setProtocolVersion(version)
    })

  // Descriptors, not values: a transport's getters (the kind a `fromConfig` transport settles on) stay live.
  const copy = Object.create(Object.getPrototypeOf(transport), Object.getOwnPropertyDescriptors(transport))
  return Object.defineProperties(copy, {
    request: { value: request, enumerable: true },
    notify: { value: notify, enumerable: true },
    setProtocolVersion: { value: setProtocolVersion, enumerable: true },
    [TRACED]: { value: true },
    [INNER]: { value: transport }
  }) as T
}

/** The error attributes of a failed send: the JSON-RPC code of an error reply, else the failure's tag. */
const failureOf = (span: Tracer.Span, exit: Exit.Exit<unknown, unknown>): Exit.Exit<unknown, unknown> | undefined => {
  if (exit._tag === "Success") return undefined
  const failure = exit.cause.reasons.find((r) => r._tag === "Fail")
  if (failure === undefined || failure._tag !== "Fail") return exit
  const error = failure.error as { readonly _tag?: unknown; readonly code?: unknown; readonly rpcMessage?: unknown }
  if (error._tag === "RpcError" && typeof error.code === "number") {
    return McpSpan.rpcFailure(span, error.code, typeof error.rpcMessage === "string" ? error.rpcMessage : "")
  }
  span.attribute("error.type", typeof error._tag === "string" ? error._tag : "_OTHER")
  return exit
}

const endOf = (
  span: Tracer.Span,
  method: string,
  recordContent: boolean,
  exit: Exit.Exit<unknown, unknown>
): Exit.Exit<unknown, unknown> => {
  const failed = failureOf(span, exit)
  if (failed !== undefined) return failed
  const result = (exit as Exit.Success<unknown>).value
  if (McpSpan.isToolError(method, result)) return McpSpan.toolFailure(span)
  if (recordContent && method === "tools/call") span.attribute("gen_ai.tool.call.result", McpSpan.json(result))
  return exit
}

// ---------------------------------------------------------------------------
// One-shot calls: one span for the call, the handshake's messages under it

interface OneShotCall {
  readonly span: Tracer.Span
  readonly method: string
}

const CurrentOneShot = Context.Reference<OneShotCall | undefined>("effect-mcp-transport/ClientSpans/OneShot", {
  defaultValue: () => undefined
})

/**
 * A one-shot call (`OneShot.call`) in its client span: the request's own
 * POSTs carry the span's context, the handshake's messages (`initialize`,
 * `notifications/initialized`) are spans of their own under it.
 */
export const oneShot = <A, E, R>(url: string, method: string, params: unknown, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    if (!McpSpan.enabled(fiber)) return effect
    const recordContent = fiber.getRef(McpSpan.RecordToolContent)
    const endpoint = endpointOf({ kind: "streamable-http", url } as ClientTransportShape<any>)
    const attributes = McpSpan.requestAttributes(method, params, recordContent)
    attributes["network.transport"] = "tcp"
    attributes["network.protocol.name"] = "http"
    if (endpoint.address !== undefined) attributes["server.address"] = endpoint.address
    if (endpoint.port !== undefined) attributes["server.port"] = endpoint.port
    return Effect.flatMap(
      Effect.makeSpan(McpSpan.spanName(method, params), { kind: "client", attributes }),
      (span) =>
        McpSpan.within(
          span,
          Effect.provideService(effect, CurrentOneShot, { span, method }),
          (exit) => endOf(span, method, recordContent, exit)
        )
    )
  })

/** Sends `message` of a one-shot call with the trace context it should carry (as it is when not tracing). */
export const sending = <A, E, R>(
  message: JsonRpc.JsonRpcMessage,
  send: (message: JsonRpc.JsonRpcMessage) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    const call = fiber.getRef(CurrentOneShot)
    if (call === undefined || !("method" in message)) return send(message)
    const withContext = (span: Tracer.Span) => ({ ...message, params: McpSpan.injectInto(message.params, span, undefined) })
    if ("id" in message && message.method === call.method) {
      call.span.attribute("jsonrpc.request.id", String(message.id))
      const version = McpSpan.requestAttributes(message.method, message.params, false)["mcp.protocol.version"]
      if (version !== undefined) call.span.attribute("mcp.protocol.version", version)
      return send(withContext(call.span))
    }
    const attributes = McpSpan.requestAttributes(message.method, message.params, false)
    if ("id" in message) attributes["jsonrpc.request.id"] = String(message.id)
    return Effect.flatMap(
      Effect.makeSpan(McpSpan.spanName(message.method, message.params), { kind: "client", attributes }),
      (span) => McpSpan.within(span, send(withContext(span)), (exit) => failureOf(span, exit) ?? exit)
    )
  })

/**
 * The connection's negotiation in one span (`connect`, kind INTERNAL): the
 * era probe, the `initialize` handshake or both are spans under it, and it
 * ends with the era and the revision agreed (`mcp.era`,
 * `mcp.protocol.version`). Nothing when tracing is off.
 */
export const connecting = <A extends { readonly era: string; readonly established: { readonly version: string } }, E, R>(
  transport: ClientTransportShape<any>,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    if (!McpSpan.enabled(fiber)) return effect
    const endpoint = endpointOf(transport)
    const attributes: Record<string, unknown> = {}
    if (endpoint.transport !== undefined) attributes["network.transport"] = endpoint.transport
    if (endpoint.address !== undefined) attributes["server.address"] = endpoint.address
    if (endpoint.port !== undefined) attributes["server.port"] = endpoint.port
    return Effect.withSpan(
      Effect.tap(effect, (negotiated) =>
        Effect.annotateCurrentSpan({ "mcp.era": negotiated.era, "mcp.protocol.version": negotiated.established.version })),
      "connect",
      { kind: "internal", attributes }
    )
  })
