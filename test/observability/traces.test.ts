/**
 * Traces across processes, exported with Effect's OTLP exporter to a
 * receiver in the test (http/json): one trace from McpClient through the
 * CLI's `bridge --http` (a child process) to a stdio server built with
 * McpServer (its child) and the tool's own span, in both eras; and the
 * examples of OpenTelemetry's MCP conventions (initialize and a tool call,
 * over stdio and Streamable HTTP) with the attributes they show.
 */
import { fileURLToPath } from "node:url"
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import * as Telemetry from "../../src/Telemetry.ts"
import { NODE, startCli } from "../cli/runCli.ts"
import { ancestry, type ReceivedSpan, receiver, SpanKind, StatusCode } from "../fixtures/otlp-receiver.ts"

const tracedServer = fileURLToPath(new URL("../fixtures/traced-stdio-server.ts", import.meta.url))

const otelEnv = (endpoint: string) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  OTEL_BSP_SCHEDULE_DELAY: "50"
})

/** The client side's exporter: closing the scope it is built in sends what is left. */
const clientTelemetry = (endpoint: string) =>
  Telemetry.layerOtlp({ endpoint, protocol: "http/json", serviceName: "agent", exportInterval: "50 millis" })

const one = (spans: ReadonlyArray<ReceivedSpan>, service: string, name: string, kind: number) =>
  spans.find((s) => s.service === service && s.name === name && s.kind === kind)

describe("traces across processes", { timeout: 90_000 }, () => {
  for (const protocol of ["2025-11-25", "2026-07-28"] as const) {
    it.live(`McpClient → bridge --http → stdio McpServer → the tool: one trace, parents intact (${protocol})`, () =>
      Effect.gen(function*() {
        const otlp = yield* receiver
        const cli = startCli(["bridge", "--http", "--port", "0", "--", NODE, tracedServer], { env: otelEnv(otlp.endpoint) })
        yield* Effect.addFinalizer(() => Effect.sync(() => cli.child.kill("SIGKILL")))
        yield* Effect.promise(() => cli.waitFor(/listening (http:\S+)/))
        const url = /listening (http:\S+)/.exec(cli.stderr())![1]!

        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(clientTelemetry(otlp.endpoint), scope)
        const text = yield* Effect.gen(function*() {
          const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol })
          const result = yield* client.callTool({ name: "get-weather", arguments: { location: "Lisbon" } }).pipe(
            Effect.withSpan("plan a trip")
          )
          return (result.content[0] as { text: string }).text
        }).pipe(Effect.scoped, Effect.provide(context))
        expect(text).toBe("sunny in Lisbon")
        yield* Scope.close(scope, Exit.void)

        const lookup = yield* otlp.waitFor((spans) => {
          const found = spans.find((s) => s.name === "weather lookup")
          // Every ancestor up to the test's own span has arrived.
          return found !== undefined && ancestry(spans, found).includes("plan a trip@agent") ? found : undefined
        })
        expect(ancestry(otlp.spans, lookup)).toEqual([
          "tools/call get-weather@weather",
          "tools/call get-weather@effect-mcp-transport bridge",
          "tools/call get-weather@effect-mcp-transport bridge",
          "tools/call get-weather@agent",
          "plan a trip@agent"
        ])
        const chain = [lookup, ...ancestry(otlp.spans, lookup)].length
        expect(chain).toBe(6)
        const trace = otlp.spans.filter((s) => s.traceId === lookup.traceId && s.name === "tools/call get-weather")
        expect(trace.map((s) => `${s.service}:${s.kind}`).sort((a, b) => a.localeCompare(b))).toEqual([
          `agent:${SpanKind.client}`,
          `effect-mcp-transport bridge:${SpanKind.server}`,
          `effect-mcp-transport bridge:${SpanKind.client}`,
          `weather:${SpanKind.server}`
        ])
        for (const span of trace) {
          expect(span.attributes).toMatchObject({
            "mcp.method.name": "tools/call",
            "gen_ai.tool.name": "get-weather",
            "gen_ai.operation.name": "execute_tool",
            "mcp.protocol.version": protocol
          })
          expect(span.attributes["jsonrpc.request.id"]).toEqual(expect.any(String))
          expect(span.attributes["gen_ai.tool.call.arguments"]).toBeUndefined()
        }
        const upstream = one(trace, "weather", "tools/call get-weather", SpanKind.server)!
        expect(upstream.attributes["network.transport"]).toBe("pipe")
        const front = one(trace, "effect-mcp-transport bridge", "tools/call get-weather", SpanKind.server)!
        expect(front.attributes).toMatchObject({ "network.transport": "tcp", "client.address": "127.0.0.1" })
        const agent = one(trace, "agent", "tools/call get-weather", SpanKind.client)!
        expect(agent.attributes).toMatchObject({ "network.transport": "tcp", "server.address": "127.0.0.1" })
        expect(agent.attributes["server.port"]).toBe(Number(new URL(url).port))
        cli.child.kill("SIGINT")
        yield* Effect.promise(() => cli.exit)
      }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))
  }
})

