/**
 * The metrics the runtime records, read back from an isolated registry: an
 * exchange of calls in memory (durations by method and tool, error.type for
 * JSON-RPC errors and tool errors, requests and sessions active), exact
 * durations under the TestClock, the sessions of both sides closing, the
 * HTTP transport's `tcp` attributes, refusals and scrape endpoint, and the
 * failure classification of client calls.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Layer, Metric, Option, Schedule, Scope, Sink, Stdio, Stream, Tracer } from "effect"
import { TestClock } from "effect/testing"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as McpManager from "../../src/client/McpManager.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import { RequestTimeout, RpcError, SpawnError, TransportClosed } from "../../src/McpError.ts"
import * as Metrics from "../../src/observability/Metrics.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as StdioServerTransport from "../../src/server/StdioServerTransport.ts"
import { eventually, openSession, openSse, post } from "../server/http/helpers.ts"
import { recordingTracer } from "../fixtures/RecordingTracer.ts"

const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] })

/** `echo`, `boom` (a JSON-RPC error), `broken` (a tool result with isError) and `slow` (1.5 s on the clock, telling `started`). */
const makeServer = (started?: Deferred.Deferred<void>) =>
  McpServer.make({ serverInfo: { name: "metrics", version: "1.0.0" } }).pipe(
  McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [] })),
  McpServer.method("tools/call", {}, (params) =>
    Effect.gen(function*() {
      const p = params as { name: string }
      if (p.name === "boom") return yield* Effect.fail(new RpcError({ code: -32050, rpcMessage: "boom" }))
      if (p.name === "broken") return { ...text("no"), isError: true }
      if (p.name === "slow") {
        if (started !== undefined) yield* Deferred.succeed(started, undefined)
        yield* Effect.sleep("1500 millis")
      }
      return text(p.name)
    }))
)

/** Every series of a metric, by its attributes (without `unit`). */
const series = (id: string) =>
  Effect.map(Metric.snapshot, (all) =>
    all.filter((m) => m.id === id).map((m) => {
      const { unit: _unit, ...attributes } = m.attributes ?? {}
      return { attributes, state: m.state as any }
    }))

const find = (id: string, match: Record<string, string>) =>
  Effect.map(series(id), (all) =>
    all.filter((s) =>
      Object.entries(match).every(([k, v]) => s.attributes[k] === v) &&
      Object.keys(s.attributes).every((k) => k in match)
    ))

/** Lets the fibers started so far run until they wait. */
const settle = Effect.gen(function*() {
  for (let i = 0; i < 100; i++) yield* Effect.yieldNow
})

/** Runs `body` with metrics on and a registry of its own, so that only its own metrics are read. */
const isolated = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  body.pipe(Metrics.enabled, Effect.provideService(Metric.MetricRegistry, new Map()))

const inMemory = (started?: Deferred.Deferred<void>) =>
  Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(makeServer(started))
    // The pair and the client in a scope of their own, so that a test can end both sessions.
    const scope = yield* Scope.make()
    const client = yield* Effect.flatMap(
      InMemoryTransport.makePair(handle.handler),
      (pair) => McpClient.fromTransport(pair.client, { protocol: "2025-11-25", listen: false })
    ).pipe(Scope.provide(scope))
    return { client, close: Scope.close(scope, Exit.void) }
  })

const tool = (name: string) => ({
  "mcp.method.name": "tools/call",
  "gen_ai.tool.name": name,
  "gen_ai.operation.name": "execute_tool",
  "mcp.protocol.version": "2025-11-25"
})

