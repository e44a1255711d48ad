/**
 * The stateless mode of the Streamable HTTP client (2026-07-28 on): routing
 * headers on every POST, no session, no GET stream, no resumption, and
 * cancellation by closing the request's stream, against a loopback server
 * that records what it receives and offers a session id it must not get back.
 */
import { describe, expect } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Schedule, Scope, Stream, SubscriptionRef } from "effect"
import { HttpServerResponse } from "effect/http"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as Server from "./MisbehavingServer.ts"
import { httpClients, liveWith } from "./httpClients.ts"

const MODERN = "2026-07-28"
const fastRetry = Schedule.spaced("20 millis").pipe(Schedule.upTo({ times: 3 }))

const isMethod = (method: string) => (r: Server.Received) => r.json?.method === method
const abandoned = (label: string) => (e: Server.LogEntry): e is Server.Abandoned =>
  e._tag === "Abandoned" && e.label === label

/** The default answers, each with a session id attached that a stateless client must ignore. */
const offeringSessions: Server.Handler = (r) =>
  Effect.succeed(
    r.verb === "POST" && r.json?.id !== undefined && r.json?.method !== "initialize"
      ? Server.json(Server.result(r.json.id, { method: r.json.method, params: r.json.params ?? null }), {
        headers: { "mcp-session-id": "offered-session" }
      })
      : undefined
  )

/** A stateless transport, made stateless either up front or by `setProtocolVersion`. */
const statelessVia = {
  "Options.protocolVersion": (server: Server.MisbehavingServer, options: Partial<StreamableHttp.Options> = {}) =>
    StreamableHttp.make({ url: server.url, reconnectSchedule: fastRetry, protocolVersion: MODERN, ...options }),
  "setProtocolVersion": (server: Server.MisbehavingServer, options: Partial<StreamableHttp.Options> = {}) =>
    Effect.tap(
      StreamableHttp.make({ url: server.url, reconnectSchedule: fastRetry, ...options }),
      (t) => t.setProtocolVersion(MODERN)
    )
} as const

const sentinel = (text: string) => `=?base64?${Buffer.from(text, "utf8").toString("base64")}?=`

/** A last request on a fresh transport: anything sent before it by an earlier transport has arrived. */
const marker = (server: Server.MisbehavingServer) =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<void>()
    yield* server.setHandler((r) =>
      isMethod("marker")(r) ? Effect.as(Deferred.succeed(done, undefined), undefined) : Effect.succeed(undefined)
    )
    yield* Effect.scoped(Effect.flatMap(statelessVia["Options.protocolVersion"](server), (t) => t.request("marker")))
    yield* Deferred.await(done)
  })

