/**
 * Spans in one process, with a recording tracer: a failure nobody meant is
 * never unseen (logged with its cause, reported to Effect's ErrorReporters,
 * set on the span) while the client gets a bare -32603; the client's span
 * around each request, its trace context in `_meta`, the error
 * attributes; nothing added to requests when no tracer is installed; and
 * the environment the OTLP export reads.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Cause, ConfigProvider, Deferred, Effect, ErrorReporter, Logger, Schedule, Tracer } from "effect"
import { TestClock } from "effect/testing"
import * as McpClient from "../../src/client/McpClient.ts"
import * as McpManager from "../../src/client/McpManager.ts"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as ClientSpans from "../../src/client/internal/ClientSpans.ts"
import * as OneShot from "../../src/client/OneShot.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import * as RequestMeta from "../../src/RequestMeta.ts"
import * as JsonRpc from "../../src/JsonRpc.ts"
import { RpcError, SpawnError } from "../../src/McpError.ts"
import type { Handler, HandlerContext } from "../../src/server/Handler.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as Telemetry from "../../src/Telemetry.ts"
import { serve } from "../server/http/helpers.ts"
import { recordingTracer } from "../fixtures/RecordingTracer.ts"

const contextOf = (): HandlerContext => ({
  sessionId: undefined,
  requestId: undefined,
  notify: () => Effect.void,
  request: () => Effect.die("no client here")
})

/** Serves `explode` (dies), `fails` (fails with a plain Error) and `refuses` (a deliberate RpcError). */
const server = McpServer.make({ serverInfo: { name: "failing", version: "1.0.0" }, enforceInitialized: false }).pipe(
  McpServer.method("tools/call", {}, (params) => {
    const name = (params as { name: string }).name
    return name === "explode"
      ? Effect.die(new Error("secret detail"))
      : name === "fails"
      ? Effect.fail(new Error("secret failure"))
      : Effect.fail(new RpcError({ code: -32050, rpcMessage: "refused on purpose" }))
  })
)

/** Runs `effect` with a logger and an error reporter that keep what they are given. */
const observed = <A, E>(effect: Effect.Effect<A, E>) => {
  const lines: Array<string> = []
  const reported: Array<string> = []
  const capture = Logger.make((o) => void lines.push(JSON.stringify(o.message)))
  const reporter = ErrorReporter.make(({ error }) => void reported.push(error.message))
  return Effect.map(
    effect.pipe(
      Effect.provide(Logger.layer([capture])),
      Effect.provideService(ErrorReporter.CurrentErrorReporters, new Set([reporter]))
    ),
    (value) => ({ value, lines, reported })
  )
}

