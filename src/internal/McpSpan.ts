/**
 * What the client and server spans share (OpenTelemetry's semantic
 * conventions for MCP): whether tracing is on at all, the span name and the
 * attributes read off a request, the W3C trace context carried in
 * `params._meta`, and ending a span with the status the conventions ask for
 * (ERROR with the JSON-RPC message when `error.type` is set), which is not
 * always the exit of the effect it wraps (an error reply is a success to the
 * transport).
 *
 * Nothing here runs unless a tracer is installed: with Effect's default
 * tracer (which exports nothing) the call sites skip spans entirely.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as References from "effect/References"
import * as Tracer from "effect/Tracer"
import * as RequestMeta from "../RequestMeta.ts"
import { isRecord } from "./Records.ts"

/** Whether spans made here would go anywhere: tracing on, and a tracer other than Effect's in-memory default. */
export const enabled = (fiber: Fiber.Fiber<unknown, unknown>): boolean =>
  fiber.getRef(References.TracerEnabled) && fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer

/** `enabled` for an effect that runs with `context` alone. */
export const enabledIn = (context: Context.Context<never>): boolean =>
  Context.get(context, References.TracerEnabled) && Context.get(context, Tracer.Tracer) !== Tracer.nativeTracer

/**
 * Whether tool arguments and results are recorded on spans
 * (`gen_ai.tool.call.arguments` / `gen_ai.tool.call.result`, opt-in: they may
 * hold sensitive data). Set through `Telemetry.layerRecordToolContent`.
 */
export const RecordToolContent = Context.Reference<boolean>("effect-mcp-transport/Telemetry/RecordToolContent", {
  defaultValue: () => false
})

/** The tool or prompt a request names (a low-cardinality span name target), or undefined. */
export const targetOf = (method: string, params: unknown): string | undefined => {
  if (method !== "tools/call" && method !== "prompts/get") return undefined
  const name = isRecord(params) ? params.name : undefined
  return typeof name === "string" ? name : undefined
}

/** `{mcp.method.name} {target}`, or the method alone. */
export const spanName = (method: string, params: unknown): string => {
  const target = targetOf(method, params)
  return target === undefined ? method : `${method} ${target}`
}

const RESOURCE_METHODS = new Set(["resources/read", "resources/subscribe", "resources/unsubscribe", "notifications/resources/updated"])

/** The attributes every MCP span has, read off the method and params. */
export const requestAttributes = (
  method: string,
  params: unknown,
  recordContent: boolean
): Record<string, unknown> => {
  const attributes: Record<string, unknown> = { "mcp.method.name": method }
  const p = isRecord(params) ? params : undefined
  if (p !== undefined) {
    if (method === "tools/call" && typeof p.name === "string") {
      attributes["gen_ai.tool.name"] = p.name
      attributes["gen_ai.operation.name"] = "execute_tool"
      if (recordContent && p.arguments !== undefined) attributes["gen_ai.tool.call.arguments"] = json(p.arguments)
    } else if (method === "prompts/get" && typeof p.name === "string") {
      attributes["gen_ai.prompt.name"] = p.name
    } else if (RESOURCE_METHODS.has(method) && typeof p.uri === "string") {
      attributes["mcp.resource.uri"] = p.uri
    }
    const meta = p._meta
    if (isRecord(meta) && typeof meta[RequestMeta.MetaKey.protocolVersion] === "string") {
      attributes["mcp.protocol.version"] = meta[RequestMeta.MetaKey.protocolVersion]
    }
  }
  return attributes
}

/** A value as a JSON string (OTLP attributes take scalars and arrays; the conventions allow a JSON string). */
export const json = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

// ---------------------------------------------------------------------------
// W3C trace context in `params._meta` (unprefixed keys, as SEP-414 reserves them)

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The remote parent a request's `_meta.traceparent` names, if it holds a valid one. */
export const remoteParent = (params: unknown): Tracer.ExternalSpan | undefined => {
  const meta = isRecord(params) ? params._meta : undefined
  const value = isRecord(meta) ? meta.traceparent : undefined
  if (typeof value !== "string") return undefined
  const match = TRACEPARENT.exec(value)
  if (match === null) return undefined
  const [, traceId, spanId, flags] = match
  if (/^0+$/.test(traceId!) || /^0+$/.test(spanId!)) return undefined
  return Tracer.externalSpan({ traceId: traceId!, spanId: spanId!, sampled: (parseInt(flags!, 16) & 1) === 1 })
}

