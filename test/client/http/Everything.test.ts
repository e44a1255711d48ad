/**
 * Interop with `@modelcontextprotocol/server-everything`, spawned in its
 * `streamableHttp` and `sse` modes, directly and through `fromConfig`.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope, Stream, SubscriptionRef } from "effect"
import type { ClientTransportShape } from "../../../src/client/ClientTransport.ts"
import * as FromConfig from "../../../src/client/FromConfig.ts"
import * as SseTransport from "../../../src/client/SseClientTransport.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as Everything from "./EverythingServer.ts"

const Env = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)

const handshake = (t: ClientTransportShape, version: string) =>
  Effect.gen(function*() {
    const init = (yield* t.request("initialize", {
      protocolVersion: version,
      capabilities: {},
      clientInfo: { name: "effect-mcp-transport-test", version: "0.0.0" }
    })) as { protocolVersion: string; serverInfo: { name: string } }
    yield* t.setProtocolVersion(init.protocolVersion)
    yield* t.notify("notifications/initialized")
    return init
  })

const echo = (t: ClientTransportShape, message: string) =>
  Effect.map(
    t.request("tools/call", { name: "echo", arguments: { message } }),
    (r) => (r as { content: ReadonlyArray<{ text: string }> }).content[0]!.text
  )

const toolNames = (t: ClientTransportShape) =>
  Effect.map(t.request("tools/list"), (r) => (r as { tools: ReadonlyArray<{ name: string }> }).tools.map((x) => x.name))

describe("server-everything", () => {
  it.live("streamableHttp mode: handshake, tools, GET listener, DELETE on close", () =>
    Effect.gen(function*() {
      const server = yield* Everything.start("streamableHttp")
      const scope = yield* Scope.make()
      const t = yield* StreamableHttp.make({ url: `${server.origin}/mcp`, listen: true }).pipe(Scope.provide(scope))
      const init = yield* handshake(t, "2025-11-25")
      expect(init.serverInfo.name).toContain("everything")
      const sessionId = yield* t.sessionId
      expect(sessionId).toBeDefined()
      expect(yield* toolNames(t)).toContain("echo")
      expect(yield* echo(t, "hello")).toBe("Echo: hello")
      yield* SubscriptionRef.changes(t.listenerState).pipe(Stream.filter((s) => s._tag === "Open"), Stream.runHead)
      yield* server.waitForLine((line) => line.includes("Received MCP GET request"))
      yield* Scope.close(scope, Exit.void)
      yield* server.waitForLine((line) => line.includes(`session termination request for session ${sessionId}`))
    }).pipe(Effect.scoped, Effect.provide(Env)), 40_000)

  it.live("sse mode: the legacy transport finds /message and talks 2024-11-05", () =>
    Effect.gen(function*() {
      const server = yield* Everything.start("sse")
      const scope = yield* Scope.make()
      const t = yield* SseTransport.make({ url: `${server.origin}/sse` }).pipe(Scope.provide(scope))
      expect(t.endpoint).toMatch(new RegExp(`^${server.origin}/message\\?sessionId=`))
      const init = yield* handshake(t, "2024-11-05")
      expect(init.protocolVersion).toBe("2024-11-05")
      expect(yield* echo(t, "legacy")).toBe("Echo: legacy")
      yield* Scope.close(scope, Exit.void)
      yield* server.waitForLine((line) => line.startsWith("Client Disconnected"))
    }).pipe(Effect.scoped, Effect.provide(Env)), 40_000)

  it.live("fromConfig type sse: a legacy server is found by the probe (POST initialize → 404 → GET)", () =>
    Effect.gen(function*() {
      const server = yield* Everything.start("sse")
      const t = yield* FromConfig.make({ type: "sse", url: `${server.origin}/sse` })
      expect(t.kind).toBe("streamable-http")
      const init = yield* handshake(t, "2025-11-25")
      expect(yield* t.selected).toBe("sse")
      expect(t.kind).toBe("sse")
      expect(init.serverInfo.name).toContain("everything")
      expect(yield* echo(t, "probed")).toBe("Echo: probed")
      expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Ready")
    }).pipe(Effect.scoped, Effect.provide(Env)), 40_000)

  it.live("fromConfig type sse: a Streamable HTTP server is kept", () =>
    Effect.gen(function*() {
      const server = yield* Everything.start("streamableHttp")
      const t = yield* FromConfig.make({ type: "sse", url: `${server.origin}/mcp` })
      yield* handshake(t, "2025-11-25")
      expect(yield* t.selected).toBe("streamable-http")
      expect(yield* echo(t, "modern")).toBe("Echo: modern")
    }).pipe(Effect.scoped, Effect.provide(Env)), 40_000)
})
