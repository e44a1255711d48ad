/**
 * Recording the MCP conventions' instruments: each operation a server
 * serves or a client sends (its duration, and the requests active while it
 * runs), how it ended (`error.type`, `rpc.response.status_code`), and each
 * session from its start until its scope closes. Both sides record the same
 * shapes; what differs is the side's instruments, where the transport
 * comes from, and how a failure is told. Re-exported by `Metrics`.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import type * as Metric from "effect/Metric"
import type * as Scope from "effect/Scope"
import {
  clientActiveRequests,
  clientActiveSessions,
  clientOperationDuration,
  clientSessionDuration,
  serverActiveRequests,
  serverActiveSessions,
  serverOperationDuration,
  serverSessionDuration
} from "../MetricDefinitions.ts"
import { currentTransport, Enabled, networkTransportOf } from "./MetricsContext.ts"
import { type Failure, type OperationAttributes, seconds, sideOf, targetKey } from "./Series.ts"

const server = sideOf({
  operationDuration: serverOperationDuration,
  activeRequests: serverActiveRequests,
  sessionDuration: serverSessionDuration,
  activeSessions: serverActiveSessions
})

const client = sideOf({
  operationDuration: clientOperationDuration,
  activeRequests: clientActiveRequests,
  sessionDuration: clientSessionDuration,
  activeSessions: clientActiveSessions
})

const TOOL_ERROR: Failure = { errorType: "tool_error" }
const CANCELLED: Failure = { errorType: "cancelled" }

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/** A `CallToolResult` saying `isError: true`: the call worked, the tool did not. */
const toolFailed = (method: string, result: unknown): boolean =>
  method === "tools/call" && isRecord(result) && result.isError === true

/**
 * How a server's JSON-RPC reply ended: its error code, `tool_error` for a
 * tool result with `isError`, `cancelled` when the client cancelled it (no
 * reply), and -32603 for a failure (what the transport answers).
 *
 * @since 0.1.0
 * @category utils
 */
export const serverFailure = (method: string, exit: Exit.Exit<unknown, unknown>): Failure | undefined => {
  if (exit._tag === "Failure") {
    return Cause.hasInterruptsOnly(exit.cause) ? CANCELLED : { errorType: "-32603", statusCode: "-32603" }
  }
  const reply = exit.value
  if (!isRecord(reply)) return undefined
  if (isRecord(reply.error)) {
    const code = String(reply.error.code)
    return { errorType: code, statusCode: code }
  }
  return toolFailed(method, reply.result) ? TOOL_ERROR : undefined
}

/**
 * How a client's call ended: the JSON-RPC code of an `RpcError`, `timeout`
 * for a `RequestTimeout`, the error's tag for any other typed error,
 * `tool_error` for a tool result with `isError`, `cancelled` when the caller
 * interrupted it, `_OTHER` for a defect.
 *
 * @since 0.1.0
 * @category utils
 */
export const clientFailure = (method: string, exit: Exit.Exit<unknown, unknown>): Failure | undefined => {
  if (exit._tag === "Success") return toolFailed(method, exit.value) ? TOOL_ERROR : undefined
  if (Cause.hasInterruptsOnly(exit.cause)) return CANCELLED
  const failure = exit.cause.reasons.find((r) => r._tag === "Fail")
  if (failure === undefined || failure._tag !== "Fail") return { errorType: "_OTHER" }
  const error = failure.error
  if (!isRecord(error)) return { errorType: "_OTHER" }
  if (error._tag === "RpcError" && typeof error.code === "number") {
    const code = String(error.code)
    return { errorType: code, statusCode: code }
  }
  if (error._tag === "RequestTimeout") return { errorType: "timeout" }
  return { errorType: typeof error._tag === "string" ? error._tag : "_OTHER" }
}

/**
 * Runs `effect` counted in `active` while it runs, then records its
 * duration in the series `duration` picks from how it ended.
 */
const timed = <A, E, R>(
  fiber: Fiber.Fiber<unknown, unknown>,
  active: Metric.Metric<number, Metric.GaugeState<number>>,
  effect: Effect.Effect<A, E, R>,
  duration: (exit: Exit.Exit<A, E>) => Metric.Metric<number, Metric.HistogramState>
): Effect.Effect<A, E, R> => {
  const context = fiber.context
  const clock = fiber.getRef(Clock.Clock)
  const start = clock.currentTimeMillisUnsafe()
  active.modifyUnsafe(1, context)
  return Effect.onExit(effect, (exit) => {
    active.modifyUnsafe(-1, context)
    duration(exit).updateUnsafe(seconds(clock, start), context)
    return Effect.void
  })
}