/**
 * The `tracestate` and `baggage` a request came with: a server that calls on
 * (the bridge) passes them along with its own `traceparent`.
 */
export interface Propagated {
  readonly tracestate?: string | undefined
  readonly baggage?: string | undefined
}

/** What the request being served carried besides `traceparent`. */
export const IncomingPropagation = Context.Reference<Propagated | undefined>(
  "effect-mcp-transport/McpSpan/IncomingPropagation",
  { defaultValue: () => undefined }
)

export const propagatedOf = (params: unknown): Propagated | undefined => {
  const meta = isRecord(params) ? params._meta : undefined
  if (!isRecord(meta)) return undefined
  const tracestate = typeof meta.tracestate === "string" ? meta.tracestate : undefined
  const baggage = typeof meta.baggage === "string" ? meta.baggage : undefined
  return tracestate === undefined && baggage === undefined ? undefined : { tracestate, baggage }
}

/** `params` with `_meta.traceparent` naming `span` (and the propagated `tracestate`/`baggage`); other keys kept. */
export const injectInto = (params: unknown, span: Tracer.Span, propagated: Propagated | undefined): Record<string, unknown> => {
  const p = isRecord(params) ? params : {}
  const meta = isRecord(p._meta) ? { ...p._meta } : {}
  meta.traceparent = `00-${span.traceId.padStart(32, "0")}-${span.spanId}-${span.sampled ? "01" : "00"}`
  if (propagated?.tracestate !== undefined && meta.tracestate === undefined) meta.tracestate = propagated.tracestate
  if (propagated?.baggage !== undefined && meta.baggage === undefined) meta.baggage = propagated.baggage
  return { ...p, _meta: meta }
}

// ---------------------------------------------------------------------------
// Ending

/**
 * What a span's status says when the operation failed without the effect
 * failing (a JSON-RPC error reply, a tool result with `isError`): the
 * exporters take the status description from the failure's message.
 */
export class ErrorStatus extends Error {
  constructor(message: string, type: string) {
    super(message)
    this.name = `mcp.${type}`
  }
}

/**
 * The error attributes of a JSON-RPC error reply (`error.type` and
 * `rpc.response.status_code`: the code as a string), and the exit that
 * gives its span the ERROR status with the reply's message.
 */
export const rpcFailure = (span: Tracer.Span, code: number, message: string): Exit.Exit<never, ErrorStatus> => {
  const type = String(code)
  span.attribute("error.type", type)
  span.attribute("rpc.response.status_code", type)
  return Exit.fail(new ErrorStatus(message, type))
}

/** A `tools/call` result with `isError: true`: `error.type = tool_error`. */
export const toolFailure = (span: Tracer.Span): Exit.Exit<never, ErrorStatus> => {
  span.attribute("error.type", "tool_error")
  return Exit.fail(new ErrorStatus("the tool reported an error (isError)", "tool_error"))
}

export const isToolError = (method: string, result: unknown): boolean =>
  method === "tools/call" && isRecord(result) && result.isError === true

/**
 * Runs `effect` under `span` (its child spans are the span's children) and
 * ends the span with the exit `exitOf` derives from the effect's.
 */
export const within = <A, E, R>(
  span: Tracer.Span,
  effect: Effect.Effect<A, E, R>,
  exitOf: (exit: Exit.Exit<A, E>) => Exit.Exit<unknown, unknown>
): Effect.Effect<A, E, R> =>
  Effect.withParentSpan(effect, span, { captureStackTrace: false }).pipe(
    Effect.onExit((exit) =>
      Effect.flatMap(Clock.currentTimeNanos, (now) =>
        Effect.sync(() => {
          if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) span.attribute("mcp.outcome", "interrupted")
          span.end(now, exitOf(exit))
        }))
    )
  )

/** The span the fiber runs under, if any (an HTTP server span, the caller's own span…). */
export const ambientSpan = (fiber: Fiber.Fiber<unknown, unknown>): Tracer.AnySpan | undefined =>
  Option.getOrUndefined(Context.getOption(fiber.context, Tracer.ParentSpan))
