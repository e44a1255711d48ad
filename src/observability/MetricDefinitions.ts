/**
 * The metrics this runtime records, defined: the four histograms of
 * OpenTelemetry's MCP conventions and the runtime's own gauges, counters and
 * histograms, with their bucket boundaries. `Metrics` records them and
 * re-exports everything here.
 *
 * @since 0.1.0
 */
import * as Metric from "effect/Metric"

/**
 * The bucket boundaries (seconds) the MCP conventions recommend for their
 * four duration histograms.
 *
 * @since 0.1.0
 * @category constants
 */
export const DURATION_BOUNDARIES: ReadonlyArray<number> = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]

/**
 * Bucket boundaries (seconds) for session store round trips: a store on the
 * same network answers in well under a millisecond to tens of milliseconds.
 *
 * @since 0.1.0
 * @category constants
 */
export const STORE_BOUNDARIES: ReadonlyArray<number> = [
  0.0005,
  0.001,
  0.002,
  0.005,
  0.01,
  0.02,
  0.05,
  0.1,
  0.2,
  0.5,
  1,
  5
]

// `unit` is how Effect's exporters learn a metric's unit (OTLP maps it to UCUM; Prometheus leaves it out of the labels).
const BYTES = { unit: "bytes" }

/** A histogram of durations in seconds. */
const seconds = (name: string, description: string, boundaries: ReadonlyArray<number> = DURATION_BOUNDARIES) =>
  Metric.histogram(name, { description, boundaries, attributes: { unit: "seconds" } })

/** A counter that only goes up. */
const tally = (name: string, description: string) => Metric.counter(name, { description, incremental: true })

/**
 * Histogram (s): a request or notification the client sent, from sending it
 * until its answer. Attributes: `mcp.method.name`, `gen_ai.tool.name` /
 * `gen_ai.prompt.name`, `gen_ai.operation.name` (`execute_tool`),
 * `mcp.protocol.version`, `network.transport`, `network.protocol.name`,
 * `error.type`, `rpc.response.status_code`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const clientOperationDuration = seconds(
  "mcp.client.operation.duration",
  "Duration of an MCP request as observed by the client, from sending it until its answer"
)

/**
 * Histogram (s): a request the server served, from receiving it until its
 * answer. Attributes as `clientOperationDuration`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const serverOperationDuration = seconds(
  "mcp.server.operation.duration",
  "Duration of an MCP request as observed by the server, from receiving it until its answer"
)

/**
 * Histogram (s): a client's session, from its handshake (or discovery) until
 * the client closes. Attributes: `mcp.protocol.version`, `network.transport`,
 * `network.protocol.name`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const clientSessionDuration = seconds(
  "mcp.client.session.duration",
  "Duration of an MCP session as observed by the client"
)

/**
 * Histogram (s): a server's session (a stdio or in-memory connection, an
 * HTTP session), from its start until it ends. Attributes: `network.transport`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const serverSessionDuration = seconds(
  "mcp.server.session.duration",
  "Duration of an MCP session as observed by the server"
)

/**
 * Gauge: requests the server is serving now. Attributes: `mcp.method.name`, `network.transport`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const serverActiveRequests = Metric.gauge("mcp.server.active_requests", {
  description: "MCP requests the server is serving now"
})

/**
 * Gauge: requests the client has sent and waits for now. Attributes:
 * `mcp.method.name`, `network.transport`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const clientActiveRequests = Metric.gauge("mcp.client.active_requests", {
  description: "MCP requests the client waits for now"
})

/**
 * Gauge: server sessions open now (stdio and in-memory connections, HTTP
 * sessions of both eras' transports). Attributes: `network.transport`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const serverActiveSessions = Metric.gauge("mcp.server.active_sessions", {
  description: "MCP sessions open on the server now"
})

/**
 * Gauge: client sessions open now. Attributes: `network.transport`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const clientActiveSessions = Metric.gauge("mcp.client.active_sessions", {
  description: "MCP sessions open on the client now"
})

/**
 * Gauge, read when exported: SSE streams of the HTTP server's sessions that
 * have a connection attached now (request streams, standalone `GET` streams).
 *
 * @since 0.1.0
 * @category metrics
 */
export const sseActiveStreams = Metric.gauge("mcp.server.sse.active_streams", {
  description: "SSE streams of the HTTP server's sessions with a connection attached now"
})

/**
 * Gauge (bytes), read when exported: what the HTTP server's session streams
 * hold for their clients now (queued for a connection, or waiting for one to
 * resume).
 *
 * @since 0.1.0
 * @category metrics
 */
export const sseBufferedBytes = Metric.gauge("mcp.server.sse.buffered_bytes", {
  description: "Bytes the HTTP server's SSE streams hold for their clients now",
  attributes: BYTES
})

/**
 * Counter: SSE events sent again to a client resuming with `Last-Event-ID`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const sseReplayedEvents = tally(
  "mcp.server.sse.replayed_events",
  "SSE events replayed to clients resuming a stream"
)

/**
 * Counter: sessions and streams the HTTP server turned away. Attributes:
 * `mcp.admission.kind` (`session`, `stream`), `mcp.admission.reason`
 * (`server-full`, `principal-full`, `session-full`, `declined`).
 *
 * @since 0.1.0
 * @category metrics
 */
export const serverAdmissionRefused = tally(
  "mcp.server.admission.refused",
  "Sessions and streams the HTTP server refused at its caps"
)

/**
 * Counter: client sessions the bridge refused because every upstream slot was taken.
 *
 * @since 0.1.0
 * @category metrics
 */
export const bridgeAdmissionRefused = tally(
  "mcp.bridge.admission.refused",
  "Sessions the bridge refused with every upstream slot taken"
)

/**
 * Gauge: the state of the manager's circuit breaker per server: 0 closed,
 * 1 half-open (one trial let through), 2 open. Attributes: `mcp.manager.server`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const managerCircuitState = Metric.gauge("mcp.manager.circuit.state", {
  description: "McpManager circuit breaker per server: 0 closed, 1 half-open, 2 open"
})

/**
 * Counter: connection attempts the manager made after a server's first
 * (after a failure, a lost connection, an expired session or a reconnect
 * request). Attributes: `mcp.manager.server`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const managerReconnects = tally(
  "mcp.manager.reconnects",
  "Connection attempts McpManager made after a server's first"
)

/**
 * Histogram (s): one round trip to a shared session store (Redis).
 * Attributes: `mcp.store.operation` (what was asked, e.g. `append`,
 * `replay`), `mcp.store.backend`, `error.type`. Recorded with `storeRoundTrip`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const storeOperationDuration = seconds(
  "mcp.store.operation.duration",
  "Duration of one round trip to the shared session store",
  STORE_BOUNDARIES
)