describe("no failure unseen", () => {
  for (const [tool, detail] of [["explode", "secret detail"], ["fails", "secret failure"]] as const) {
    it.effect(`${tool}: answered -32603 without detail; logged with its cause, reported, and on the span`, () =>
      Effect.gen(function*() {
        const { spans, tracer } = recordingTracer()
        const { handler } = yield* McpServer.toHandler(server)
        const { value: reply, lines, reported } = yield* observed(
          handler(JsonRpc.request(1, "tools/call", { name: tool }), contextOf()).pipe(Effect.provideService(Tracer.Tracer, tracer))
        )
        expect(reply).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32603, message: "Internal error" } })
        expect(JSON.stringify(reply)).not.toContain("secret")
        expect(lines.some((l) => l.includes(detail) && l.includes("tools/call"))).toBe(true)
        expect(reported).toEqual([detail])
        const span = spans.find((s) => s.name === `tools/call ${tool}`)!
        expect(span.kind).toBe("server")
        expect(Object.fromEntries(span.attributes)).toMatchObject({ "error.type": "-32603", "rpc.response.status_code": "-32603" })
        const status = span.status
        expect(status._tag === "Ended" && status.exit._tag === "Failure" ? Cause.squash(status.exit.cause) : undefined)
          .toMatchObject({ message: detail })
      }))
  }

  it.effect("a notification the server receives is a SERVER span named by its method, a child of the sender's span", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      const { handler } = yield* McpServer.toHandler(server)
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
      const parentId = "00f067aa0ba902b7"
      yield* handler(
        JsonRpc.notification("notifications/roots/list_changed", { _meta: { traceparent: `00-${traceId}-${parentId}-01` } }),
        contextOf()
      ).pipe(Effect.provideService(Tracer.Tracer, tracer))
      const span = spans.find((s) => s.name === "notifications/roots/list_changed")
      expect(span?.kind).toBe("server")
      expect(span?.attributes.get("mcp.method.name")).toBe("notifications/roots/list_changed")
      expect(span?.attributes.get("jsonrpc.request.id")).toBeUndefined()
      expect(span?.traceId).toBe(traceId)
      expect(span?.parent._tag === "Some" ? span.parent.value.spanId : undefined).toBe(parentId)
      expect(span?.status._tag).toBe("Ended")
    }))

  it.effect("McpManager: each connect attempt is a span with the server's name and the attempt; later ones are reconnects", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      const settle = Effect.gen(function*() {
        for (let i = 0; i < 100; i++) yield* Effect.yieldNow
      })
      yield* Effect.gen(function*() {
        yield* McpManager.make({
          config: { mcpServers: { down: { command: "x" } } },
          transport: () => Effect.fail(new SpawnError({ command: "x", args: [], cause: "down" })),
          reconnectSchedule: Schedule.spaced("1 second"),
          circuitBreaker: { failureThreshold: 10, cooldown: "10 seconds" },
          slowStartThreshold: "1 millis"
        })
        yield* settle
        yield* TestClock.adjust("1 second")
        yield* settle
      }).pipe(Effect.provideService(Tracer.Tracer, tracer))
      const attempts = spans.filter((s) => s.name === "connect down")
      expect(attempts.length).toBeGreaterThanOrEqual(2)
      expect(Object.fromEntries(attempts[0]!.attributes)).toEqual({
        "mcp.manager.server": "down",
        "mcp.manager.attempt": 1,
        "mcp.manager.reconnect": false
      })
      expect(Object.fromEntries(attempts[1]!.attributes)).toMatchObject({ "mcp.manager.attempt": 2, "mcp.manager.reconnect": true })
      expect(attempts[0]!.status._tag === "Ended" && attempts[0]!.status.exit._tag).toBe("Failure")
    }))

  for (const protocol of ["auto", "2025-11-25"] as const) {
    it.effect(`McpClient's negotiation is one connect span, the probe and the handshake under it (${protocol})`, () =>
      Effect.gen(function*() {
        const { spans, tracer } = recordingTracer()
        const { handler } = yield* McpServer.toHandler(
          McpServer.make({ serverInfo: { name: "plain", version: "1.0.0" } })
        )
        yield* Effect.gen(function*() {
          const pair = yield* InMemoryTransport.makePair(handler)
          yield* McpClient.fromTransport(pair.client, { protocol, listen: false })
        }).pipe(Effect.scoped, Effect.provideService(Tracer.Tracer, tracer))
        const connect = spans.filter((s) => s.name === "connect")
        expect(connect).toHaveLength(1)
        const children = spans.filter((s) => s.kind === "client" && s.parent._tag === "Some" && s.parent.value.spanId === connect[0]!.spanId)
        // Our server answers the probe: the stateless era, no handshake; pinned to a handshake revision, no probe.
        expect(children.map((s) => s.name)).toContain(protocol === "auto" ? "server/discover" : "initialize")
        expect(connect[0]!.attributes.get("mcp.protocol.version")).toEqual(expect.any(String))
        expect(connect[0]!.attributes.get("mcp.era")).toBe(protocol === "auto" ? "modern" : "legacy")
      }))
  }

  it.effect("with no tracer installed, the failure is still logged and reported", () =>
    Effect.gen(function*() {
      const { handler } = yield* McpServer.toHandler(server)
      const { value: reply, lines, reported } = yield* observed(handler(JsonRpc.request(1, "tools/call", { name: "explode" }), contextOf()))
      expect(reply).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32603, message: "Internal error" } })
      expect(lines.some((l) => l.includes("secret detail"))).toBe(true)
      expect(reported).toEqual(["secret detail"])
    }))

  it.effect("a deliberate JSON-RPC error is the reply, neither logged nor reported; its span is ERROR with its message", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      const { handler } = yield* McpServer.toHandler(server)
      const { value: reply, lines, reported } = yield* observed(
        handler(JsonRpc.request(1, "tools/call", { name: "refuses" }), contextOf()).pipe(Effect.provideService(Tracer.Tracer, tracer))
      )
      expect(reply).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32050, message: "refused on purpose" } })
      expect(lines).toEqual([])
      expect(reported).toEqual([])
      const status = spans[0]!.status
      expect(status._tag === "Ended" && status.exit._tag === "Failure" ? Cause.squash(status.exit.cause) : undefined)
        .toMatchObject({ message: "refused on purpose" })
    }))
})

