/**
 * Interop with the official SDK's server transports (Streamable HTTP in its
 * stateful SSE, stateful JSON, stateless and resumable set-ups; legacy
 * SSEServerTransport). The handshake is sent by hand through the transport:
 * the protocol layer lives elsewhere.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { type Duration, Effect, Exit, Fiber, Layer, Schedule, Scope, Stream, SubscriptionRef } from "effect"
import { FetchHttpClient, type HttpClient } from "effect/http"
import type { ClientTransportShape } from "../../../src/client/ClientTransport.ts"
import type { RequestError } from "../../../src/McpError.ts"
import * as SseTransport from "../../../src/client/SseClientTransport.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as Sdk from "./SdkServers.ts"

const VERSION = "2025-11-25"

const handshake = (t: ClientTransportShape, version = VERSION) =>
  Effect.gen(function*() {
    const init = yield* t.request("initialize", {
      protocolVersion: version,
      capabilities: {},
      clientInfo: { name: "effect-mcp-transport-test", version: "0.0.0" }
    }) as Effect.Effect<{ protocolVersion: string; serverInfo: { name: string } }, unknown>
    yield* t.setProtocolVersion(init.protocolVersion)
    yield* t.notify("notifications/initialized")
    return init
  })

const callTool = (t: ClientTransportShape, name: string, args: unknown = {}, timeout?: Duration.Input) =>
  t.request("tools/call", { name, arguments: args }, { timeout }) as Effect.Effect<
    { content: ReadonlyArray<{ text: string }> },
    RequestError
  >

const layers = [
  ["NodeHttpClient.layerUndici", NodeHttpClient.layerUndici],
  ["FetchHttpClient.layer", FetchHttpClient.layer]
] as const satisfies ReadonlyArray<readonly [string, Layer.Layer<HttpClient.HttpClient>]>

describe.each(layers)("SDK StreamableHTTPServerTransport via %s", (_name, clientLayer) => {
  const live = (name: string, body: () => Effect.Effect<void, unknown, Scope.Scope | HttpClient.HttpClient>) =>
    it.live(name, () => Effect.scoped(body()).pipe(Effect.provide(clientLayer)), 20_000)

  live("stateful, SSE answers: handshake, tools, interleaved notification and ping, cancellation, DELETE", () =>
    Effect.gen(function*() {
      const server = yield* Sdk.streamable("stateful-sse")
      const scope = yield* Scope.make()
      const t = yield* StreamableHttp.make({ url: server.url }).pipe(Scope.provide(scope))
      const init = yield* handshake(t)
      expect(init.serverInfo.name).toBe("sdk-interop")
      const sessionId = yield* t.sessionId
      expect(sessionId).toMatch(/^[0-9a-f-]{36}$/)
      yield* server.events.waitFor((e) => e === `session:${sessionId}`)

      const tools = (yield* t.request("tools/list")) as { tools: ReadonlyArray<{ name: string }> }
      expect(tools.tools.map((tool) => tool.name)).toContain("echo")
      expect((yield* callTool(t, "echo", { a: 1 })).content[0]!.text).toBe("{\"a\":1}")

      const notes = yield* Stream.runCollect(Stream.take(t.notifications, 1)).pipe(Effect.forkChild({ startImmediately: true }))
      expect((yield* callTool(t, "chatty")).content[0]!.text).toBe("pinged back")
      expect((yield* Fiber.join(notes))[0]).toMatchObject({
        method: "notifications/message",
        params: { level: "info", data: "working" }
      })

      const timedOut = yield* Effect.flip(callTool(t, "slow", {}, "200 millis"))
      expect(timedOut._tag).toBe("RequestTimeout")
      yield* server.events.waitFor((e) => e.startsWith("cancelled:"))

      yield* Scope.close(scope, Exit.void)
      yield* server.events.waitFor((e) => e === `closed:${sessionId}`)
      expect(server.events.all()).toContain(`delete:${sessionId}`)
    }))

  live("stateful, JSON answers: requests work and a forgotten session is SessionExpired", () =>
    Effect.gen(function*() {
      const server = yield* Sdk.streamable("stateful-json")
      const t = yield* StreamableHttp.make({ url: server.url })
      yield* handshake(t)
      expect((yield* callTool(t, "echo", { json: true })).content[0]!.text).toBe("{\"json\":true}")
      const sessionId = (yield* t.sessionId)!
      server.forget(sessionId)
      const error = yield* Effect.flip(t.request("tools/list"))
      expect(error).toMatchObject({ _tag: "SessionExpired", sessionId })
      expect((yield* SubscriptionRef.get(t.state))._tag).toBe("SessionExpired")
      // The manager's answer: initialize again on the same transport.
      yield* handshake(t)
      expect(yield* t.sessionId).not.toBe(sessionId)
      expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Ready")
    }))

  live("stateless: no session id, no DELETE", () =>
    Effect.gen(function*() {
      const server = yield* Sdk.streamable("stateless")
      yield* Effect.scoped(Effect.gen(function*() {
        const t = yield* StreamableHttp.make({ url: server.url })
        yield* handshake(t)
        expect(yield* t.sessionId).toBeUndefined()
        expect((yield* callTool(t, "echo", { s: "x" })).content[0]!.text).toBe("{\"s\":\"x\"}")
      }))
      expect(server.events.all().some((e) => e.startsWith("DELETE"))).toBe(false)
    }))

  live("resumable: a tool that closes its own stream is completed through GET + Last-Event-ID", () =>
    Effect.gen(function*() {
      const server = yield* Sdk.streamable("resumable")
      const t = yield* StreamableHttp.make({ url: server.url })
      yield* handshake(t)
      const notes = yield* Stream.runCollect(Stream.take(t.notifications, 2)).pipe(Effect.forkChild({ startImmediately: true }))
      expect((yield* callTool(t, "drop")).content[0]!.text).toBe("resumed")
      expect((yield* Fiber.join(notes)).map((n) => (n.params as { data: string }).data)).toEqual([
        "before the drop",
        "after the drop"
      ])
      expect(server.events.all().filter((e) => e.startsWith("GET")).length).toBeGreaterThanOrEqual(1)
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("the standalone GET stream carries notifications that belong to no request", () =>
    Effect.gen(function*() {
      const server = yield* Sdk.streamable("stateful-sse")
      const t = yield* StreamableHttp.make({ url: server.url, listen: true, reconnectSchedule: Schedule.spaced("50 millis") })
      yield* handshake(t)
      yield* SubscriptionRef.changes(t.listenerState).pipe(Stream.filter((s) => s._tag === "Open"), Stream.runHead)
      const notes = yield* Stream.runCollect(Stream.take(t.notifications, 1)).pipe(Effect.forkChild({ startImmediately: true }))
      expect((yield* callTool(t, "announce")).content[0]!.text).toBe("announced")
      expect((yield* Fiber.join(notes))[0]).toMatchObject({ params: { data: "unrelated news" } })
    }))
})

describe("SDK SSEServerTransport (legacy 2024-11-05)", () => {
  it.live("handshake, tools, notification + ping over the stream, and the stream closed on scope close", () =>
    Effect.gen(function*() {
      const server = yield* Sdk.legacy
      const scope = yield* Scope.make()
      const t = yield* SseTransport.make({ url: server.url }).pipe(Scope.provide(scope))
      expect(t.endpoint).toMatch(new RegExp(`^${server.origin}/messages\\?sessionId=`))
      const init = yield* handshake(t, "2024-11-05")
      expect(init.protocolVersion).toBe("2024-11-05")
      expect((yield* callTool(t, "echo", { legacy: 1 })).content[0]!.text).toBe("{\"legacy\":1}")
      const notes = yield* Stream.runCollect(Stream.take(t.notifications, 1)).pipe(Effect.forkChild({ startImmediately: true }))
      expect((yield* callTool(t, "chatty")).content[0]!.text).toBe("pinged back")
      expect((yield* Fiber.join(notes))[0]).toMatchObject({ params: { data: "working" } })
      const timedOut = yield* Effect.flip(callTool(t, "slow", {}, "200 millis"))
      expect(timedOut._tag).toBe("RequestTimeout")
      yield* server.events.waitFor((e) => e.startsWith("cancelled:"))
      yield* Scope.close(scope, Exit.void)
      yield* server.events.waitFor((e) => e.startsWith("sse-closed:"))
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)), 20_000)
})
