/**
 * The metrics this runtime records, as ordinary Effect metrics: the four
 * histograms of OpenTelemetry's MCP conventions (`mcp.client.operation.duration`,
 * `mcp.server.operation.duration`, `mcp.client.session.duration`,
 * `mcp.server.session.duration`) and the gauges and counters an operator of
 * this runtime needs (requests and sessions active, SSE streams and their
 * buffered bytes, replayed events, refused admissions, the manager's circuit
 * breakers and reconnects, the session store's round trips).
 *
 * They go to the `Metric.MetricRegistry` of the fiber that records them, so
 * every exporter that reads Effect's metrics sees them: `PrometheusMetrics`
 * (the HTTP server transport's `metrics` option), `OtlpMetrics`,
 * `Metric.snapshot`. They are recorded only where `Enabled` is true: an
 * exporter turns them on (the HTTP transport's scrape endpoint does so for
 * its server; with OTLP, provide `layerEnabled`). Off, a request pays one
 * context look-up; on, each attribute combination is resolved to its series
 * once and kept, so an update is a clock read and a few map look-ups.
 *
 * The recording helpers are what the transports call; applications read the
 * metrics through an exporter, or with `Metric.value` on the definitions here.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import type * as Scope from "effect/Scope"
import {
  bridgeAdmissionRefused,
  clientActiveRequests,
  clientActiveSessions,
  clientOperationDuration,
  clientSessionDuration,
  managerCircuitState,
  managerReconnects,
  serverActiveRequests,
  serverActiveSessions,
  serverAdmissionRefused,
  serverOperationDuration,
  serverSessionDuration,
  sseActiveStreams,
  sseBufferedBytes,
  sseReplayedEvents,
  storeOperationDuration
} from "./MetricDefinitions.ts"
import * as NetworkPeer from "../internal/NetworkPeer.ts"

export * from "./MetricDefinitions.ts"

// ---------------------------------------------------------------------------
// The switch

/**
 * Whether the runtime records its metrics in the current fiber. Default
 * false: with no exporter to read them, recording would be work for nothing.
 * The HTTP server transport's `metrics` option turns it on for its server;
 * an application exporting with OTLP (or reading `Metric.snapshot`)
 * provides `layerEnabled` to the transports and clients it builds.
 *
 * @since 0.1.0
 * @category services
 */
export const Enabled = Context.Reference<boolean>("effect-mcp-transport/observability/Metrics/Enabled", {
  defaultValue: () => false
})

/**
 * Turns the runtime's metrics on for everything built with this layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerEnabled: Layer.Layer<never> = Layer.succeed(Enabled, true)

/**
 * Turns the runtime's metrics on for an effect (and the transports, servers
 * and clients it builds).
 *
 * @since 0.1.0
 * @category utils
 */
export const enabled = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, Enabled, true)

/** Runs `record` only where metrics are on. */
const whenEnabled = (record: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.withFiber((fiber) => fiber.getRef(Enabled) ? record : Effect.void)

// ---------------------------------------------------------------------------
// Attributes

/**
 * `network.transport` as the conventions name it: `pipe` for stdio, `tcp`
 * for HTTP. Undefined (not recorded) for the in-memory pair.
 *
 * @since 0.1.0
 * @category models
 */
export type NetworkTransport = NetworkPeer.NetworkTransport

/**
 * Provides the `network.transport` of the server transport serving an
 * effect (a server transport's session, so that its handler's fibers
 * inherit it). The server's spans read the same peer.
 *
 * @since 0.1.0
 * @category utils
 */
export const withNetworkTransport = (transport: NetworkTransport) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, NetworkPeer.CurrentPeer, NetworkPeer.ofTransport(transport))

const currentTransport = (fiber: Fiber.Fiber<unknown, unknown>): NetworkTransport | undefined =>
  fiber.getRef(NetworkPeer.CurrentPeer)?.transport

/**
 * A server transport's services for its handler: its `network.transport`,
 * and metrics turned on when it serves a scrape endpoint (`scraped`).
 *
 * @since 0.1.0
 * @category utils
 */