describe("client spans", () => {
  /** Answers `tools/call` by name: `bad` with isError, `nope` with -32602; keeps the params it was sent. */
  const recordingHandler = () => {
    const seen: Array<unknown> = []
    const notified = Deferred.makeUnsafe<unknown>()
    const handler: Handler = (message) => {
      if (!("id" in message)) return Effect.as(Deferred.succeed(notified, message.params), null)
      seen.push(message.params)
      const name = (message.params as { name?: string } | undefined)?.name
      return Effect.succeed(
        name === "nope"
          ? JsonRpc.failure(message.id, -32602, "Unknown tool: nope")
          : JsonRpc.success(message.id, { content: [{ type: "text", text: "done" }], isError: name === "bad" })
      )
    }
    return { seen, handler, notified }
  }

  it.effect("a request's span is CLIENT, named by tool, its trace context in params._meta; errors carry error.type", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      const { handler, notified, seen } = recordingHandler()
      const pair = yield* InMemoryTransport.makePair(handler)
      const transport = ClientSpans.traced(pair.client)
      yield* Effect.gen(function*() {
        yield* transport.request("tools/call", { name: "good", arguments: { city: "Oslo" }, _meta: { progressToken: 7 } })
        yield* transport.request("tools/call", { name: "bad" })
        yield* Effect.flip(transport.request("tools/call", { name: "nope" }))
        yield* transport.notify("notifications/roots/list_changed")
      }).pipe(Effect.provideService(Tracer.Tracer, tracer))
      expect(spans.map((s) => `${s.kind} ${s.name}`)).toEqual([
        "client tools/call good",
        "client tools/call bad",
        "client tools/call nope",
        "client notifications/roots/list_changed"
      ])
      const [good, bad, nope, notification] = spans
      expect((seen[0] as { _meta: unknown })._meta).toEqual({
        progressToken: 7,
        traceparent: `00-${good!.traceId}-${good!.spanId}-01`
      })
      const notificationParams = (yield* Deferred.await(notified)) as { _meta: { traceparent: string } }
      expect(notificationParams._meta.traceparent).toContain(notification!.spanId)
      expect(Object.fromEntries(good!.attributes)).toMatchObject({
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "good",
        "gen_ai.operation.name": "execute_tool",
        "jsonrpc.request.id": expect.any(String)
      })
      // Arguments and results are opt-in.
      expect(good!.attributes.has("gen_ai.tool.call.arguments")).toBe(false)
      expect(bad!.attributes.get("error.type")).toBe("tool_error")
      expect(bad!.status._tag === "Ended" && bad!.status.exit._tag).toBe("Failure")
      expect(Object.fromEntries(nope!.attributes)).toMatchObject({ "error.type": "-32602", "rpc.response.status_code": "-32602" })
      const status = nope!.status
      expect(status._tag === "Ended" && status.exit._tag === "Failure" ? Cause.squash(status.exit.cause) : undefined)
        .toMatchObject({ message: "Unknown tool: nope" })
    }).pipe(Effect.scoped))

  it.effect("with RecordToolContent, a tool call's arguments and result are on its span as JSON", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      const { handler } = recordingHandler()
      const pair = yield* InMemoryTransport.makePair(handler)
      yield* ClientSpans.traced(pair.client).request("tools/call", { name: "good", arguments: { city: "Oslo" } }).pipe(
        Effect.provideService(Tracer.Tracer, tracer),
        Effect.provide(Telemetry.layerRecordToolContent)
      )
      expect(spans[0]!.attributes.get("gen_ai.tool.call.arguments")).toBe("{\"city\":\"Oslo\"}")
      expect(spans[0]!.attributes.get("gen_ai.tool.call.result")).toContain("\"done\"")
    }).pipe(Effect.scoped))

  it.effect("the traced transport keeps the transport's getters live (the kind a fromConfig transport settles on)", () =>
    Effect.gen(function*() {
      const { handler } = recordingHandler()
      const pair = yield* InMemoryTransport.makePair(handler)
      let kind: "streamable-http" | "sse" = "streamable-http"
      const settling = Object.defineProperty({ ...pair.client }, "kind", { get: () => kind, enumerable: true })
      const traced = ClientSpans.traced(settling)
      kind = "sse"
      expect(traced.kind).toBe("sse")
      expect(ClientSpans.traced(traced)).toBe(traced)
    }).pipe(Effect.scoped))

  it.effect("with no tracer installed, requests go out as they were given: no span, no _meta", () =>
    Effect.gen(function*() {
      const { handler, seen } = recordingHandler()
      const pair = yield* InMemoryTransport.makePair(handler)
      yield* ClientSpans.traced(pair.client).request("tools/call", { name: "good" })
      expect(seen).toEqual([{ name: "good" }])
    }).pipe(Effect.scoped))
})