describe("the conventions' examples", { timeout: 90_000 }, () => {
  it.live("stdio: initialize and a tool call, client span parent of the server span, with the example's attributes", () =>
    Effect.gen(function*() {
      const otlp = yield* receiver
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(clientTelemetry(otlp.endpoint), scope)
      yield* Effect.gen(function*() {
        const client = yield* McpClient.connect(
          StdioClientTransport.make({ command: NODE, args: [tracedServer], env: otelEnv(otlp.endpoint), stderr: { log: false } }),
          { protocol: "2025-11-25" }
        )
        yield* client.callTool({ name: "get-weather", arguments: { location: "San Francisco" } })
      }).pipe(Effect.scoped, Effect.provide(context))
      yield* Scope.close(scope, Exit.void)

      const [clientInit, serverInit, clientCall, serverCall] = yield* otlp.waitFor((spans) => {
        const found = [
          one(spans, "agent", "initialize", SpanKind.client),
          one(spans, "weather", "initialize", SpanKind.server),
          one(spans, "agent", "tools/call get-weather", SpanKind.client),
          one(spans, "weather", "tools/call get-weather", SpanKind.server)
        ]
        return found.every((s) => s !== undefined) ? found as Array<ReceivedSpan> : undefined
      })
      expect(serverInit!.parentSpanId).toBe(clientInit!.spanId)
      expect(serverInit!.traceId).toBe(clientInit!.traceId)
      expect(serverCall!.parentSpanId).toBe(clientCall!.spanId)
      for (const span of [clientInit!, serverInit!]) {
        expect(span.attributes).toMatchObject({
          "jsonrpc.request.id": expect.any(String),
          "mcp.method.name": "initialize",
          "mcp.protocol.version": "2025-11-25",
          "network.transport": "pipe"
        })
        expect(span.status.code).not.toBe(StatusCode.error)
      }
      expect(serverInit!.attributes["jsonrpc.request.id"]).toBe(clientInit!.attributes["jsonrpc.request.id"])
      for (const span of [clientCall!, serverCall!]) {
        expect(span.attributes).toMatchObject({
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": "get-weather",
          "mcp.method.name": "tools/call",
          "mcp.protocol.version": "2025-11-25",
          "network.transport": "pipe"
        })
      }
      expect(serverCall!.attributes["jsonrpc.request.id"]).toBe(clientCall!.attributes["jsonrpc.request.id"])
      expect(otlp.contentTypes.has("application/json")).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("Streamable HTTP (serve --http): initialize and a tool call, with session id and a link to the HTTP server span", () =>
    Effect.gen(function*() {
      const otlp = yield* receiver
      const cli = startCli(["serve", "--http", "--port", "0", "--eras", "legacy"], { env: otelEnv(otlp.endpoint) })
      yield* Effect.addFinalizer(() => Effect.sync(() => cli.child.kill("SIGKILL")))
      yield* Effect.promise(() => cli.waitFor(/listening (http:\S+)/))
      const url = /listening (http:\S+)/.exec(cli.stderr())![1]!
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(clientTelemetry(otlp.endpoint), scope)
      const sessionId = yield* Effect.gen(function*() {
        const transport = yield* StreamableHttpClientTransport.make({ url })
        const client = yield* McpClient.fromTransport(transport, { protocol: "2025-11-25" })
        yield* client.callTool({ name: "echo", arguments: { text: "hi" } })
        return yield* transport.sessionId
      }).pipe(Effect.scoped, Effect.provide(context))
      yield* Scope.close(scope, Exit.void)
      expect(sessionId).toEqual(expect.any(String))

      const server = "effect-mcp-transport serve"
      const [clientInit, serverInit, clientCall, serverCall] = yield* otlp.waitFor((spans) => {
        const found = [
          one(spans, "agent", "initialize", SpanKind.client),
          one(spans, server, "initialize", SpanKind.server),
          one(spans, "agent", "tools/call echo", SpanKind.client),
          one(spans, server, "tools/call echo", SpanKind.server)
        ]
        return found.every((s) => s !== undefined) ? found as Array<ReceivedSpan> : undefined
      })
      expect(serverInit!.parentSpanId).toBe(clientInit!.spanId)
      expect(serverCall!.parentSpanId).toBe(clientCall!.spanId)
      for (const span of [clientInit!, serverInit!, clientCall!, serverCall!]) {
        expect(span.attributes).toMatchObject({
          "mcp.protocol.version": "2025-11-25",
          "network.transport": "tcp",
          "network.protocol.name": "http"
        })
      }
      // The session id is known from the initialize answer on: the call carries it on both sides.
      expect(clientCall!.attributes["mcp.session.id"]).toBe(sessionId)
      expect(serverCall!.attributes["mcp.session.id"]).toBe(sessionId)
      expect(clientCall!.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "echo" })
      // The MCP server span links the HTTP server span effect/http made for the POST.
      const http = yield* otlp.waitFor((spans) => {
        const link = serverCall!.links[0]
        return link === undefined ? undefined : spans.find((s) => s.spanId === link.spanId)
      })
      expect(http.kind).toBe(SpanKind.server)
      expect(http.attributes["http.request.method"]).toBe("POST")
      cli.child.kill("SIGINT")
      yield* Effect.promise(() => cli.exit)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))
})
