/**
 * Exporting what the servers and clients record: their spans (named and
 * attributed by OpenTelemetry's semantic conventions for MCP, see
 * docs/observability.md), and whatever else the program's Effect records
 * (logs, metrics), to an OpenTelemetry collector over OTLP/HTTP, with the
 * exporters Effect ships (`effect/observability/Otlp`). No extra dependency,
 * and nothing is loaded until a layer here is built with export on.
 *
 * Tracing is off until a tracer is installed: without one, servers and
 * clients make no span and add nothing to the requests they send.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as McpSpan from "./internal/McpSpan.ts"
import * as Metrics from "./observability/Metrics.ts"

/**
 * The wire format of OTLP/HTTP: `"http/json"` or `"http/protobuf"`.
 *
 * @since 0.1.0
 * @category models
 */
export type Protocol = "http/json" | "http/protobuf"

/**
 * Where and how to export.
 *
 * @since 0.1.0
 * @category models
 */
export interface OtlpOptions {
  /** The collector's base URL, e.g. `http://127.0.0.1:4318`; `/v1/traces`, `/v1/metrics` and `/v1/logs` are appended. */
  readonly endpoint: string
  /** Default `"http/protobuf"` (the OpenTelemetry default). */
  readonly protocol?: Protocol | undefined
  /** Headers sent with every export (an API key…). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** `service.name` of the resource. Default `"effect-mcp-transport"`. */
  readonly serviceName?: string | undefined
  readonly serviceVersion?: string | undefined
  /** More resource attributes. */
  readonly resourceAttributes?: Readonly<Record<string, unknown>> | undefined
  /** How often finished spans are sent. Default 5 seconds; whatever is left is sent when the layer closes. */
  readonly exportInterval?: Duration.Input | undefined
}

/**
 * Export over OTLP/HTTP for as long as the layer lives: installs Effect's
 * OTLP tracer (so servers and clients make their spans), logger and
 * metrics exporter, sending with `fetch`, and turns the runtime's metrics
 * on (`Metrics.layerEnabled`) so that there are metrics to export. Closing the layer sends what is
 * left. The exporter modules are loaded when the layer is built.
 *
 * @example
 * ```ts
 * import * as Telemetry from "effect-mcp-transport/Telemetry"
 *
 * const TelemetryLive = Telemetry.layerOtlp({ endpoint: "http://127.0.0.1:4318", protocol: "http/json", serviceName: "weather" })
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerOtlp = (options: OtlpOptions): Layer.Layer<never> =>
  Layer.unwrap(Effect.promise(async () => {
    const [Otlp, OtlpSerialization, FetchHttpClient] = await Promise.all([
      import("effect/observability/Otlp"),
      import("effect/observability/OtlpSerialization"),
      import("effect/http/FetchHttpClient")
    ])
    const exporters = Otlp.layer({
      baseUrl: options.endpoint,
      resource: {
        serviceName: options.serviceName ?? "effect-mcp-transport",
        serviceVersion: options.serviceVersion,
        ...(options.resourceAttributes === undefined ? {} : { attributes: { ...options.resourceAttributes } })
      },
      headers: options.headers,
      tracerExportInterval: options.exportInterval,
      metricsExportInterval: options.exportInterval,
      loggerExportInterval: options.exportInterval
    }).pipe(
      Layer.provide(options.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
      Layer.provide(FetchHttpClient.layer)
    ) as Layer.Layer<never>
    return Layer.merge(exporters, Metrics.layerEnabled)
  }))

/**
 * The standard environment variables, read through Effect's `Config`
 * (`ConfigProvider`): `OTEL_EXPORTER_OTLP_ENDPOINT` (export is off when it
 * is unset or empty), `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/json` or
 * `http/protobuf`, the default), `OTEL_EXPORTER_OTLP_HEADERS`
 * (`key=value,…`, values URL-encoded), `OTEL_SERVICE_NAME`,
 * `OTEL_BSP_SCHEDULE_DELAY` (milliseconds between exports) and
 * `OTEL_SDK_DISABLED=true`. `OTEL_RESOURCE_ATTRIBUTES` is read by Effect's
 * exporter itself.
 *
 * @since 0.1.0
 * @category models
 */
