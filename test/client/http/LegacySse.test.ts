/**
 * The legacy HTTP+SSE (2024-11-05) client transport against the loopback
 * test server: endpoint discovery, POST + 202, answers on the stream, and the
 * stream's end closing everything.
 */
import { describe, expect } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope, Stream, SubscriptionRef } from "effect"
import * as SseTransport from "../../../src/client/SseClientTransport.ts"
import { malformedResponses, malformedShapeNames, parseErrorWithoutId } from "../../fixtures/malformed-responses.ts"
import * as Server from "./MisbehavingServer.ts"
import { httpClients, liveWith } from "./httpClients.ts"

const isMethod = (method: string) => (r: Server.Received) => r.json?.method === method

/**
 * A legacy server: GET /sse opens the stream and names `endpoint`; POSTs to
 * it get 202 and their answers go on the stream. `answer` decides them.
 */
const legacyServer = (options: {
  readonly endpoint?: (origin: string) => string
  readonly answer?: (message: any) => unknown
} = {}) =>
  Effect.gen(function*() {
    const server = yield* Server.make
    const feed = yield* server.pushable()
    yield* server.setHandler((r, s) =>
      Effect.gen(function*() {
        if (r.verb === "GET" && r.path === "/sse") {
          yield* feed.push(Server.event({ event: "endpoint", data: options.endpoint?.(server.origin) ?? "/message?sessionId=abc" }))
          return s.sse(feed.stream, { label: "sse" })
        }
        if (r.verb === "POST" && r.path === "/message") {
          const message = r.json
          if (message !== undefined && "id" in message && "method" in message) {
            const answer = options.answer !== undefined
              ? options.answer(message)
              : Server.result(message.id, { method: message.method })
            if (answer !== undefined) yield* feed.push(Server.event({ event: "message", data: answer }))
          }
          return Server.status(202, "Accepted")
        }
        return undefined
      })
    )
    return { server, feed, url: `${server.origin}/sse` }
  })