export const servicesOf = <R>(services: Context.Context<R>, transport: NetworkTransport, scraped: boolean): Context.Context<R> => {
  const withTransport = Context.add(services, NetworkPeer.CurrentPeer, NetworkPeer.ofTransport(transport))
  return scraped ? Context.add(withTransport, Enabled, true) : withTransport
}

/**
 * The `network.transport` of a client transport's `kind`.
 *
 * @since 0.1.0
 * @category utils
 */
export const networkTransportOf = (kind: string): NetworkTransport | undefined =>
  kind === "stdio" ? "pipe" : kind === "streamable-http" || kind === "sse" ? "tcp" : undefined

// ---------------------------------------------------------------------------
// Series: one metric value per attribute combination, made once

/** Past this many combinations a metric's series are made per update instead of kept (a bound on memory, not on correctness). */
const MAX_KEPT_SERIES = 2_000

const seriesOf = <I, S>(base: Metric.Metric<I, S>) => {
  const kept = new Map<string, Metric.Metric<I, S>>()
  return (key: string, attributes: () => Metric.Metric.AttributeSet): Metric.Metric<I, S> => {
    let series = kept.get(key)
    if (series === undefined) {
      series = Metric.withAttributes(base, attributes())
      if (kept.size < MAX_KEPT_SERIES) kept.set(key, series)
    }
    return series
  }
}

const put = (attributes: Record<string, string>, key: string, value: string | undefined) => {
  if (value !== undefined) attributes[key] = value
}

// Milliseconds are precise enough for buckets that start at 10 ms, and read far cheaper than nanoseconds.
const seconds = (clock: Clock.Clock, startMillis: number): number => (clock.currentTimeMillisUnsafe() - startMillis) / 1000

// ---------------------------------------------------------------------------
// Operations

/**
 * What an operation is recorded under.
 *
 * @since 0.1.0
 * @category models
 */
export interface OperationAttributes {
  readonly method: string
  /** The tool (`tools/call`) or prompt (`prompts/get`) name; ignored for other methods. */
  readonly name?: string | undefined
  readonly protocolVersion?: string | undefined
  readonly transport?: NetworkTransport | undefined
}

/**
 * How an operation ended, for `error.type` and `rpc.response.status_code`:
 * `undefined` for success.
 *
 * @since 0.1.0
 * @category models
 */
export interface Failure {
  readonly errorType: string
  readonly statusCode?: string | undefined
}

const TOOL_ERROR: Failure = { errorType: "tool_error" }
const CANCELLED: Failure = { errorType: "cancelled" }

const targetKey = (method: string): string | undefined =>
  method === "tools/call" ? "gen_ai.tool.name" : method === "prompts/get" ? "gen_ai.prompt.name" : undefined

const operationSeries = (base: Metric.Metric<number, Metric.HistogramState>) => {
  const series = seriesOf(base)
  return (o: OperationAttributes, failure: Failure | undefined) => {
    const target = targetKey(o.method)
    const name = target === undefined ? undefined : o.name
    const key = `${o.method}\u0000${name ?? ""}\u0000${o.protocolVersion ?? ""}\u0000${o.transport ?? ""}\u0000${
      failure?.errorType ?? ""
    }\u0000${failure?.statusCode ?? ""}`
    return series(key, () => {
      const attributes: Record<string, string> = { "mcp.method.name": o.method }
      if (target !== undefined) put(attributes, target, name)
      if (o.method === "tools/call") attributes["gen_ai.operation.name"] = "execute_tool"
      put(attributes, "mcp.protocol.version", o.protocolVersion)
      put(attributes, "network.transport", o.transport)
      if (o.transport === "tcp") attributes["network.protocol.name"] = "http"
      put(attributes, "error.type", failure?.errorType)
      put(attributes, "rpc.response.status_code", failure?.statusCode)
      return attributes
    })
  }
}

