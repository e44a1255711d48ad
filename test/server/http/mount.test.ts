/**
 * `routes`: the transport mounted in an existing effect/http application,
 * next to the application's own routes, with a handler that needs a service
 * of the application.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { expect, layer } from "@effect/vitest"
import { createServer } from "node:http"
import { Context, Effect, Layer, Option } from "effect"
import { HttpMiddleware, HttpRouter, HttpServerResponse } from "effect/http"
import { IpNetwork } from "effect/net"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import * as EventStore from "../../../src/server/EventStore.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import { appBaseUrl as baseUrl, initializeBody, post } from "./helpers.ts"

class Greeting extends Context.Service<Greeting, { readonly text: string }>()("test/Greeting") {}

const handler: Handler<Greeting> = (message) =>
  Effect.gen(function*() {
    if (!("id" in message)) return null
    if (message.method === "initialize") {
      return JsonRpc.success(message.id, { protocolVersion: "2025-11-25", capabilities: {}, serverInfo: { name: "mounted", version: "1" } })
    }
    const greeting = yield* Greeting
    return JsonRpc.success(message.id, { greeting: greeting.text })
  })

const store = EventStore.makeMemoryUnsafe({ maxEvents: 50 })

const App = Layer.mergeAll(
  HttpRouter.add("GET", "/app/hello", HttpServerResponse.text("hello from the app")),
  HttpServerTransport.routes(handler, { path: "/rpc", eventsAndHealth: false, legacySse: false })
).pipe(Layer.provide(Layer.succeed(Greeting)({ text: "hi" })))

/** A served app, given the event store and a loopback listener. */
const onLoopback = <A, E, R>(served: Layer.Layer<A, E, R>) =>
  served.pipe(
    Layer.provide(Layer.succeed(EventStore.EventStore)(store)),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 }))
  )

const ServerLive = onLoopback(HttpRouter.serve(App, { disableLogger: true, disableListenLog: true }))

layer(ServerLive)("HttpServerTransport.routes in an existing app", (it) => {
  it.effect("the app's routes and the transport's work side by side; the handler sees the app's services", () =>
    Effect.gen(function*() {
      const base = yield* baseUrl
      const results = yield* Effect.promise(async () => {
        const hello = await (await fetch(`${base}/app/hello`)).text()
        const init = await post(`${base}/rpc`, initializeBody())
        const sessionId = init.headers.get("mcp-session-id")!
        await init.text()
        const call = await (await post(`${base}/rpc`, { jsonrpc: "2.0", id: 2, method: "anything" }, { "mcp-session-id": sessionId })).json()
        // No catch-all here: the app's router answers unknown paths itself (an empty 404).
        const unknown = await fetch(`${base}/nope`)
        const withoutEvents = await fetch(`${base}/mcp/health`)
        return { hello, call, unknown: [unknown.status, await unknown.text()], withoutEvents: withoutEvents.status }
      })
      expect(results.hello).toBe("hello from the app")
      expect(results.call).toEqual({ jsonrpc: "2.0", id: 2, result: { greeting: "hi" } })
      expect(results.unknown).toEqual([404, ""])
      expect(results.withoutEvents).toBe(404)
    }))

  it.effect("the EventStore service in context is the one used for replay", () =>
    Effect.gen(function*() {
      const base = yield* baseUrl
      const before = yield* store.size
      const sseAnswer = yield* Effect.promise(async () => {
        const init = await post(`${base}/rpc`, initializeBody())
        const sessionId = init.headers.get("mcp-session-id")!
        await init.text()
        const res = await fetch(`${base}/rpc`, {
          headers: { accept: "text/event-stream", "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
        })
        const reader = res.body!.getReader()
        const first = new TextDecoder().decode((await reader.read()).value)
        await reader.cancel()
        return first
      })
      expect(sseAnswer).toMatch(/^id: /)
      expect(yield* store.size).toBeGreaterThan(before)
      expect(Option.isNone(yield* store.replayAfter("unknown_1"))).toBe(true)
    }))
})

// Behind a proxy the application trusts, its middleware puts the host the client asked for in `Host`.
const ProxiedLive = onLoopback(HttpRouter.serve(App, {
  disableLogger: true,
  disableListenLog: true,
  middleware: HttpMiddleware.xForwardedHeaders({ trustedProxies: [IpNetwork.fromStringUnsafe("127.0.0.0/8")] })
}))

layer(ProxiedLive)("HttpServerTransport.routes behind the application's middleware", (it) => {
  it.effect("the Host check judges the headers as the application's middleware left them", () =>
    Effect.gen(function*() {
      const base = yield* baseUrl
      const statuses = yield* Effect.promise(async () => {
        const forwarded = (host: string) => ({ "x-forwarded-for": "203.0.113.5", "x-forwarded-host": host })
        const elsewhere = await post(`${base}/rpc`, initializeBody(), forwarded("evil.example.com"))
        const here = await post(`${base}/rpc`, initializeBody(), forwarded("localhost"))
        await here.text()
        return [elsewhere.status, here.status]
      })
      expect(statuses).toEqual([403, 200])
    }))
})