export interface EnvSettings {
  readonly options: OtlpOptions | undefined
  /** Why export stays off although an endpoint is set (an unsupported protocol such as `grpc`). */
  readonly refused?: string | undefined
}

const optionalString = (name: string) => Config.option(Config.String(name))

/**
 * Reads the settings from the environment (`EnvSettings`).
 *
 * @since 0.1.0
 * @category utils
 */
export const readEnv = (defaults: { readonly serviceName?: string | undefined } = {}): Effect.Effect<EnvSettings> =>
  Effect.gen(function*(): Effect.fn.Return<EnvSettings, Config.ConfigError> {
    const env = yield* Config.all({
      endpoint: optionalString("OTEL_EXPORTER_OTLP_ENDPOINT"),
      protocol: optionalString("OTEL_EXPORTER_OTLP_PROTOCOL"),
      headers: optionalString("OTEL_EXPORTER_OTLP_HEADERS"),
      serviceName: optionalString("OTEL_SERVICE_NAME"),
      delay: optionalString("OTEL_BSP_SCHEDULE_DELAY"),
      disabled: optionalString("OTEL_SDK_DISABLED")
    })
    const endpoint = Option.getOrUndefined(env.endpoint)?.trim()
    if (endpoint === undefined || endpoint === "") return { options: undefined }
    if (Option.getOrUndefined(env.disabled)?.trim().toLowerCase() === "true") return { options: undefined }
    const protocol = Option.getOrElse(env.protocol, () => "http/protobuf").trim() as Protocol
    if (protocol !== "http/json" && protocol !== "http/protobuf") {
      return { options: undefined, refused: `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported (http/json or http/protobuf)` }
    }
    const delay = Number(Option.getOrUndefined(env.delay))
    return {
      options: {
        endpoint,
        protocol,
        headers: parseHeaders(Option.getOrUndefined(env.headers)),
        serviceName: Option.getOrUndefined(env.serviceName)?.trim() || defaults.serviceName,
        exportInterval: Number.isFinite(delay) && delay > 0 ? delay : undefined
      }
    }
  }).pipe(
    // A malformed variable is reported by the caller as "export off", never as a crash of the program it observes.
    Effect.orElseSucceed((): EnvSettings => ({ options: undefined, refused: "the OTEL_* environment could not be read" }))
  )

/**
 * `OTEL_EXPORTER_OTLP_HEADERS`: `key=value` pairs separated by commas, values URL-encoded.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseHeaders = (text: string | undefined): Record<string, string> | undefined => {
  if (text === undefined || text.trim() === "") return undefined
  const headers: Record<string, string> = {}
  for (const pair of text.split(",")) {
    const at = pair.indexOf("=")
    if (at <= 0) continue
    const key = pair.slice(0, at).trim()
    let value = pair.slice(at + 1).trim()
    try {
      value = decodeURIComponent(value)
    } catch {
      // Kept as written.
    }
    if (key !== "") headers[key] = value
  }
  return headers
}

/**
 * `layerOtlp` configured by the standard environment variables (see
 * `EnvSettings`); when `OTEL_EXPORTER_OTLP_ENDPOINT` is unset it does
 * nothing and loads nothing. An endpoint with an unsupported protocol
 * leaves export off with a warning.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as Telemetry from "effect-mcp-transport/Telemetry"
 *
 * // OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 OTEL_SERVICE_NAME=weather node server.js
 * const program = Effect.log("serving").pipe(Effect.provide(Telemetry.layerFromEnv()))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromEnv = (defaults: { readonly serviceName?: string | undefined } = {}): Layer.Layer<never> =>
  Layer.unwrap(Effect.map(readEnv(defaults), (settings) => {
    if (settings.options !== undefined) return layerOtlp(settings.options)
    return settings.refused === undefined
      ? Layer.empty
      : Layer.effectDiscard(Effect.logWarning(`telemetry: export off: ${settings.refused}`))
  }))

/**
 * Whether tool arguments and results are recorded on the `tools/call` spans
 * (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`, as JSON). Off
 * by default: they may hold sensitive data.
 *
 * @since 0.1.0
 * @category references
 */
export const RecordToolContent = McpSpan.RecordToolContent

/**
 * Records tool arguments and results on spans (see `RecordToolContent`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerRecordToolContent: Layer.Layer<never> = Layer.succeed(McpSpan.RecordToolContent, true)