const activeSeries = (base: Metric.Metric<number, Metric.GaugeState<number>>) => {
  const series = seriesOf(base)
  return (method: string, transport: NetworkTransport | undefined) =>
    series(`${method}\u0000${transport ?? ""}`, () => {
      const attributes: Record<string, string> = { "mcp.method.name": method }
      put(attributes, "network.transport", transport)
      return attributes
    })
}

const serverOperationOf = operationSeries(serverOperationDuration)
const clientOperationOf = operationSeries(clientOperationDuration)
const serverActiveOf = activeSeries(serverActiveRequests)
const clientActiveOf = activeSeries(clientActiveRequests)

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
    const context = fiber.context
    const clock = fiber.getRef(Clock.Clock)
    const transport = currentTransport(fiber)
    const active = serverActiveOf(method, transport)
    const start = clock.currentTimeMillisUnsafe()
    active.modifyUnsafe(1, context)
    return Effect.onExit(effect, (exit) => {
      active.modifyUnsafe(-1, context)
      const attributes = { method, name, protocolVersion: protocolVersion(exit), transport }
      serverOperationOf(attributes, serverFailure(method, exit)).updateUnsafe(seconds(clock, start), context)
      return Effect.void
    })
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
    const context = fiber.context
    const clock = fiber.getRef(Clock.Clock)
    const active = clientActiveOf(attributes.method, attributes.transport)
    const start = clock.currentTimeMillisUnsafe()
    active.modifyUnsafe(1, context)
    return Effect.onExit(effect, (exit) => {
      active.modifyUnsafe(-1, context)
      clientOperationOf(attributes, clientFailure(attributes.method, exit)).updateUnsafe(seconds(clock, start), context)
      return Effect.void
    })
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

const sessionSeries = (base: Metric.Metric<number, any>) => {
  const series = seriesOf(base)
  return (transport: NetworkTransport | undefined, protocolVersion?: string) =>
    series(`${transport ?? ""}\u0000${protocolVersion ?? ""}`, () => {
      const attributes: Record<string, string> = {}
      put(attributes, "mcp.protocol.version", protocolVersion)
      put(attributes, "network.transport", transport)
      if (transport === "tcp") attributes["network.protocol.name"] = "http"
      return attributes
    })
}

const serverSessionOf = sessionSeries(serverSessionDuration)
const serverSessionsOf = sessionSeries(serverActiveSessions)
const clientSessionOf = sessionSeries(clientSessionDuration)
const clientSessionsOf = sessionSeries(clientActiveSessions)

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
  return session(serverSessionOf(transport), serverSessionsOf(transport))
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
  return session(clientSessionOf(transport, protocolVersion), clientSessionsOf(transport))
}

// ---------------------------------------------------------------------------
// HTTP server streams, admission

/**
 * What the HTTP server's session streams hold now.
 *
 * @since 0.1.0
 * @category models
 */
export interface StreamLoad {
  readonly streams: number
  readonly bufferedBytes: number
}

const loadProbes = new WeakMap<Metric.MetricRegistry, Set<() => StreamLoad>>()

const sumLoad = (probes: Set<() => StreamLoad>, field: keyof StreamLoad): number => {
  let total = 0
  for (const probe of probes) total += probe()[field]
  return total
}

/**
 * Reports `probe` in `mcp.server.sse.active_streams` and
 * `mcp.server.sse.buffered_bytes` until the current scope closes. The probe
 * runs only when the metrics are read (an exporter, `Metric.value`); the
 * gauges add up every HTTP server in the registry.
 *
 * @since 0.1.0
 * @category recording
 */
export const observeStreams = (probe: () => StreamLoad): Effect.Effect<void, never, Scope.Scope> =>
  Effect.withFiber((fiber) => {
    if (!fiber.getRef(Enabled)) return Effect.void
    const registry = fiber.getRef(Metric.MetricRegistry)
    let probes = loadProbes.get(registry)
    if (probes === undefined) {
      const all = new Set<() => StreamLoad>()
      probes = all
      loadProbes.set(registry, all)
      const noop = () => {}
      Metric.registerUnsafe(sseActiveStreams, fiber.context, {
        get: () => ({ value: sumLoad(all, "streams") }),
        update: noop,
        modify: noop
      })
      Metric.registerUnsafe(sseBufferedBytes, fiber.context, {
        get: () => ({ value: sumLoad(all, "bufferedBytes") }),
        update: noop,
        modify: noop
      })
    }
    const registered = probes
    registered.add(probe)
    return Effect.addFinalizer(() => Effect.sync(() => registered.delete(probe)))
  })