describe.each(httpClients)("Streamable HTTP client, stateless mode, via %s", (_name, clientLayer) => {
  const live = liveWith(clientLayer, 15_000)

  for (const [how, connect] of Object.entries(statelessVia)) {
    live(`(${how}) every POST carries the version, Mcp-Method and Mcp-Name, and no session id`, () =>
      Effect.gen(function*() {
        const server = yield* Server.make
        yield* server.setHandler((r, s) =>
          isMethod("prompts/get")(r)
            ? Effect.succeed(s.sse(Stream.make(
              Server.event({ data: Server.notification("notifications/message", { level: "info", data: "on the way" }) }),
              Server.event({ data: Server.result(r.json.id, { via: "sse" }) })
            ), { headers: { "mcp-session-id": "offered-session" } }))
            : offeringSessions(r, s)
        )
        const t = yield* connect(server, { headers: { "X-Static": "yes" }, sessionId: "stale-session" })
        const first = yield* t.request("tools/list", { cursor: "c" })
        expect(first).toEqual({ method: "tools/list", params: { cursor: "c" } })
        yield* t.request("tools/call", { name: "échø", arguments: { region: "eu-west", n: 3 } }, {
          headers: { "Mcp-Param-Region": "eu-west", "mcp-param-n": "3" }
        })
        yield* t.request("tools/call", { name: "plain_tool", arguments: {} })
        yield* t.request("resources/read", { uri: "file:///notes/a.txt" })
        expect(yield* t.request("prompts/get", { name: "greet" })).toEqual({ via: "sse" })
        yield* t.request("tools/list")
        yield* t.notify("notifications/roots/list_changed")
        expect(yield* t.sessionId).toBeUndefined()
        expect(yield* t.protocolVersion).toBe(MODERN)
        expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Ready")

        const posts = server.received("POST")
        expect(posts.map((p) => p.json.method)).toEqual([
          "tools/list",
          "tools/call",
          "tools/call",
          "resources/read",
          "prompts/get",
          "tools/list",
          "notifications/roots/list_changed"
        ])
        for (const post of posts) {
          expect(post.headers["mcp-protocol-version"]).toBe(MODERN)
          expect(post.headers["mcp-method"]).toBe(post.json.method)
          expect(post.headers["accept"]).toBe("application/json, text/event-stream")
          expect(post.headers["content-type"]).toBe("application/json")
          expect(post.headers["x-static"]).toBe("yes")
          expect(post.headers["mcp-session-id"]).toBeUndefined()
        }
        const [list, call, plainCall, read, prompt, listAgain, notification] = posts
        expect(list!.headers["mcp-name"]).toBeUndefined()
        expect(listAgain!.headers["mcp-name"]).toBeUndefined()
        expect(call!.headers["mcp-name"]).toBe(sentinel("échø"))
        expect(call!.headers["mcp-param-region"]).toBe("eu-west")
        expect(call!.headers["mcp-param-n"]).toBe("3")
        expect(plainCall!.headers["mcp-name"]).toBe("plain_tool")
        expect(Object.keys(plainCall!.headers).some((h) => h.startsWith("mcp-param-"))).toBe(false)
        expect(read!.headers["mcp-name"]).toBe("file:///notes/a.txt")
        expect(prompt!.headers["mcp-name"]).toBe("greet")
        expect(notification!.headers["mcp-name"]).toBeUndefined()
        expect(yield* t.pendingCount).toBe(0)
      }))
  }

  live("the routing headers win over extra headers of the same name", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const t = yield* statelessVia["Options.protocolVersion"](server)
      yield* t.request("tools/call", { name: "real" }, { headers: { "Mcp-Name": "forged", "MCP-Method": "ping" } })
      const [post] = server.received("POST")
      expect(post!.headers["mcp-name"]).toBe("real")
      expect(post!.headers["mcp-method"]).toBe("tools/call")
    }))

  live("no GET stream: listen does nothing and the listener stays Idle; no DELETE when the scope closes", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler(offeringSessions)
      yield* Effect.scoped(Effect.gen(function*() {
        const t = yield* statelessVia["setProtocolVersion"](server, { listen: true, sessionId: "stale-session" })
        yield* t.listen
        yield* t.request("tools/list")
        yield* t.notify("notifications/initialized")
        yield* t.request("ping")
        expect(yield* SubscriptionRef.get(t.listenerState)).toEqual(StreamableHttp.ListenerState.Idle())
      }))
      yield* marker(server)
      expect(server.received("GET")).toEqual([])
      expect(server.received("DELETE")).toEqual([])
    }))

  live("entering the stateless mode stops a running GET stream and forgets the session", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) => Effect.succeed(r.verb === "GET" ? s.sse(Stream.never, { label: "listener" }) : undefined))
      yield* Effect.scoped(Effect.gen(function*() {
        const t = yield* StreamableHttp.make({ url: server.url })
        yield* t.request("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "0" } })
        yield* t.setProtocolVersion("2025-11-25")
        yield* t.listen
        yield* server.waitForRequest((r) => r.verb === "GET")
        yield* t.setProtocolVersion(MODERN)
        yield* server.waitFor(abandoned("listener"))
        expect(yield* SubscriptionRef.get(t.listenerState)).toEqual(StreamableHttp.ListenerState.Idle())
        expect(yield* t.sessionId).toBeUndefined()
        yield* t.request("tools/list")
      }))
      yield* marker(server)
      const list = server.received("POST").find(isMethod("tools/list"))!
      expect(list.headers["mcp-session-id"]).toBeUndefined()
      expect(server.received("GET").length).toBe(1)
      expect(server.received("DELETE")).toEqual([])
    }))

  live("a 404 is an HttpError, not an expired session; JSON-RPC error bodies stay readable", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const unsupported = {
        jsonrpc: "2.0",
        id: null,
        error: {
          code: -32022,
          message: "Unsupported protocol version",
          data: { supported: ["2025-11-25", "2025-06-18"], requested: MODERN, note: "x".repeat(300) }
        }
      }
      yield* server.setHandler((r) =>
        Effect.succeed(
          isMethod("nope/unknown")(r)
            ? Server.json(Server.rpcError(r.json.id, -32601, "Method not found"), { status: 404 })
            : isMethod("tools/call")(r)
            ? Server.json(unsupported, { status: 400 })
            : undefined
        )
      )
      // A session id handed over from before is not sent, so a 404 cannot mean that session expired.
      const t = yield* statelessVia["Options.protocolVersion"](server, { sessionId: "stale-session" })
      const unknown = yield* Effect.flip(t.request("nope/unknown"))
      expect(unknown).toMatchObject({ _tag: "HttpError", status: 404, method: "nope/unknown" })
      expect(JSON.parse((unknown as { body: string }).body).error.code).toBe(-32601)
      const rejected = yield* Effect.flip(t.request("tools/call", { name: "x" }))
      expect(rejected).toMatchObject({ _tag: "HttpError", status: 400 })
      expect(JSON.parse((rejected as { body: string }).body)).toEqual(unsupported)
      expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Connecting")
      expect(yield* t.request("ping")).toEqual({ method: "ping", params: null })
    }))

  live("interrupting a request closes its stream and POSTs no notifications/cancelled", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) =>
        isMethod("json-hang")(r)
          ? s.withhold("json-hang")
          : Effect.succeed(
            isMethod("sse-hang")(r)
              ? s.sse(Server.thenSilence([
                Server.event({ data: Server.notification("notifications/progress", { progressToken: 1, progress: 1 }) })
              ]), { label: "sse-hang" })
              : undefined
          )
      )
      const t = yield* statelessVia["Options.protocolVersion"](server)
      const headers = yield* Effect.forkChild(t.request("json-hang"))
      yield* server.waitForRequest(isMethod("json-hang"))
      yield* Fiber.interrupt(headers)
      yield* server.waitFor(abandoned("json-hang"))

      const events = yield* Effect.forkChild(t.request("sse-hang", {}, { timeout: "1 minute" }))
      yield* server.waitForRequest(isMethod("sse-hang"))
      yield* Fiber.interrupt(events)
      yield* server.waitFor(abandoned("sse-hang"))
      expect(yield* t.pendingCount).toBe(0)

      yield* t.request("ping")
      yield* marker(server)
      expect(server.received("POST").some(isMethod("notifications/cancelled"))).toBe(false)
    }))

  live("a timeout aborts the exchange and POSTs no notifications/cancelled", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) => isMethod("hang")(r) ? s.withhold("hang") : Effect.succeed(undefined))
      const t = yield* statelessVia["setProtocolVersion"](server)
      const error = yield* Effect.flip(t.request("hang", {}, { timeout: "150 millis" }))
      expect(error._tag).toBe("RequestTimeout")
      yield* server.waitFor(abandoned("hang"))
      yield* marker(server)
      expect(server.received("POST").some(isMethod("notifications/cancelled"))).toBe(false)
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("an SSE answer that ends or breaks before the response is NoResponse at once, without resuming", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const progress = Server.notification("notifications/progress", { progressToken: 1, progress: 1 })
      yield* server.setHandler((r, s) =>
        Effect.succeed(
          isMethod("ends")(r)
            ? s.sse(Stream.make(Server.event({ id: "e-1", retry: 10, data: progress })))
            : isMethod("cut")(r)
            ? s.sse(Server.cutAfter([Server.event({ id: "e-2", retry: 10, data: progress })]))
            : isMethod("whole")(r)
            ? HttpServerResponse.text(Server.event({ id: "e-3", retry: 10, data: progress }), { contentType: "text/event-stream" })
            : undefined
        )
      )
      // A schedule that would resume for a long time: only no resumption at all ends these promptly.
      const t = yield* statelessVia["Options.protocolVersion"](server, { reconnectSchedule: Schedule.spaced("1 second") })
      const ends = yield* Effect.flip(t.request("ends", {}, { timeout: "1 minute" }))
      expect(ends).toMatchObject({ _tag: "NoResponse", method: "ends" })
      const cut = yield* Effect.flip(t.request("cut", {}, { timeout: "1 minute" }))
      expect(cut).toMatchObject({ _tag: "NoResponse", method: "cut" })
      // A body with a declared length is read whole: the same rule.
      const whole = yield* Effect.flip(t.request("whole", {}, { timeout: "1 minute" }))
      expect(whole).toMatchObject({ _tag: "NoResponse", method: "whole" })
      expect(server.received("GET")).toEqual([])
      expect(yield* t.pendingCount).toBe(0)
      expect(yield* t.request("still-fine")).toEqual({ method: "still-fine", params: null })
      yield* marker(server)
      expect(server.received().every((r) => r.headers["last-event-id"] === undefined)).toBe(true)
      expect(server.received("GET")).toEqual([])
    }))

  live("switching back to a handshake revision restores sessions: initialize adopts one, DELETE at close", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler(offeringSessions)
      const scope = yield* Scope.make()
      const t = yield* statelessVia["Options.protocolVersion"](server).pipe(Scope.provide(scope))
      yield* t.request("tools/list")
      expect(yield* t.sessionId).toBeUndefined()
      // The fallback to the handshake: the version first, then initialize.
      yield* t.setProtocolVersion("2025-11-25")
      yield* t.request("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "0" } })
      expect(yield* t.sessionId).toBe(Server.SESSION_ID)
      yield* t.notify("notifications/initialized")
      yield* t.request("tools/list")
      yield* Scope.close(scope, Exit.void)

      const [modernList, init, initialized, legacyList] = server.received("POST")
      expect(modernList!.headers["mcp-method"]).toBe("tools/list")
      expect(init!.headers["mcp-method"]).toBeUndefined()
      expect(init!.headers["mcp-protocol-version"]).toBeUndefined()
      expect(init!.headers["mcp-session-id"]).toBeUndefined()
      for (const later of [initialized!, legacyList!]) {
        expect(later.headers["mcp-session-id"]).toBe(Server.SESSION_ID)
        expect(later.headers["mcp-protocol-version"]).toBe("2025-11-25")
        expect(later.headers["mcp-method"]).toBeUndefined()
      }
      const del = yield* server.waitForRequest((r) => r.verb === "DELETE")
      expect(del.headers["mcp-session-id"]).toBe(Server.SESSION_ID)
    }))
})
