/**
 * `Telemetry.layerOtlp` / `layerFromEnv` export the runtime's metrics, not
 * only its spans: a client (built with `layerOtlp`) and a stdio server (a
 * child process with `layerFromEnv`) both send their operation durations
 * to the receiver.
 */
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as Telemetry from "../../src/Telemetry.ts"
import { NODE } from "../cli/runCli.ts"
import { receiver } from "../fixtures/otlp-receiver.ts"

const tracedServer = fileURLToPath(new URL("../fixtures/traced-stdio-server.ts", import.meta.url))

describe("Telemetry's metrics", { timeout: 90_000 }, () => {
  it.live("layerOtlp (client) and layerFromEnv (server) export mcp.*.operation.duration", () =>
    Effect.gen(function*() {
      const otlp = yield* receiver
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        Telemetry.layerOtlp({ endpoint: otlp.endpoint, protocol: "http/json", serviceName: "agent", exportInterval: "50 millis" }),
        scope
      )
      yield* Effect.gen(function*() {
        const client = yield* McpClient.connect(
          StdioClientTransport.make({
            command: NODE,
            args: [tracedServer],
            env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_BSP_SCHEDULE_DELAY: "50" },
            stderr: { log: false }
          })
        )
        for (const location of ["Lisbon", "Porto", "Faro"]) {
          yield* client.callTool({ name: "get-weather", arguments: { location } })
        }
      }).pipe(Effect.scoped, Effect.provide(context))
      yield* Scope.close(scope, Exit.void)

      const has = (service: string, name: string) => otlp.metrics.some((m) => m.service === service && m.name === name)
      yield* otlp.waitForMetrics(() =>
        has("agent", "mcp.client.operation.duration") && has("weather", "mcp.server.operation.duration") ? true : undefined
      )
      expect(has("agent", "mcp.client.operation.duration")).toBe(true)
      expect(has("weather", "mcp.server.operation.duration")).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})
