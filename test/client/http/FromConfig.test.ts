/**
 * Transport selection from the `mcpServers` configuration shape.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Scope, Stream, SubscriptionRef } from "effect"
import { fileURLToPath } from "node:url"
import { ClientTransport } from "../../../src/client/ClientTransport.ts"
import * as FromConfig from "../../../src/client/FromConfig.ts"
import * as Server from "./MisbehavingServer.ts"

const Env = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)
const ECHO_SERVER = fileURLToPath(new URL("../../fixtures/echo-stdio-server.ts", import.meta.url))
const isMethod = (method: string) => (r: Server.Received) => r.json?.method === method

/** A server that refuses POST with `status` and serves legacy HTTP+SSE on GET of the same URL. */
const legacyOnly = (status: number) =>
  Effect.gen(function*() {
    const server = yield* Server.make
    const feed = yield* server.pushable()
    yield* server.setHandler((r, s) =>
      Effect.gen(function*() {
        if (r.verb === "GET" && r.path === "/mcp") {
          yield* feed.push(Server.event({ event: "endpoint", data: "/legacy-post?session=9" }))
          return s.sse(feed.stream, { label: "legacy-stream" })
        }
        if (r.verb === "POST" && r.path === "/mcp") return Server.status(status, "no streamable http here")
        if (r.verb === "POST" && r.path === "/legacy-post") {
          if (r.json?.id !== undefined && r.json?.method !== undefined) {
            yield* feed.push(Server.event({ data: Server.result(r.json.id, { legacy: r.json.method }) }))
          }
          return Server.status(202)
        }
        return undefined
      })
    )
    return { server, feed }
  })

describe("fromConfig", () => {
  it.live("type omitted → stdio", () =>
    Effect.gen(function*() {
      const t = yield* FromConfig.make({ command: process.execPath, args: [ECHO_SERVER] })
      expect(t.kind).toBe("stdio")
      expect(yield* t.selected).toBe("stdio")
      expect(yield* t.request("echo", { hi: 1 })).toEqual({ hi: 1 })
    }).pipe(Effect.scoped, Effect.provide(Env)), 20_000)

  it.live("type http → Streamable HTTP, with the config's headers and timeout", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) => isMethod("hang")(r) ? s.withhold("hang") : Effect.succeed(undefined))
      const t = yield* FromConfig.make({ type: "http", url: server.url, headers: { "x-key": "k" }, timeout: 150 })
      expect(t.kind).toBe("streamable-http")
      expect(yield* t.selected).toBe("streamable-http")
      // The first exchange gets room of its own: only the hanging request tests the configured 150 ms.
      expect(yield* t.request("tools/list", undefined, { timeout: "10 seconds" })).toEqual({ method: "tools/list", params: null })
      expect(server.received("POST")[0]!.headers["x-key"]).toBe("k")
      const error = yield* Effect.flip(t.request("hang"))
      expect(error.message).toMatch(/^Request timeout after 150ms/)
    }).pipe(Effect.scoped, Effect.provide(Env)))

  it.live("type sse on a Streamable HTTP server keeps Streamable HTTP", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const t = yield* FromConfig.make({ type: "sse", url: server.url })
      yield* t.request("initialize", { protocolVersion: "2025-11-25" })
      expect(yield* t.selected).toBe("streamable-http")
      expect(yield* t.request("ping")).toEqual({ method: "ping", params: null })
      expect(server.received("GET")).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(Env)))

  for (const status of [400, 404, 405]) {
    it.live(`type sse falls back to legacy HTTP+SSE when initialize gets ${status}`, () =>
      Effect.gen(function*() {
        const { feed, server } = yield* legacyOnly(status)
        const scope = yield* Scope.make()
        const t = yield* FromConfig.make({ type: "sse", url: server.url }).pipe(Scope.provide(scope))
        const notes = yield* Stream.runCollect(Stream.take(t.notifications, 1)).pipe(
          Effect.forkChild({ startImmediately: true })
        )
        expect(yield* t.request("initialize", { protocolVersion: "2025-11-25" })).toEqual({ legacy: "initialize" })
        expect(yield* t.selected).toBe("sse")
        expect(t.kind).toBe("sse")
        expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Ready")
        yield* t.notify("notifications/initialized")
        expect(yield* t.request("tools/list")).toEqual({ legacy: "tools/list" })
        expect(server.received("POST").filter((r) => r.path === "/mcp").length).toBe(1)
        yield* feed.push(Server.event({ data: Server.notification("notifications/message", { level: "info" }) }))
        expect((yield* Fiber.join(notes))[0]!.method).toBe("notifications/message")
        yield* Scope.close(scope, Exit.void)
        expect((yield* t.awaitClosed).reason).toBe("transport scope closed")
        yield* server.waitFor((e): e is Server.Abandoned => e._tag === "Abandoned" && e.label === "legacy-stream")
        expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Closed")
      }).pipe(Effect.scoped, Effect.provide(Env)))
  }

  // Authorization, a proxy's authorization, a timeout and a rate limit are no answer about the transport.
  for (const status of [401, 403, 407, 408, 429]) {
    it.live(`type sse does not fall back on ${status} (not an answer about the transport)`, () =>
      Effect.gen(function*() {
        const { server } = yield* legacyOnly(status)
        const t = yield* FromConfig.make({ type: "sse", url: server.url })
        const error = yield* Effect.flip(t.request("initialize", {}))
        expect(error).toMatchObject({ _tag: "HttpError", status })
        expect(server.received("GET")).toEqual([])
      }).pipe(Effect.scoped, Effect.provide(Env)))
  }

  it.live("type sse: when the legacy attempt fails too, the first refusal is reported", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r) => Effect.succeed(Server.status(r.verb === "POST" ? 404 : 403, `no ${r.verb}`)))
      const t = yield* FromConfig.make({ type: "sse", url: server.url })
      const error = yield* Effect.flip(t.request("initialize", {}))
      expect(error).toMatchObject({ _tag: "HttpError", status: 404, body: "no POST" })
      expect(server.received("GET").length).toBe(1)
    }).pipe(Effect.scoped, Effect.provide(Env)))

  it.live("layer: provides ClientTransport", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const result = yield* Effect.gen(function*() {
        const t = yield* ClientTransport
        return yield* t.request("tools/list")
      }).pipe(Effect.provide(FromConfig.layer({ type: "http", url: server.url })))
      expect(result).toEqual({ method: "tools/list", params: null })
    }).pipe(Effect.scoped, Effect.provide(Env)))
})