/**
 * Records `effect` as one server operation: `mcp.server.operation.duration`
 * and `mcp.server.active_requests`, with the transport from
 * the server transport's peer. `protocolVersion` is read once the reply is
 * known (an `initialize` knows its version only then).
 *
 * @since 0.1.0
 * @category recording
 */
export const serverOperation = <A, E, R>(
  method: string,
  name: string | undefined,
  protocolVersion: (reply: Exit.Exit<A, unknown>) => string | undefined,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    if (!fiber.getRef(Enabled)) return effect
    const transport = currentTransport(fiber)
    return timed(fiber, server.active(method, transport), effect, (exit) =>
      server.operation({ method, name, protocolVersion: protocolVersion(exit), transport }, serverFailure(method, exit)))
  })

/**
 * Records `effect` as one client operation: `mcp.client.operation.duration`
 * and `mcp.client.active_requests`.
 *
 * @since 0.1.0
 * @category recording
 */
export const clientOperation = <A, E, R>(
  attributes: OperationAttributes,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    if (!fiber.getRef(Enabled)) return effect
    return timed(fiber, client.active(attributes.method, attributes.transport), effect, (exit) =>
      client.operation(attributes, clientFailure(attributes.method, exit)))
  })

/**
 * A client's `send` (method, params, then anything) whose every call is
 * recorded with `clientOperation`, the tool or prompt name read from
 * `params.name`; `send` itself where metrics are off when the client is built.
 *
 * @since 0.1.0
 * @category recording
 */
export const recordedSend = <
  S extends (method: string, params: Readonly<Record<string, unknown>> | undefined, ...rest: Array<any>) => Effect.Effect<any, any>
>(
  send: S,
  session: { readonly protocolVersion: string; readonly transportKind: string }
): Effect.Effect<S> => Effect.withFiber((fiber) => Effect.succeed(fiber.getRef(Enabled) ? recording(send, session) : send))

const recording = <
  S extends (method: string, params: Readonly<Record<string, unknown>> | undefined, ...rest: Array<any>) => Effect.Effect<any, any>
>(
  send: S,
  session: { readonly protocolVersion: string; readonly transportKind: string }
): S => {
  const transport = networkTransportOf(session.transportKind)
  const protocolVersion = session.protocolVersion
  return ((method: string, params: Readonly<Record<string, unknown>> | undefined, ...rest: Array<any>) => {
    const name = targetKey(method) === undefined || typeof params?.name !== "string" ? undefined : params.name
    return clientOperation({ method, name, protocolVersion, transport }, send(method, params, ...rest))
  }) as S
}

// ---------------------------------------------------------------------------
// Sessions

const session = (
  duration: Metric.Metric<number, any>,
  active: Metric.Metric<number, any>
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.withFiber((fiber) => {
    if (!fiber.getRef(Enabled)) return Effect.void
    const context = fiber.context
    const clock = fiber.getRef(Clock.Clock)
    const start = clock.currentTimeMillisUnsafe()
    active.modifyUnsafe(1, context)
    return Effect.addFinalizer(() =>
      Effect.sync(() => {
        active.modifyUnsafe(-1, context)
        duration.updateUnsafe(seconds(clock, start), context)
      })
    )
  })

/**
 * Records a server session from now until the current scope closes:
 * `mcp.server.session.duration` and `mcp.server.active_sessions`.
 *
 * @since 0.1.0
 * @category recording
 */
export const serverSession: Effect.Effect<void, never, Scope.Scope> = Effect.withFiber((fiber) => {
  const transport = currentTransport(fiber)
  return session(server.session(transport), server.sessions(transport))
})

/**
 * Records a client session from now until the current scope closes:
 * `mcp.client.session.duration` and `mcp.client.active_sessions`.
 *
 * @since 0.1.0
 * @category recording
 */
export const clientSession = (
  protocolVersion: string,
  transportKind: string
): Effect.Effect<void, never, Scope.Scope> => {
  const transport = networkTransportOf(transportKind)
  return session(client.session(transport, protocolVersion), client.sessions(transport))
}
