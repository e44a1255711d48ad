/**
 * Our client against our server over real loopback HTTP, in every mode the
 * server offers: McpClient over StreamableHttpClientTransport (or the legacy
 * SseClientTransport) against McpServer mounted on HttpServerTransport.
 *
 * Each mode runs the same scenario: handshake, a tool call with progress, a
 * server→client request answered by the client's handler, a call interrupted
 * by the client whose server handler sees the interruption, and the session
 * gone from the server once the client's scope closes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope, Stream, SubscriptionRef } from "effect"
import type { HttpClient } from "effect/http"
import type * as ClientTransport from "../../src/client/ClientTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as SseClientTransport from "../../src/client/SseClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import type * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import { eventually, type Exchange, recordingHttpClient, type Server, serve } from "./InteropServer.ts"

const textOf = (result: { readonly content: ReadonlyArray<{ readonly type: string }> }) =>
  result.content.map((c) => ("text" in c ? (c as { text: string }).text : `<${c.type}>`)).join("")

const clientOptions: McpClient.McpClientOptions = {
  clientInfo: { name: "interop-client", version: "1.0.0" },
  handlers: { listRoots: () => Effect.succeed([{ uri: "file:///interop", name: "interop" }]) }
}

/** Starts collecting a stream now (subscribed when this returns). */
const collect = <A, E>(stream: Stream.Stream<A, E>, n: number) =>
  Stream.take(stream, n).pipe(Stream.runCollect, Effect.forkChild({ startImmediately: true }))

const SIGNAL_BOUND = "10 seconds"

/** Progress 1..3, then the result; the server saw the client's progress token. */
const progressCall = (client: McpClient.McpClient["Service"]) =>
  Effect.gen(function*() {
    const events = yield* Stream.runCollect(client.callToolStream({ name: "progress", arguments: { steps: 3 } }))
    expect(events.map((e) => (e._tag === "Progress" ? e.progress.progress : textOf(e.result)))).toEqual([
      1,
      2,
      3,
      "done 3 (token present)"
    ])
  })

/** Interrupts a running `slow` call once the server handler runs; the handler sees the interruption. */
const cancelCall = (client: McpClient.McpClient["Service"], server: Server) =>
  Effect.gen(function*() {
    const fiber = yield* client.callTool({ name: "slow" }).pipe(Effect.forkChild({ startImmediately: true }))
    const started = yield* Deferred.await(server.probe.slowStarted).pipe(Effect.timeout(SIGNAL_BOUND))
    yield* Fiber.interrupt(fiber)
    const interrupted = yield* Deferred.await(server.probe.slowInterrupted).pipe(Effect.timeout(SIGNAL_BOUND))
    expect(interrupted).toEqual(started)
    expect(yield* client.connection.pendingCount).toBe(0)
    // The session carries on after the cancellation.
    yield* client.ping()
  })

/** Connects McpClient in its own scope (so a test can close it and look at the server afterwards). */
const connect = <E, R>(
  transport: Effect.Effect<ClientTransport.ClientTransportShape, E, R | Scope.Scope>,
  options: McpClient.McpClientOptions = clientOptions
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const client = yield* McpClient.connect(transport, options).pipe(Scope.provide(scope))
    return { client, close: Scope.close(scope, Exit.void) }
  })

const streamable = (
  serverOptions: HttpServerTransport.Options,
  body: (ctx: { server: Server; log: Array<Exchange> }) => Effect.Effect<void, unknown, Scope.Scope | HttpClient.HttpClient>
) =>
  Effect.gen(function*() {
    const server = yield* serve(serverOptions)
    const log: Array<Exchange> = []
    yield* body({ server, log }).pipe(Effect.provide(recordingHttpClient(log)))
  }).pipe(Effect.scoped)

const posts = (log: ReadonlyArray<Exchange>) => log.filter((e) => e.method === "POST" && e.status === 200)