describe("one-shot calls", () => {
  const echo = McpServer.make({ serverInfo: { name: "echo", version: "1.0.0" } }).pipe(
    McpServer.method("tools/call", {}, (params) =>
      Effect.succeed({ content: [{ type: "text", text: String((params as { name: string }).name) }] }))
  )

  for (const protocol of ["2026-07-28", "2025-11-25"] as const) {
    it.live(`the call is one CLIENT span, the server's span its child; the handshake's messages are spans under it (${protocol})`, () =>
      Effect.gen(function*() {
        const { spans, tracer } = recordingTracer()
        yield* Effect.gen(function*() {
          const handle = yield* McpServer.toHandler(echo)
          const server = yield* serve({}, () => handle.handler)
          yield* OneShot.call(server.url, "tools/call", { name: "hello", arguments: {} }, { protocol })
          const call = spans.find((s) => s.kind === "client" && s.name === "tools/call hello")!
          const served = spans.find((s) => s.kind === "server" && s.name === "tools/call hello")!
          expect(served.parent._tag === "Some" && served.parent.value.spanId).toBe(call.spanId)
          expect(Object.fromEntries(call.attributes)).toMatchObject({
            "mcp.method.name": "tools/call",
            "gen_ai.tool.name": "hello",
            "network.transport": "tcp",
            "server.address": "127.0.0.1",
            "server.port": server.port,
            "jsonrpc.request.id": expect.any(String)
          })
          if (protocol === "2025-11-25") {
            const initialize = spans.find((s) => s.kind === "client" && s.name === "initialize")!
            expect(initialize.parent._tag === "Some" && initialize.parent.value.spanId).toBe(call.spanId)
            const initServed = spans.find((s) => s.kind === "server" && s.name === "initialize")!
            expect(initServed.parent._tag === "Some" && initServed.parent.value.spanId).toBe(initialize.spanId)
          } else {
            expect(call.attributes.get("mcp.protocol.version")).toBe(protocol)
          }
        }).pipe(Effect.scoped, Effect.provideService(Tracer.Tracer, tracer), Effect.provide(NodeHttpClient.layerUndici))
      }))
  }
})

