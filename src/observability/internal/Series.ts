/**
 * One metric value per attribute combination, made once and kept, and the
 * attributes each kind of series carries. Both sides record the same
 * shapes (an operation, the requests active, a session), so the shapes are
 * made once here and instantiated per side (`sideOf`).
 */
import type * as Clock from "effect/Clock"
import * as Metric from "effect/Metric"
import type { NetworkTransport } from "./MetricsContext.ts"

/** Past this many combinations a metric's series are made per update instead of kept (a bound on memory, not on correctness). */
const MAX_KEPT_SERIES = 2_000

/** The series of `base` under a key, made with `attributes()` the first time the key is seen. */
export const seriesOf = <I, S>(base: Metric.Metric<I, S>) => {
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

/** Sets an attribute that has a value; an undefined one is left out. */
export const put = (attributes: Record<string, string>, key: string, value: string | undefined) => {
  if (value !== undefined) attributes[key] = value
}

/** Seconds since `startMillis`: milliseconds are precise enough for buckets that start at 10 ms, and read far cheaper than nanoseconds. */
export const seconds = (clock: Clock.Clock, startMillis: number): number => (clock.currentTimeMillisUnsafe() - startMillis) / 1000

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

/** The attribute naming what a method acts on: the tool of `tools/call`, the prompt of `prompts/get`. */
export const targetKey = (method: string): string | undefined =>
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

/** The four instruments of the MCP conventions each side records. */
export interface SideInstruments {
  readonly operationDuration: Metric.Metric<number, Metric.HistogramState>
  readonly activeRequests: Metric.Metric<number, Metric.GaugeState<number>>
  readonly sessionDuration: Metric.Metric<number, any>
  readonly activeSessions: Metric.Metric<number, any>
}

/** One side's instruments as series: each attribute combination made once. */
export const sideOf = (instruments: SideInstruments) => ({
  operation: operationSeries(instruments.operationDuration),
  active: activeSeries(instruments.activeRequests),
  session: sessionSeries(instruments.sessionDuration),
  sessions: sessionSeries(instruments.activeSessions)
})

/** One side's series (`sideOf`). */
export type Side = ReturnType<typeof sideOf>