describe("interop: McpClient ↔ HttpServerTransport + McpServer", { timeout: 60_000 }, () => {
  it.live("stateful, JSON answers: JSON unless the handler streams; full scenario; DELETE ends the session", () =>
    streamable({ responseMode: "auto" }, ({ log, server }) =>
      Effect.gen(function*() {
        const { client, close } = yield* connect(StreamableHttpClientTransport.make({ url: server.url }))
        expect(client.connection.kind).toBe("streamable-http")
        expect(client.serverInfo.name).toBe("interop-server")
        expect(client.protocolVersion).toBe("2025-11-25")
        const ids = yield* server.transport.sessionIds
        expect(ids.length).toBe(1)
        const [session] = yield* server.handle.sessions
        expect(session).toMatchObject({ sessionId: ids[0], phase: "ready", clientInfo: { name: "interop-client" } })
        expect(session!.clientCapabilities).toEqual({
          roots: { listChanged: true },
          extensions: { "io.modelcontextprotocol/tasks": {} }
        })

        // A call that sends nothing while it runs is answered with JSON.
        const before = log.length
        expect((yield* client.listAllTools()).map((t) => t.name)).toContain("slow")
        expect(posts(log.slice(before)).map((e) => e.contentType)).toEqual([expect.stringContaining("application/json")])

        // Progress turns that call's answer into a stream.
        const beforeProgress = log.length
        yield* progressCall(client)
        expect(posts(log.slice(beforeProgress)).map((e) => e.contentType)).toEqual([
          expect.stringContaining("text/event-stream")
        ])

        expect(textOf(yield* client.callTool({ name: "roots" }))).toBe("file:///interop")
        yield* cancelCall(client, server)

        yield* close
        expect(yield* server.transport.sessionIds).toEqual([])
        expect(log.filter((e) => e.method === "DELETE").map((e) => e.status)).toEqual([204])
        const stats = yield* eventually(server.transport.stats, (s) => s.openStreams === 0 && s.inFlight === 0)
        expect(stats).toMatchObject({ sessions: 0, openStreams: 0, inFlight: 0 })
      })))

  it.live("stateful, SSE answers: every request is answered with a stream; full scenario", () =>
    streamable({ responseMode: "sse" }, ({ log, server }) =>
      Effect.gen(function*() {
        const { client, close } = yield* connect(StreamableHttpClientTransport.make({ url: server.url }))
        expect(client.serverInfo.name).toBe("interop-server")
        expect((yield* server.transport.sessionIds).length).toBe(1)
        yield* client.ping()
        yield* progressCall(client)
        expect(textOf(yield* client.callTool({ name: "roots" }))).toBe("file:///interop")
        yield* cancelCall(client, server)
        // initialize included: nothing was answered with plain JSON.
        const answered = posts(log)
        expect(answered.length).toBeGreaterThanOrEqual(5)
        expect(answered.every((e) => e.contentType.includes("text/event-stream"))).toBe(true)

        yield* close
        expect(yield* server.transport.sessionIds).toEqual([])
        expect(log.filter((e) => e.method === "DELETE").map((e) => e.status)).toEqual([204])
      })))

  it.live("stateless: no session at all; progress; a disconnect interrupts the handler; server requests cannot be answered", () =>
    streamable({ mode: "stateless" }, ({ log, server }) =>
      Effect.gen(function*() {
        const { client, close } = yield* connect(StreamableHttpClientTransport.make({ url: server.url }))
        expect(client.serverInfo.name).toBe("interop-server")
        expect(yield* server.transport.sessionIds).toEqual([])
        yield* client.ping()
        yield* progressCall(client)

        // The client's answer (its own POST) would have no session to be routed to, so the server's
        // request fails at once instead of being sent and timing out.
        const raw = yield* client.callTool({ name: "roots-raw", arguments: { timeoutMs: 300 } })
        expect(textOf(raw)).toBe("failed ClientRequestUnavailable")

        yield* cancelCall(client, server)

        yield* close
        expect(log.some((e) => e.method === "DELETE" || e.method === "GET")).toBe(false)
        expect(yield* server.transport.sessionIds).toEqual([])
        const stats = yield* eventually(server.transport.stats, (s) => s.inFlight === 0 && s.ephemeralSessions === 0)
        expect(stats).toMatchObject({ sessions: 0, ephemeralSessions: 0, inFlight: 0 })
      })))

  it.live("standalone GET listener: server-initiated notifications arrive outside any request", () =>
    streamable({}, ({ log, server }) =>
      Effect.gen(function*() {
        let http: StreamableHttpClientTransport.StreamableHttpClientTransport | undefined
        const { client, close } = yield* connect(
          Effect.tap(StreamableHttpClientTransport.make({ url: server.url, listen: true }), (t) =>
            Effect.sync(() => void (http = t)))
        )
        const state = yield* eventually(SubscriptionRef.get(http!.listenerState), (s) => s._tag === "Open")
        expect(state._tag).toBe("Open")

        const listChanged = yield* collect(client.listChanged, 1)
        const logs = yield* collect(client.logging, 1)
        // Through the McpServer handle (every ready session) and through the transport (one session).
        yield* server.handle.notifyAll("notifications/tools/list_changed")
        const [id] = yield* server.transport.sessionIds
        const ctx = yield* server.transport.sessionContext(id!)
        expect(ctx._tag).toBe("Some")
        if (ctx._tag === "Some") yield* ctx.value.notify("notifications/message", { level: "info", data: "from the server" })
        expect((yield* Fiber.join(listChanged).pipe(Effect.timeout(SIGNAL_BOUND))).map((n) => n._tag)).toEqual([
          "ToolListChanged"
        ])
        expect((yield* Fiber.join(logs).pipe(Effect.timeout(SIGNAL_BOUND))).map((n) => n.data)).toEqual(["from the server"])
        expect(log.some((e) => e.method === "GET" && e.contentType.includes("text/event-stream"))).toBe(true)

        yield* progressCall(client)
        expect(textOf(yield* client.callTool({ name: "roots" }))).toBe("file:///interop")
        yield* cancelCall(client, server)

        yield* close
        expect(yield* server.transport.sessionIds).toEqual([])
        const stats = yield* eventually(server.transport.stats, (s) => s.openStreams === 0)
        expect(stats.openStreams).toBe(0)
      })))

  it.live("resumability: the handler closes its SSE connection mid-call; the client resumes and gets the rest", () =>
    streamable({ responseMode: "sse" }, ({ log, server }) =>
      Effect.gen(function*() {
        const { client, close } = yield* connect(StreamableHttpClientTransport.make({ url: server.url }))
        const events = yield* Stream.runCollect(client.callToolStream({ name: "reconnect" }))
        expect(events.map((e) => (e._tag === "Progress" ? e.progress.message : textOf(e.result)))).toEqual([
          "before the close",
          "while the client was away",
          "reconnected"
        ])
        // The rest came on a GET that named the last event seen.
        const resumed = log.filter((e) => e.method === "GET" && e.lastEventId !== undefined)
        expect(resumed.length).toBeGreaterThanOrEqual(1)
        expect(resumed[0]).toMatchObject({ status: 200, contentType: expect.stringContaining("text/event-stream") })
        expect(yield* server.eventStore.size).toBeGreaterThan(0)

        yield* progressCall(client)
        expect(textOf(yield* client.callTool({ name: "roots" }))).toBe("file:///interop")
        yield* cancelCall(client, server)

        yield* close
        expect(yield* server.transport.sessionIds).toEqual([])
        // The session's stored events went with it.
        expect(yield* eventually(server.eventStore.size, (n) => n === 0)).toBe(0)
      })))

  it.live("legacy HTTP+SSE (2024-11-05): SseClientTransport against /sse and /messages", () =>
    streamable({}, ({ log, server }) =>
      Effect.gen(function*() {
        const { client, close } = yield* connect(
          SseClientTransport.make({ url: `${server.base}/sse` }),
          { ...clientOptions, protocolVersion: "2024-11-05" }
        )
        expect(client.connection.kind).toBe("sse")
        expect(client.protocolVersion).toBe("2024-11-05")
        expect((yield* server.transport.stats).legacySessions).toBe(1)
        // Legacy sessions are not Streamable HTTP sessions.
        expect(yield* server.transport.sessionIds).toEqual([])
        const [session] = yield* server.handle.sessions
        expect(session).toMatchObject({ phase: "ready", protocolVersion: "2024-11-05" })

        yield* progressCall(client)
        expect(textOf(yield* client.callTool({ name: "roots" }))).toBe("file:///interop")
        yield* cancelCall(client, server)
        // Every POST went to the endpoint the stream named and was accepted with 202.
        const messagePosts = log.filter((e) => e.method === "POST")
        expect(messagePosts.length).toBeGreaterThan(0)
        expect(messagePosts.every((e) => e.url.includes("/messages?sessionId=") && e.status === 202)).toBe(true)

        yield* close
        // The session ends when its SSE connection does; the server notices the disconnect asynchronously.
        const stats = yield* eventually(server.transport.stats, (s) => s.legacySessions === 0 && s.openStreams === 0)
        expect(stats).toMatchObject({ legacySessions: 0, openStreams: 0 })
      })))
})