describe.each(httpClients)("legacy HTTP+SSE client via %s", (_name, clientLayer) => {
  const live = liveWith(clientLayer, 15_000)

  live("finds the endpoint, POSTs messages, correlates answers from the stream", () =>
    Effect.gen(function*() {
      const { feed, server, url } = yield* legacyServer()
      const t = yield* SseTransport.make({ url, headers: { authorization: "Bearer x" } })
      expect(t.endpoint).toBe(`${server.origin}/message?sessionId=abc`)
      expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Ready")
      const notes = yield* Stream.runCollect(Stream.take(t.notifications, 1)).pipe(Effect.forkChild({ startImmediately: true }))
      expect(yield* t.request("initialize", { protocolVersion: "2024-11-05" })).toEqual({ method: "initialize" })
      yield* t.notify("notifications/initialized")
      const [a, b] = yield* Effect.all([t.request("tools/list"), t.request("prompts/list")], { concurrency: 2 })
      expect(a).toEqual({ method: "tools/list" })
      expect(b).toEqual({ method: "prompts/list" })
      yield* feed.push(Server.event({ event: "message", data: Server.notification("notifications/message", { level: "info" }) }))
      yield* feed.push(Server.event({ event: "message", data: { jsonrpc: "2.0", id: "s1", method: "ping" } }))
      expect((yield* Fiber.join(notes))[0]!.method).toBe("notifications/message")
      const reply = yield* server.waitForRequest((r) => r.json?.id === "s1")
      expect(reply.json).toEqual({ jsonrpc: "2.0", id: "s1", result: {} })
      expect(reply.query.get("sessionId")).toBe("abc")
      const [get] = server.received("GET")
      expect(get!.headers["accept"]).toBe("text/event-stream")
      expect(get!.headers["authorization"]).toBe("Bearer x")
      const posts = server.received("POST")
      expect(posts.every((p) => p.path === "/message" && p.headers["content-type"] === "application/json")).toBe(true)
      expect(posts.every((p) => p.headers["authorization"] === "Bearer x")).toBe(true)
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("an absolute endpoint on the same origin is accepted; another origin is refused", () =>
    Effect.gen(function*() {
      const same = yield* legacyServer({ endpoint: (origin) => `${origin}/message?sessionId=abs` })
      const t = yield* SseTransport.make({ url: same.url })
      expect(t.endpoint).toBe(`${same.server.origin}/message?sessionId=abs`)
      expect(yield* t.request("ping")).toEqual({ method: "ping" })

      const other = yield* legacyServer({ endpoint: () => "http://evil.test:1234/message" })
      const error = yield* Effect.flip(Effect.scoped(SseTransport.make({ url: other.url })))
      expect(error._tag).toBe("MalformedMessage")
      expect(error.message).toContain("another origin")
    }))

  live("the stream ending fails everything pending with TransportClosed", () =>
    Effect.gen(function*() {
      const { feed, server, url } = yield* legacyServer({ answer: () => undefined })
      const t = yield* SseTransport.make({ url })
      const pending = yield* Effect.forkChild(t.request("tools/call", { name: "slow" }))
      yield* server.waitForRequest(isMethod("tools/call"))
      yield* feed.end
      const error = yield* Effect.flip(Fiber.join(pending))
      expect(error).toMatchObject({ _tag: "TransportClosed", reason: "SSE stream ended" })
      expect((yield* t.awaitClosed).reason).toBe("SSE stream ended")
      expect(yield* SubscriptionRef.get(t.state)).toMatchObject({ _tag: "Closed" })
      expect((yield* Effect.flip(t.request("ping")))._tag).toBe("TransportClosed")
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("a stream that breaks fails everything pending with TransportClosed", () =>
    Effect.gen(function*() {
      const { feed, server, url } = yield* legacyServer({ answer: () => undefined })
      const t = yield* SseTransport.make({ url })
      const pending = yield* Effect.forkChild(t.request("tools/call"))
      yield* server.waitForRequest(isMethod("tools/call"))
      yield* feed.cut
      const error = yield* Effect.flip(Fiber.join(pending))
      expect(error).toMatchObject({ _tag: "TransportClosed", reason: "SSE stream broke" })
    }))

  live("a POST answered non-2xx is HttpError; a GET answered non-2xx fails the connect", () =>
    Effect.gen(function*() {
      const { server, url } = yield* legacyServer()
      const t = yield* SseTransport.make({ url })
      yield* server.setHandler((r) => Effect.succeed(r.verb === "POST" ? Server.status(400, "bad session") : undefined))
      const error = yield* Effect.flip(t.request("ping"))
      expect(error).toMatchObject({ _tag: "HttpError", status: 400, body: "bad session" })
      yield* server.setHandler(() => Effect.succeed(Server.status(401, "who are you", { "www-authenticate": "Bearer" })))
      const refused = yield* Effect.flip(Effect.scoped(SseTransport.make({ url })))
      expect(refused).toMatchObject({ _tag: "HttpError", status: 401, wwwAuthenticate: "Bearer" })
    }))

  live("no endpoint event within the connect timeout is TransportClosed", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((_r, s) => Effect.succeed(s.sse(Server.thenSilence([": hello\n\n"]), { label: "mute" })))
      const error = yield* Effect.flip(Effect.scoped(SseTransport.make({ url: `${server.origin}/sse`, connectTimeout: "200 millis" })))
      expect(error).toMatchObject({ _tag: "TransportClosed", reason: "no endpoint event within 200ms" })
      yield* server.waitFor((e): e is Server.Abandoned => e._tag === "Abandoned" && e.label === "mute")
    }))

  live("timeout sends notifications/cancelled to the endpoint; closing the scope aborts the stream", () =>
    Effect.gen(function*() {
      const { server, url } = yield* legacyServer({ answer: (m) => m.method === "hang" ? undefined : Server.result(m.id) })
      const scope = yield* Scope.make()
      const t = yield* SseTransport.make({ url }).pipe(Scope.provide(scope))
      const error = yield* Effect.flip(t.request("hang", {}, { timeout: "100 millis" }))
      expect(error.message).toMatch(/^Request timeout after 100ms/)
      const cancel = yield* server.waitForRequest(isMethod("notifications/cancelled"))
      expect(cancel.json.params).toMatchObject({ reason: "Request timeout after 100ms" })
      expect(cancel.path).toBe("/message")
      yield* Scope.close(scope, Exit.void)
      yield* server.waitFor((e): e is Server.Abandoned => e._tag === "Abandoned" && e.label === "sse")
      expect((yield* t.awaitClosed).reason).toBe("transport scope closed")
    }))

  live("a malformed answer on the stream fails the request it names at once; so does a lone parse error without id", () =>
    Effect.gen(function*() {
      const { url } = yield* legacyServer({
        answer: (m) =>
          m.method === "malformed"
            ? malformedResponses[m.params.shape]!.answer(m.id)
            : m.method === "parse-error"
            ? parseErrorWithoutId
            : Server.result(m.id)
      })
      // Requests wait an hour: a request left to its timeout shows as the test timing out.
      const t = yield* SseTransport.make({ url, defaultTimeout: "1 hour" })
      for (const shape of malformedShapeNames) {
        const error = yield* Effect.flip(t.request("malformed", { shape }))
        expect(error, shape).toMatchObject({ _tag: "MalformedMessage", reason: malformedResponses[shape]!.reason, method: "malformed" })
      }
      expect(yield* Effect.flip(t.request("parse-error"))).toMatchObject({ _tag: "RpcError", code: -32700 })
      expect(yield* t.pendingCount).toBe(0)
      expect(yield* t.request("ping")).toEqual({})
    }))
})