describe("Metrics", () => {
  it.effect("an exchange of calls: durations by method and tool, error.type for errors and tool errors, nothing left active", () =>
    isolated(Effect.gen(function*() {
      const { client } = yield* inMemory()
      yield* client.callTool({ name: "echo" })
      yield* client.callTool({ name: "echo" })
      yield* client.ping()
      const boom = yield* Effect.flip(client.callTool({ name: "boom" }))
      expect(boom.reason._tag).toBe("RpcError")
      const broken = yield* client.callTool({ name: "broken" })
      expect(broken.isError).toBe(true)

      for (const side of ["server", "client"]) {
        const id = `mcp.${side}.operation.duration`
        const [echo] = yield* find(id, tool("echo"))
        expect(echo?.state.count).toBe(2)
        const [ping] = yield* find(id, { "mcp.method.name": "ping", "mcp.protocol.version": "2025-11-25" })
        expect(ping?.state.count).toBe(1)
        const [failed] = yield* find(id, { ...tool("boom"), "error.type": "-32050", "rpc.response.status_code": "-32050" })
        expect(failed?.state.count).toBe(1)
        const [toolError] = yield* find(id, { ...tool("broken"), "error.type": "tool_error" })
        expect(toolError?.state.count).toBe(1)
        // Every request has ended.
        for (const active of yield* series(`mcp.${side}.active_requests`)) expect(active.state.value).toBe(0)
      }
      // The server saw the handshake too, under the version it answered with.
      const [initialize] = yield* find("mcp.server.operation.duration", { "mcp.method.name": "initialize", "mcp.protocol.version": "2025-11-25" })
      expect(initialize?.state.count).toBe(1)
    })))

  it.effect("off unless turned on: an exchange records nothing", () =>
    Effect.gen(function*() {
      const { client, close } = yield* inMemory()
      yield* client.callTool({ name: "echo" })
      yield* Effect.flip(client.callTool({ name: "boom" }))
      yield* close
      yield* Metrics.admissionRefused("session", "server-full")
      expect((yield* Metric.snapshot).filter((m) => m.id.startsWith("mcp."))).toEqual([])
    }).pipe(Effect.provideService(Metric.MetricRegistry, new Map())))

  it.effect("durations in seconds on the clock, in the conventions' buckets; requests active while they run", () =>
    isolated(Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const { client } = yield* inMemory(started)
      const call = yield* Effect.forkChild(client.callTool({ name: "slow" }, { timeout: "1 minute" }))
      yield* Deferred.await(started)
      // Started and not yet answered: counted on both sides.
      const waiting = yield* find("mcp.client.active_requests", { "mcp.method.name": "tools/call" })
      expect(waiting[0]?.state.value).toBe(1)
      const serving = yield* find("mcp.server.active_requests", { "mcp.method.name": "tools/call" })
      expect(serving[0]?.state.value).toBe(1)
      yield* TestClock.adjust("1500 millis")
      yield* Fiber.join(call)
      for (const side of ["server", "client"]) {
        const [slow] = yield* find(`mcp.${side}.operation.duration`, tool("slow"))
        expect(slow?.state.sum).toBe(1.5)
        const buckets = new Map<number, number>(slow?.state.buckets)
        expect([...buckets.keys()]).toEqual(Metrics.DURATION_BOUNDARIES)
        expect(buckets.get(1)).toBe(0)
        expect(buckets.get(2)).toBe(1)
      }
    })))

  it.effect("sessions: active while open, their duration once closed, on both sides", () =>
    isolated(Effect.gen(function*() {
      const { close } = yield* inMemory()
      const [open] = yield* find("mcp.client.active_sessions", {})
      expect(open?.state.value).toBe(1)
      const [serverOpen] = yield* find("mcp.server.active_sessions", {})
      expect(serverOpen?.state.value).toBe(1)
      yield* TestClock.adjust("90 seconds")
      yield* close
      const [clientSession] = yield* find("mcp.client.session.duration", { "mcp.protocol.version": "2025-11-25" })
      expect(clientSession?.state.count).toBe(1)
      expect(clientSession?.state.sum).toBe(90)
      expect((yield* find("mcp.client.active_sessions", {}))[0]?.state.value).toBe(0)
      const [serverSession] = yield* find("mcp.server.session.duration", {})
      expect(serverSession?.state.count).toBe(1)
      expect(serverSession?.state.sum).toBe(90)
      expect((yield* find("mcp.server.active_sessions", {}))[0]?.state.value).toBe(0)
    })))

  it("a client call's failure: the JSON-RPC code, timeout, the error's tag, cancelled, _OTHER for a defect", () => {
    const fail = (e: unknown) => Exit.fail(e)
    expect(Metrics.clientFailure("tools/call", fail(new RpcError({ code: -32602, rpcMessage: "bad" }))))
      .toEqual({ errorType: "-32602", statusCode: "-32602" })
    expect(Metrics.clientFailure("ping", fail(new RequestTimeout({ method: "ping", id: 1, timeoutMs: 10 }))))
      .toEqual({ errorType: "timeout" })
    expect(Metrics.clientFailure("ping", fail(new TransportClosed({ reason: "gone" })))).toEqual({ errorType: "TransportClosed" })
    expect(Metrics.clientFailure("ping", Exit.failCause(Cause.interrupt()))).toEqual({ errorType: "cancelled" })
    expect(Metrics.clientFailure("ping", Exit.die(new Error("bug")))).toEqual({ errorType: "_OTHER" })
    expect(Metrics.clientFailure("tools/call", Exit.succeed({ content: [], isError: true }))).toEqual({ errorType: "tool_error" })
    expect(Metrics.clientFailure("tools/call", Exit.succeed({ content: [] }))).toBeUndefined()
  })

  it.effect("the manager's metrics: circuit state as 0/1/2 per server, reconnects after the first attempt", () =>
    isolated(Effect.gen(function*() {
      yield* Metrics.connectAttempt("a", true)
      yield* Metrics.connectAttempt("a", false)
      yield* Metrics.connectAttempt("a", false)
      yield* Metrics.circuitState("a", "Open")
      yield* Metrics.circuitState("b", "HalfOpen")
      expect((yield* find("mcp.manager.reconnects", { "mcp.manager.server": "a" }))[0]?.state.count).toBe(2)
      expect((yield* find("mcp.manager.circuit.state", { "mcp.manager.server": "a" }))[0]?.state.value).toBe(2)
      expect((yield* find("mcp.manager.circuit.state", { "mcp.manager.server": "b" }))[0]?.state.value).toBe(1)
    })))

  it.effect("the bridge's refusals: a refusal counts, an admission does not", () =>
    isolated(Effect.gen(function*() {
      yield* Metrics.bridgeAdmission(undefined)
      expect(yield* find("mcp.bridge.admission.refused", {})).toEqual([])
      yield* Metrics.bridgeAdmission({ retryAfterSeconds: 5, message: "every upstream slot is taken" })
      expect((yield* find("mcp.bridge.admission.refused", {}))[0]?.state.count).toBe(1)
    })))

  it.effect("store round trips: the duration per operation and backend, error.type when one fails", () =>
    isolated(Effect.gen(function*() {
      const roundTrip = Metrics.storeRoundTrip("append", "redis")
      yield* roundTrip(Effect.sleep("2 millis")).pipe(Effect.forkChild, Effect.tap(() => TestClock.adjust("2 millis")), Effect.flatMap(Fiber.join))
      yield* Effect.flip(roundTrip(Effect.fail(new TransportClosed({ reason: "redis went away" }))))
      const [ok] = yield* find("mcp.store.operation.duration", { "mcp.store.operation": "append", "mcp.store.backend": "redis" })
      expect(ok?.state.count).toBe(1)
      expect(ok?.state.sum).toBe(0.002)
      const [failed] = yield* find("mcp.store.operation.duration", {
        "mcp.store.operation": "append",
        "mcp.store.backend": "redis",
        "error.type": "TransportClosed"
      })
      expect(failed?.state.count).toBe(1)
    })))

  it.live("over HTTP: network.transport tcp on both sides, /metrics in the text exposition format", () =>
    isolated(Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(makeServer())
      const context = yield* Layer.build(
        HttpServerTransport.layer(handle.handler, { port: 0, metrics: true })
      )
      const transport = yield* Effect.provideContext(HttpServerTransport.HttpServerTransport, context)
      const url = Option.getOrThrow(transport.url)
      const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: "2025-11-25" })
      yield* client.callTool({ name: "echo" })
      const http = { "network.transport": "tcp", "network.protocol.name": "http" }
      for (const side of ["server", "client"]) {
        const [echo] = yield* find(`mcp.${side}.operation.duration`, { ...tool("echo"), ...http })
        expect(echo?.state.count).toBe(1)
      }
      expect((yield* find("mcp.server.active_sessions", http))[0]?.state.value).toBe(1)

      const scraped = yield* Effect.promise(() => fetch(new URL("/metrics", url)).then(async (r) => ({ type: r.headers.get("content-type"), body: await r.text() })))
      expect(scraped.type).toContain("text/plain; version=0.0.4")
      expect(scraped.body).toContain("# TYPE mcp_server_operation_duration histogram")
      expect(scraped.body).toMatch(/^mcp_server_operation_duration_bucket\{[^}]*mcp_method_name="tools\/call"[^}]*network_transport="tcp"[^}]*le="0\.01"\} \d+$/m)
      expect(scraped.body).toContain("# TYPE mcp_server_sse_buffered_bytes gauge")
      expect(scraped.body).toMatch(/^mcp_server_sse_active_streams \d+$/m)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici))))

  it.live("refused sessions are counted by kind and reason", () =>
    isolated(Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(makeServer())
      const declining = Object.assign(
        (message: Parameters<typeof handle.handler>[0], context: Parameters<typeof handle.handler>[1]) => handle.handler(message, context),
        { admitSession: () => Effect.succeed({ retryAfterSeconds: 1, message: "not now" }) }
      )
      const context = yield* Layer.build(HttpServerTransport.layer(declining, { port: 0 }))
      const transport = yield* Effect.provideContext(HttpServerTransport.HttpServerTransport, context)
      const url = Option.getOrThrow(transport.url)
      const initialize = () =>
        post(url, {
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
        }).then(async (r) => (await r.text(), r.status))
      expect(yield* Effect.promise(initialize)).toBe(503)
      expect(yield* Effect.promise(initialize)).toBe(503)
      const [counted] = yield* find("mcp.server.admission.refused", { "mcp.admission.kind": "session", "mcp.admission.reason": "declined" })
      expect(counted?.state.count).toBe(2)
    }).pipe(Effect.scoped)))

  it.live("HTTP streams: the session streams' gauges read when exported, refused streams and replayed events counted", () =>
    isolated(Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(makeServer())
      const context = yield* Layer.build(
        HttpServerTransport.layer(handle.handler, { port: 0, metrics: true, maxStreams: 1, maxStreamsPerPrincipal: "none" })
      )
      const transport = yield* Effect.provideContext(HttpServerTransport.HttpServerTransport, context)
      const url = Option.getOrThrow(transport.url)
      const events = new URL("/mcp/events", url).href
      const first = yield* transport.broadcast("tick", { n: 1 })
      yield* transport.broadcast("tick", { n: 2 })
      const gauge = (id: string) => Effect.map(find(id, {}), ([s]) => s?.state.value as number)

      // A standalone GET stream takes the one slot.
      const sessionId = yield* Effect.promise(() => openSession(url))
      const standalone = yield* Effect.promise(() =>
        openSse(url, {
          method: "GET",
          headers: { accept: "text/event-stream", "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
        })
      )
      expect(standalone.response.status).toBe(200)
      expect(yield* gauge("mcp.server.sse.active_streams")).toBe(1)
      expect(yield* gauge("mcp.server.sse.buffered_bytes")).toBeGreaterThanOrEqual(0)

      // No slot left for a listener.
      const refused = yield* Effect.promise(() => fetch(events, { headers: { accept: "text/event-stream" } }))
      expect(refused.status).toBe(503)
      yield* Effect.promise(() => refused.text())
      const [counted] = yield* find("mcp.server.admission.refused", { "mcp.admission.kind": "stream", "mcp.admission.reason": "server-full" })
      expect(counted?.state.count).toBe(1)

      // The stream gone, a listener resuming after the first event gets the second again.
      standalone.controller.abort()
      const streamGone = () => Effect.runPromise(Effect.map(transport.stats, (stats) => stats.openStreams === 0))
      expect(yield* Effect.promise(() => eventually(streamGone))).toBe(true)
      expect(yield* gauge("mcp.server.sse.active_streams")).toBe(0)
      const resumed = yield* Effect.promise(() =>
        openSse(events, { method: "GET", headers: { accept: "text/event-stream", "last-event-id": first } })
      )
      expect(resumed.response.status).toBe(200)
      resumed.controller.abort()
      const [replayed] = yield* find("mcp.server.sse.replayed_events", {})
      expect(replayed?.state.count).toBe(1)
    }).pipe(Effect.scoped)))

  it.effect("over stdio: network.transport pipe on the server's operations and session", () =>
    isolated(Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(makeServer())
      const lines = [
        { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } },
        { jsonrpc: "2.0", method: "notifications/initialized" },
        { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: {} } }
      ].map((m) => new TextEncoder().encode(JSON.stringify(m) + "\n"))
      yield* StdioServerTransport.run(handle.handler, { redirectConsole: false }).pipe(
        Effect.provide(Stdio.layerTest({ stdin: Stream.fromIterable(lines), stdout: () => Sink.drain }))
      )
      const [echo] = yield* find("mcp.server.operation.duration", {
        ...tool("echo"),
        "mcp.protocol.version": "2025-06-18",
        "network.transport": "pipe"
      })
      expect(echo?.state.count).toBe(1)
      const [session] = yield* find("mcp.server.session.duration", { "network.transport": "pipe" })
      expect(session?.state.count).toBe(1)
    })))

  it.effect("one network transport: what the transport provides is on the server's span and its metrics alike", () =>
    isolated(Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      const handle = yield* McpServer.toHandler(makeServer())
      const context = { sessionId: undefined, requestId: undefined, notify: () => Effect.void, request: () => Effect.die("none") }
      yield* handle.handler({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: {} } }, context).pipe(
        Metrics.withNetworkTransport("tcp"),
        Effect.provideService(Tracer.Tracer, tracer)
      )
      const span = spans.find((s) => s.name === "tools/call echo")
      expect(span?.attributes.get("network.transport")).toBe("tcp")
      const [echo] = yield* series("mcp.server.operation.duration")
      expect(echo?.attributes["network.transport"]).toBe("tcp")
    })))

  it.effect("McpManager: its circuit breaker's state per server, and its reconnects", () =>
    isolated(Effect.gen(function*() {
      const manager = yield* McpManager.make({
        config: { mcpServers: { down: { command: "x" } } },
        transport: () => Effect.fail(new SpawnError({ command: "x", args: [], cause: "down" })),
        reconnectSchedule: Schedule.spaced("1 second"),
        circuitBreaker: { failureThreshold: 1, cooldown: "10 seconds" },
        slowStartThreshold: "1 millis"
      })
      const circuit = Effect.map(find("mcp.manager.circuit.state", { "mcp.manager.server": "down" }), ([s]) => s?.state.value)
      const reconnects = Effect.map(find("mcp.manager.reconnects", { "mcp.manager.server": "down" }), ([s]) => s?.state.count ?? 0)
      yield* settle
      expect(Option.getOrThrow(yield* Stream.runHead(manager.status("down")))).toMatchObject({ _tag: "CircuitOpen" })
      expect(yield* circuit).toBe(2)
      expect(yield* reconnects).toBe(0)
      // Cooled down: one trial (half-open) fails, and the circuit opens again.
      yield* TestClock.adjust("10 seconds")
      yield* settle
      expect(yield* reconnects).toBe(1)
      expect(yield* circuit).toBe(2)
    })))
})
