/**
 * Telemetry on, with nowhere to send it: a tracer whose spans are made,
 * attributed and ended but never exported (what an exporter's batch queue
 * costs is not ours), and the runtime's metrics recorded. Provided to the
 * `*-telemetry` benchmark peers, so that the cost of telemetry is the
 * difference to their plain twins.
 */
import * as Layer from "effect/Layer"
import * as Tracer from "effect/Tracer"
import { loadMetrics } from "./our-modules.ts"

const Metrics = await loadMetrics()

const discardingTracer = Tracer.make({ span: (options) => new Tracer.NativeSpan(options) })

export const telemetryOn: Layer.Layer<never> = Layer.mergeAll(
  Layer.succeed(Tracer.Tracer, discardingTracer),
  Metrics.layerEnabled
)
