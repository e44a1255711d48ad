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
 * Where the parts are: the metrics themselves in `MetricDefinitions`; the
 * switch and the `network.transport` attribute in `internal/MetricsContext`;
 * series per attribute combination, shaped once for both sides, in
 * `internal/Series`; the conventions' operations and sessions in
 * `internal/Operations`; the runtime's own gauges and counters in
 * `internal/RuntimeGauges`.
 *
 * @since 0.1.0
 */
export * from "./MetricDefinitions.ts"
export {
  Enabled,
  enabled,
  layerEnabled,
  type NetworkTransport,
  networkTransportOf,
  servicesOf,
  withNetworkTransport
} from "./internal/MetricsContext.ts"
export { type Failure, type OperationAttributes } from "./internal/Series.ts"
export {
  clientFailure,
  clientOperation,
  clientSession,
  recordedSend,
  serverFailure,
  serverOperation,
  serverSession
} from "./internal/Operations.ts"
export {
  admissionRefused,
  bridgeAdmission,
  circuitState,
  circuitValue,
  connectAttempt,
  eventsReplayed,
  observeStreams,
  storeRoundTrip,
  type StreamLoad
} from "./internal/RuntimeGauges.ts"