/**
 * Counts events replayed to a client resuming a stream.
 *
 * @since 0.1.0
 * @category recording
 */
export const eventsReplayed = (count: number): Effect.Effect<void> =>
  count > 0 ? whenEnabled(Metric.update(sseReplayedEvents, count)) : Effect.void

const refusedOf = seriesOf(serverAdmissionRefused)

/**
 * Counts a session or stream the HTTP server refused, and why.
 *
 * @since 0.1.0
 * @category recording
 */
export const admissionRefused = (kind: "session" | "stream", reason: string): Effect.Effect<void> =>
  whenEnabled(Metric.update(
    refusedOf(`${kind}\u0000${reason}`, () => ({ "mcp.admission.kind": kind, "mcp.admission.reason": reason })),
    1
  ))

/**
 * Counts a bridge session refusal (`refusal` defined) and passes nothing on.
 *
 * @since 0.1.0
 * @category recording
 */
export const bridgeAdmission = (refusal: unknown): Effect.Effect<void> =>
  refusal === undefined ? Effect.void : whenEnabled(Metric.update(bridgeAdmissionRefused, 1))

// ---------------------------------------------------------------------------
// The manager

const circuitOf = seriesOf(managerCircuitState)
const reconnectsOf = seriesOf(managerReconnects)
const serverAttribute = (server: string) => () => ({ "mcp.manager.server": server })

/**
 * The gauge value of a circuit breaker state tag.
 *
 * @since 0.1.0
 * @category utils
 */
export const circuitValue = (state: "Closed" | "HalfOpen" | "Open"): number =>
  state === "Closed" ? 0 : state === "HalfOpen" ? 1 : 2

/**
 * Sets a managed server's circuit breaker state.
 *
 * @since 0.1.0
 * @category recording
 */
export const circuitState = (server: string, state: "Closed" | "HalfOpen" | "Open"): Effect.Effect<void> =>
  whenEnabled(Metric.update(circuitOf(server, serverAttribute(server)), circuitValue(state)))

/**
 * Counts a connection attempt of the manager; the first of a server is not a reconnect.
 *
 * @since 0.1.0
 * @category recording
 */
export const connectAttempt = (server: string, first: boolean): Effect.Effect<void> =>
  first ? Effect.void : whenEnabled(Metric.update(reconnectsOf(server, serverAttribute(server)), 1))

// ---------------------------------------------------------------------------
// The session store

const storeOf = seriesOf(storeOperationDuration)

/**
 * Records `effect` as one round trip to a shared session store:
 * `mcp.store.operation.duration` under `operation` (e.g. `append`,
 * `replay`, `lock`) and `backend` (e.g. `redis`), with `error.type` (the
 * error's tag) when it fails.
 *
 * @since 0.1.0
 * @category recording
 */
export const storeRoundTrip = (operation: string, backend: string) => <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    if (!fiber.getRef(Enabled)) return effect
    const context = fiber.context
    const clock = fiber.getRef(Clock.Clock)
    const start = clock.currentTimeMillisUnsafe()
    return Effect.onExit(effect, (exit) => {
      const failure = exit._tag === "Success" ? undefined : clientFailure(operation, exit)?.errorType
      const series = storeOf(`${operation}\u0000${backend}\u0000${failure ?? ""}`, () => {
        const attributes: Record<string, string> = { "mcp.store.operation": operation, "mcp.store.backend": backend }
        put(attributes, "error.type", failure)
        return attributes
      })
      series.updateUnsafe(seconds(clock, start), context)
      return Effect.void
    })
  })
