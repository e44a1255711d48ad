/**
 * The Streamable HTTP client transport against a loopback server that
 * misbehaves on demand. Every test runs with two HttpClient layers.
 */
import { describe, expect } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Schedule, Scope, Stream, SubscriptionRef } from "effect"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as Server from "./MisbehavingServer.ts"
import { httpClients, liveWith } from "./httpClients.ts"

const fastRetry = Schedule.spaced("20 millis").pipe(Schedule.upTo({ times: 3 }))

const connect = (server: Server.MisbehavingServer, options: Partial<StreamableHttp.Options> = {}) =>
  StreamableHttp.make({ url: server.url, reconnectSchedule: fastRetry, ...options })

const initialize = (t: StreamableHttp.StreamableHttpClientTransport) =>
  t.request("initialize", {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "test", version: "0" }
  })

const isMethod = (method: string) => (r: Server.Received) => r.json?.method === method

describe.each(httpClients)("Streamable HTTP client via %s", (_name, clientLayer) => {
  const live = liveWith(clientLayer, 15_000)

  live("POSTs with the right headers, keeps the session and sends the negotiated version", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const t = yield* connect(server, { headers: { "X-Static": "yes" } })
      expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Connecting")
      const init = yield* initialize(t)
      expect(init).toMatchObject({ protocolVersion: "2025-11-25" })
      expect(yield* t.sessionId).toBe(Server.SESSION_ID)
      expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Ready")
      yield* t.setProtocolVersion("2025-11-25")
      yield* t.notify("notifications/initialized")
      const listed = yield* t.request("tools/list", { cursor: "c" })
      expect(listed).toEqual({ method: "tools/list", params: { cursor: "c" } })

      const [initPost, initializedPost, listPost] = server.received("POST")
      expect(initPost!.headers["accept"]).toBe("application/json, text/event-stream")
      expect(initPost!.headers["content-type"]).toBe("application/json")
      expect(initPost!.headers["x-static"]).toBe("yes")
      expect(initPost!.headers["mcp-session-id"]).toBeUndefined()
      expect(initPost!.headers["mcp-protocol-version"]).toBeUndefined()
      for (const later of [initializedPost!, listPost!]) {
        expect(later.headers["mcp-session-id"]).toBe(Server.SESSION_ID)
        expect(later.headers["mcp-protocol-version"]).toBe("2025-11-25")
        expect(later.headers["accept"]).toBe("application/json, text/event-stream")
      }
      expect(initializedPost!.json).toEqual({ jsonrpc: "2.0", method: "notifications/initialized" })
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("does not send MCP-Protocol-Version for 2025-03-26", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const t = yield* connect(server)
      yield* initialize(t)
      yield* t.setProtocolVersion("2025-03-26")
      yield* t.request("ping")
      const ping = server.received("POST").find(isMethod("ping"))!
      expect(ping.headers["mcp-protocol-version"]).toBeUndefined()
      expect(ping.headers["mcp-session-id"]).toBe(Server.SESSION_ID)
    }))

  live("an SSE answer delivers interleaved notifications and server requests, then the response", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) =>
        Effect.succeed(
          isMethod("tools/call")(r)
            ? s.sse(Stream.make(
              Server.event({ data: Server.notification("notifications/progress", { progress: 1 }) }),
              ": a comment\n\n",
              Server.event({ data: { jsonrpc: "2.0", id: "srv-1", method: "ping" } }),
              Server.event({ event: "other", data: "ignored, not a message event" }),
              Server.event({ data: Server.result(r.json.id, { done: true }) })
            ))
            : undefined
        )
      )
      const t = yield* connect(server)
      const notes = yield* Stream.take(t.notifications, 1).pipe(Stream.runCollect, Effect.forkChild({ startImmediately: true }))
      const answer = yield* t.request("tools/call", { name: "x" })
      expect(answer).toEqual({ done: true })
      const received = yield* Fiber.join(notes)
      expect(received).toEqual([{ jsonrpc: "2.0", method: "notifications/progress", params: { progress: 1 } }])
      const reply = yield* server.waitForRequest((r) => r.json?.id === "srv-1")
      expect(reply.json).toEqual({ jsonrpc: "2.0", id: "srv-1", result: {} })
    }))

  live("non-2xx answers become HttpError with the body and the auth hints", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r) =>
        Effect.succeed(
          isMethod("boom")(r)
            ? Server.status(500, "internal trouble")
            : isMethod("secret")(r)
            ? Server.status(401, "no token", {
              "www-authenticate": "Bearer resource_metadata=\"https://a.test/prm\"",
              "mcp-auth-server": "https://auth.test"
            })
            : undefined
        )
      )
      const t = yield* connect(server)
      const boom = yield* Effect.flip(t.request("boom"))
      expect(boom._tag).toBe("HttpError")
      expect(boom.message).toBe("HTTP 500: internal trouble")
      const secret = yield* Effect.flip(t.request("secret"))
      expect(secret).toMatchObject({
        _tag: "HttpError",
        status: 401,
        body: "no token",
        wwwAuthenticate: "Bearer resource_metadata=\"https://a.test/prm\"",
        mcpAuthServer: "https://auth.test"
      })
      expect(yield* t.request("fine")).toEqual({ method: "fine", params: null })
    }))

  live("an invalid JSON body is MalformedMessage, a JSON-RPC error is RpcError", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r) =>
        Effect.succeed(
          isMethod("garbage")(r)
            ? Server.status(200, "{not json", { "content-type": "application/json" })
            : isMethod("fails")(r)
            ? Server.json(Server.rpcError(r.json.id, -32602, "bad params"))
            : isMethod("anonymous-error")(r)
            ? Server.json(Server.rpcError(null, -32600, "Invalid Request"))
            : undefined
        )
      )
      const t = yield* connect(server)
      const garbage = yield* Effect.flip(t.request("garbage"))
      expect(garbage._tag).toBe("MalformedMessage")
      const fails = yield* Effect.flip(t.request("fails"))
      expect(fails).toMatchObject({ _tag: "RpcError", code: -32602, rpcMessage: "bad params" })
      expect(fails.message).toBe("MCP error -32602: bad params")
      const anonymous = yield* Effect.flip(t.request("anonymous-error"))
      expect(anonymous).toMatchObject({ _tag: "RpcError", code: -32600 })
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("a broken SSE event fails only its own request", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const release = yield* Deferred.make<void>()
      yield* server.setHandler((r, s) =>
        Effect.gen(function*() {
          if (isMethod("bad-stream")(r)) {
            return s.sse(Stream.make(Server.event({ data: "{\"jsonrpc\": oops" }), Server.event({ data: Server.result(r.json.id) })))
          }
          if (isMethod("slow")(r)) {
            yield* Deferred.await(release)
            return Server.json(Server.result(r.json.id, { slow: true }))
          }
          return undefined
        })
      )
      const t = yield* connect(server)
      const slow = yield* Effect.forkChild(t.request("slow"))
      yield* server.waitForRequest(isMethod("slow"))
      const bad = yield* Effect.flip(t.request("bad-stream"))
      expect(bad._tag).toBe("MalformedMessage")
      expect(bad.message).toContain("invalid JSON")
      yield* Deferred.succeed(release, undefined)
      expect(yield* Fiber.join(slow)).toEqual({ slow: true })
      expect(yield* t.request("after")).toEqual({ method: "after", params: null })
    }))

  live("404 with a session id is SessionExpired; a new initialize starts over", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      let expired = false
      yield* server.setHandler((r) =>
        Effect.succeed(
          expired && r.headers["mcp-session-id"] === Server.SESSION_ID ? Server.status(404, "session gone") : undefined
        )
      )
      const t = yield* connect(server)
      yield* initialize(t)
      expired = true
      const error = yield* Effect.flip(t.request("tools/list"))
      expect(error).toMatchObject({ _tag: "SessionExpired", sessionId: Server.SESSION_ID })
      expect(yield* SubscriptionRef.get(t.state)).toMatchObject({ _tag: "SessionExpired", sessionId: Server.SESSION_ID })
      const notifyError = yield* Effect.flip(t.notify("notifications/roots/list_changed"))
      expect(notifyError._tag).toBe("SessionExpired")
      // The manager's re-initialize goes out without the stale id and revives the transport.
      yield* initialize(t)
      const reinit = server.received("POST").filter(isMethod("initialize"))[1]!
      expect(reinit.headers["mcp-session-id"]).toBeUndefined()
      expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Ready")
    }))

  live("404 without a session id is a plain HttpError", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler(() => Effect.succeed(Server.status(404, "Not Found")))
      const t = yield* connect(server)
      const error = yield* Effect.flip(t.request("initialize", {}))
      expect(error).toMatchObject({ _tag: "HttpError", status: 404 })
      expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Connecting")
    }))

  live("a stream that breaks or ends before the response, without event ids, is NoResponse", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) =>
        Effect.succeed(
          isMethod("cut")(r)
            ? s.sse(Server.cutAfter([Server.event({ data: Server.notification("notifications/message", { level: "info" }) })]))
            : isMethod("ends")(r)
            ? s.sse(Stream.make(": nothing for you\n\n"))
            : isMethod("accepted")(r)
            ? Server.accepted()
            : undefined
        )
      )
      const t = yield* connect(server)
      const cut = yield* Effect.flip(t.request("cut"))
      expect(cut._tag).toBe("NoResponse")
      expect(cut.message).toMatch(/^No response received for request ID 1\b/)
      const ends = yield* Effect.flip(t.request("ends"))
      expect(ends).toMatchObject({ _tag: "NoResponse", id: 2, method: "ends" })
      const accepted = yield* Effect.flip(t.request("accepted"))
      expect(accepted._tag).toBe("NoResponse")
      expect(yield* t.pendingCount).toBe(0)
      expect(yield* t.request("still-fine")).toEqual({ method: "still-fine", params: null })
    }))

  live("a broken POST stream with event ids resumes with GET + Last-Event-ID after the server's retry", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      let requestId: unknown
      yield* server.setHandler((r, s) =>
        Effect.succeed(
          isMethod("long")(r)
            ? (requestId = r.json.id,
              s.sse(Server.cutAfter([
                Server.event({ id: "ev-1", retry: 60, data: "" }),
                Server.event({ id: "ev-2", data: Server.notification("notifications/progress", { progress: 1 }) })
              ])))
            : r.verb === "GET"
            ? s.sse(Stream.make(
              Server.event({ id: "ev-3", data: Server.notification("notifications/progress", { progress: 2 }) }),
              Server.event({ id: "ev-4", data: Server.result(requestId, { resumed: true }) })
            ))
            : undefined
        )
      )
      const t = yield* connect(server)
      yield* initialize(t)
      const answer = yield* t.request("long")
      expect(answer).toEqual({ resumed: true })
      const [get] = server.received("GET")
      expect(get!.headers["last-event-id"]).toBe("ev-2")
      expect(get!.headers["accept"]).toBe("text/event-stream")
      expect(get!.headers["mcp-session-id"]).toBe(Server.SESSION_ID)
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("SEP-1699 polling: the server closes the POST stream after a priming event; the client polls back", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      let requestId: unknown
      let gets = 0
      yield* server.setHandler((r, s) =>
        Effect.sync(() => {
          if (isMethod("poll")(r)) {
            requestId = r.json.id
            return s.sse(Stream.make(Server.event({ id: "p-0", retry: 30, data: "" })))
          }
          if (r.verb === "GET") {
            gets++
            return gets < 3
              ? s.sse(Stream.make(Server.event({ id: `p-${gets}`, data: "" })))
              : s.sse(Stream.make(Server.event({ id: "p-final", data: Server.result(requestId, { polled: gets }) })))
          }
          return undefined
        })
      )
      const t = yield* connect(server)
      expect(yield* t.request("poll")).toEqual({ polled: 3 })
      expect(server.received("GET").map((g) => g.headers["last-event-id"])).toEqual(["p-0", "p-1", "p-2"])
    }))

  live("a resume that keeps failing ends in NoResponse once the schedule is spent", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) =>
        Effect.succeed(
          isMethod("doomed")(r)
            ? s.sse(Server.cutAfter([Server.event({ id: "d-1", data: "" })]))
            : r.verb === "GET"
            ? s.sse(Server.cutAfter([]))
            : undefined
        )
      )
      const t = yield* connect(server)
      const error = yield* Effect.flip(t.request("doomed"))
      expect(error._tag).toBe("NoResponse")
      expect(server.received("GET").length).toBe(3)
    }))

  live("timeout: Request timeout after Nms, the HTTP call is aborted and notifications/cancelled is POSTed", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) => isMethod("hang")(r) ? s.withhold("hang") : Effect.succeed(undefined))
      const t = yield* connect(server)
      yield* initialize(t)
      const error = yield* Effect.flip(t.request("hang", {}, { timeout: "150 millis" }))
      expect(error._tag).toBe("RequestTimeout")
      expect(error.message).toMatch(/^Request timeout after 150ms/)
      yield* server.waitFor((e): e is Server.Abandoned => e._tag === "Abandoned" && e.label === "hang")
      const cancel = yield* server.waitForRequest(isMethod("notifications/cancelled"))
      const hang = server.received("POST").find(isMethod("hang"))!
      expect(cancel.json.params).toEqual({ requestId: hang.json.id, reason: "Request timeout after 150ms" })
      expect(cancel.headers["mcp-session-id"]).toBe(Server.SESSION_ID)
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("a silent SSE answer fails with the SSE wording once the idle timeout passes", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) =>
        Effect.succeed(isMethod("quiet")(r) ? s.sse(Server.thenSilence([": hello\n\n"]), { label: "quiet" }) : undefined)
      )
      const t = yield* connect(server, { sseIdleTimeout: "200 millis" })
      const error = yield* Effect.flip(t.request("quiet", {}, { timeout: "10 seconds" }))
      expect(error).toMatchObject({ _tag: "RequestTimeout", phase: "SSE stream silent", timeoutMs: 200 })
      expect(error.message).toMatch(/^SSE stream silent: request timeout after 200ms/)
      yield* server.waitFor((e): e is Server.Abandoned => e._tag === "Abandoned" && e.label === "quiet")
    }))

  live("a POST stream that stays open after its response: the call returns at once, the body is let go within the drain bound", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) =>
        Effect.succeed(
          isMethod("lingering")(r)
            ? s.sse(Server.thenSilence([Server.event({ data: Server.result(r.json.id, { ok: true }) })]), { label: "lingering" })
            : undefined
        )
      )
      const t = yield* connect(server)
      yield* initialize(t)
      const started = Date.now()
      expect(yield* t.request("lingering", {})).toEqual({ ok: true })
      expect(Date.now() - started).toBeLessThan(2_000)
      yield* server.waitFor((e): e is Server.Abandoned => e._tag === "Abandoned" && e.label === "lingering")
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_900)
      expect(yield* t.pendingCount).toBe(0)
    }), 20_000)

  live("keep-alive comments keep a quiet SSE answer alive past the idle timeout", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const tenSent = yield* Deferred.make<void>()
      yield* server.setHandler((r, s) =>
        Effect.succeed(
          isMethod("patient")(r)
            ? s.sse(
              Stream.fromSchedule(Schedule.spaced("50 millis")).pipe(
                Stream.take(12),
                Stream.tap((n) => n === 9 ? Deferred.succeed(tenSent, undefined) : Effect.void),
                Stream.map(() => ": keep-alive\n\n"),
                Stream.concat(Stream.make(Server.event({ data: Server.result(r.json.id, { patient: true }) })))
              )
            )
            : undefined
        )
      )
      const t = yield* connect(server, { sseIdleTimeout: "500 millis" })
      const answer = yield* t.request("patient", {}, { timeout: "20 seconds" })
      yield* Deferred.await(tenSent)
      expect(answer).toEqual({ patient: true })
    }))

  live("caller interruption aborts the HTTP call and POSTs notifications/cancelled", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) => isMethod("hang")(r) ? s.withhold("hang") : Effect.succeed(undefined))
      const t = yield* connect(server)
      const fiber = yield* Effect.forkChild(t.request("hang"))
      const hang = yield* server.waitForRequest(isMethod("hang"))
      yield* Fiber.interrupt(fiber)
      yield* server.waitFor((e): e is Server.Abandoned => e._tag === "Abandoned" && e.label === "hang")
      const cancel = yield* server.waitForRequest(isMethod("notifications/cancelled"))
      expect(cancel.json.params).toEqual({ requestId: hang.json.id, reason: "Request cancelled by the caller" })
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("initialize is never cancelled", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) => isMethod("initialize")(r) ? s.withhold("init") : Effect.succeed(undefined))
      const t = yield* connect(server)
      const error = yield* Effect.flip(t.request("initialize", {}, { timeout: "100 millis" }))
      expect(error._tag).toBe("RequestTimeout")
      yield* server.waitFor((e): e is Server.Abandoned => e._tag === "Abandoned" && e.label === "init")
      yield* t.request("ping")
      expect(server.received("POST").some(isMethod("notifications/cancelled"))).toBe(false)
    }))

  live("static headers and an effectful per-request hook decorate POST, GET and DELETE", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) => Effect.succeed(r.verb === "GET" ? s.sse(Stream.never) : undefined))
      let token = 0
      const verbs: Array<string> = []
      const scope = yield* Scope.make()
      const t = yield* connect(server, {
        headers: { authorization: "Bearer static", "x-app": "demo", accept: "text/plain" },
        requestHeaders: (ctx) =>
          Effect.sync(() => {
            verbs.push(ctx.verb)
            return { authorization: `Bearer t${++token}` }
          })
      }).pipe(Scope.provide(scope))
      yield* initialize(t)
      yield* t.listen
      yield* server.waitForRequest((r) => r.verb === "GET")
      yield* Scope.close(scope, Exit.void)
      const del = yield* server.waitForRequest((r) => r.verb === "DELETE")
      const [post] = server.received("POST")
      const [get] = server.received("GET")
      expect(post!.headers["authorization"]).toBe("Bearer t1")
      expect(post!.headers["x-app"]).toBe("demo")
      expect(post!.headers["accept"]).toBe("application/json, text/event-stream")
      expect(get!.headers["authorization"]).toBe("Bearer t2")
      expect(del.headers["authorization"]).toBe("Bearer t3")
      expect(verbs).toEqual(["POST", "GET", "DELETE"])
    }))

  live("an outgoing message above maxMessageBytes is refused before sending", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const t = yield* connect(server, { maxMessageBytes: 1024 })
      const error = yield* Effect.flip(t.request("big", { blob: "x".repeat(2000) }))
      expect(error).toMatchObject({ _tag: "MessageTooLarge", direction: "outgoing", limit: 1024 })
      const incoming = yield* Effect.flip(t.request("echo", { blob: "y".repeat(900) }).pipe(
        Effect.andThen(t.request("echo", { blob: "y".repeat(1000) }))
      ))
      expect(incoming).toMatchObject({ _tag: "MessageTooLarge" })
      expect(server.received("POST").some(isMethod("big"))).toBe(false)
    }))

  live("a refused connection fails the request with TransportClosed and leaves the transport usable", () =>
    Effect.gen(function*() {
      const t = yield* StreamableHttp.make({ url: "http://127.0.0.1:1/mcp" })
      const error = yield* Effect.flip(t.request("ping"))
      expect(error._tag).toBe("TransportClosed")
      expect(error.message).toContain("POST failed")
      expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Connecting")
      expect(yield* t.pendingCount).toBe(0)
    }))
})