describe("server spans of requests that bring no trace context", () => {
  const echo = McpServer.make({ serverInfo: { name: "echo", version: "1.0.0" } }).pipe(
    McpServer.method("tools/call", {}, () => Effect.succeed({ content: [] }))
  )
  const postJson = (url: string, body: object, headers: Record<string, string>) =>
    Effect.promise(async () => {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify(body)
      })
      await res.text()
      return res
    })
  const call = { name: "hello", arguments: {} }

  /** The effect/http server span of the POST that carried `served`, if `served` is under it. */
  const httpParent = (spans: ReadonlyArray<Tracer.NativeSpan>, served: Tracer.NativeSpan) => {
    const parent = served.parent._tag === "Some" ? served.parent.value : undefined
    return spans.find((s) => s.spanId === parent?.spanId && s.kind === "server" && s.attributes.get("http.request.method") === "POST")
  }

  /**
   * Serves `echo` under a recording tracer, sends the call with `send` (raw POSTs to the endpoint's URL),
   * and checks that the call's server span is a child of the HTTP server span of the POST that carried it.
   */
  const servedUnderPost = (send: (url: string) => Effect.Effect<Response>) =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      yield* Effect.gen(function*() {
        const handle = yield* McpServer.toHandler(echo)
        const server = yield* serve({}, () => handle.handler)
        expect((yield* send(server.url)).status).toBe(200)
        const served = spans.find((s) => s.kind === "server" && s.name === "tools/call hello")!
        expect(httpParent(spans, served)).toBeDefined()
      }).pipe(Effect.scoped, Effect.provideService(Tracer.Tracer, tracer))
    })

  it.live("2026-07-28: the tool call's span is a child of the POST's HTTP server span", () =>
    servedUnderPost((url) => {
      const params = { ...call, _meta: RequestMeta.requestMeta({ protocolVersion: "2026-07-28", clientCapabilities: {} }) }
      return postJson(url, { jsonrpc: "2.0", id: 1, method: "tools/call", params }, {
        ...RequestMeta.standardHeaders("2026-07-28", "tools/call", params)
      })
    }))

  it.live("2025-11-25 session: the tool call's span is a child of the POST's HTTP server span", () =>
    servedUnderPost((url) =>
      Effect.gen(function*() {
        const init = yield* postJson(url, {
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1.0.0" } }
        }, {})
        const session = { "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-11-25" }
        yield* postJson(url, { jsonrpc: "2.0", method: "notifications/initialized" }, session)
        return yield* postJson(url, { jsonrpc: "2.0", id: 2, method: "tools/call", params: call }, session)
      })
    ))
})

describe("HTTP exchanges under a request", () => {
  it.live("with httpTracing \"span\", the POST of a request is a child span of the request's client span", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      yield* Effect.gen(function*() {
        const handle = yield* McpServer.toHandler(McpServer.make({ serverInfo: { name: "e", version: "1.0.0" } }))
        const server = yield* serve({}, () => handle.handler)
        const transport = ClientSpans.traced(yield* StreamableHttpClientTransport.make({ url: server.url, httpTracing: "span" }))
        yield* transport.setProtocolVersion("2026-07-28")
        yield* transport.request("server/discover", {
          _meta: RequestMeta.requestMeta({ protocolVersion: "2026-07-28", clientCapabilities: {} })
        })
        const mcp = spans.find((s) => s.kind === "client" && s.name === "server/discover")!
        const post = spans.find((s) => s.kind === "client" && s.name === "POST")!
        expect(post.parent._tag === "Some" && post.parent.value.spanId).toBe(mcp.spanId)
      }).pipe(Effect.scoped, Effect.provideService(Tracer.Tracer, tracer), Effect.provide(NodeHttpClient.layerUndici))
    }))
})

describe("Telemetry environment", () => {
  const read = (env: Record<string, string>) =>
    Telemetry.readEnv({ serviceName: "fallback" }).pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env)))

  it.effect("unset endpoint: export off, nothing refused", () =>
    Effect.gen(function*() {
      expect(yield* read({})).toEqual({ options: undefined })
      expect(yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "  " })).toEqual({ options: undefined })
      expect(yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "true" })).toEqual({ options: undefined })
    }))

  it.effect("endpoint, protocol, headers, service name and export delay are read; grpc is refused", () =>
    Effect.gen(function*() {
      expect(yield* read({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_HEADERS: "api-key=a%20b,x-tenant=t1",
        OTEL_SERVICE_NAME: "weather",
        OTEL_BSP_SCHEDULE_DELAY: "250"
      })).toEqual({
        options: {
          endpoint: "http://127.0.0.1:4318",
          protocol: "http/json",
          headers: { "api-key": "a b", "x-tenant": "t1" },
          serviceName: "weather",
          exportInterval: 250
        }
      })
      const defaults = yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })
      expect(defaults.options).toMatchObject({ protocol: "http/protobuf", serviceName: "fallback" })
      const grpc = yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })
      expect(grpc.options).toBeUndefined()
      expect(grpc.refused).toContain("grpc")
    }))
})
