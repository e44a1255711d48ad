/**
 * Recording the runtime's own gauges and counters, beyond the MCP
 * conventions' instruments: what the HTTP server's SSE streams hold (read
 * from probes when exported), replayed events, refused sessions and
 * streams (HTTP server, bridge), the manager's circuit breakers and
 * reconnects, and round trips to a shared session store. Re-exported by
 * `Metrics`.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type * as Scope from "effect/Scope"
import {
  bridgeAdmissionRefused,
  managerCircuitState,
  managerReconnects,
  serverAdmissionRefused,
  sseActiveStreams,
  sseBufferedBytes,
  sseReplayedEvents,
  storeOperationDuration
} from "../MetricDefinitions.ts"
import { Enabled, whenEnabled } from "./MetricsContext.ts"
import { clientFailure } from "./Operations.ts"
import { put, seconds, seriesOf } from "./Series.ts"

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
