/**
 * A POST refused with 503 or 429 and a `Retry-After` is sent again after
 * that wait, by both HTTP client transports: how many times, for which
 * methods (not `tools/call` unless asked), never for a wait over the bound
 * nor without the header, and within the request's timeout. Against a
 * loopback server scripted per test, and against this project's server
 * while it drains; every outcome is typed and leaves nothing pending. The
 * GETs that resume an answer, the standalone stream and the legacy
 * transport's stream wait out such a refusal too.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Schema, Stream, SubscriptionRef } from "effect"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as SseTransport from "../../../src/client/SseClientTransport.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as UnavailableRetry from "../../../src/client/internal/UnavailableRetry.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import * as Tool from "../../../src/server/Tool.ts"
import * as Server from "./MisbehavingServer.ts"
import { httpClients, liveWith } from "./httpClients.ts"

const isMethod = (method: string) => (r: Server.Received) => r.json?.method === method
const posts = (server: Server.MisbehavingServer, method: string) =>
  server.received("POST").filter((r) => r.json?.method === method)

/** Refuses the first `times` POSTs of `method` with `status` and `headers`; the rest get the default answer. */
const refuseFirst = (
  server: Server.MisbehavingServer,
  method: string,
  times: number,
  status: number,
  headers: Record<string, string>
) => {
  let refused = 0
  return server.setHandler((r) =>
    Effect.sync(() =>
      isMethod(method)(r) && refused++ < times
        ? Server.json({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "come back later" } }, {
          status,
          headers
        })
        : undefined
    )
  )
}

/** A handshake-era transport with a session, as `McpClient` would leave it. */
const connect = (server: Server.MisbehavingServer, options?: StreamableHttp.Options["retryUnavailable"]) =>
  Effect.gen(function*() {
    const t = yield* StreamableHttp.make({ url: server.url, retryUnavailable: options })
    yield* t.request("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "0" } })
    yield* t.setProtocolVersion("2025-11-25")
    return t
  })

describe("Retry-After values", () => {
  it("delay-seconds, an HTTP date (one past is no wait), and nothing for anything else", () => {
    const now = Date.parse("Mon, 07 Dec 2026 07:00:00 GMT")
    expect(UnavailableRetry.retryAfterMs("0", now)).toBe(0)
    expect(UnavailableRetry.retryAfterMs(" 3 ", now)).toBe(3000)
    expect(UnavailableRetry.retryAfterMs("Mon, 07 Dec 2026 07:00:02 GMT", now)).toBe(2000)
    expect(UnavailableRetry.retryAfterMs("Mon, 07 Dec 2026 06:59:00 GMT", now)).toBe(0)
    for (const value of [undefined, "", "-1", "1.5", "soon"]) {
      expect(UnavailableRetry.retryAfterMs(value, now)).toBeUndefined()
    }
  })
})

describe.each(httpClients)("a refused POST sent again, via %s", (_name, clientLayer) => {
  const live = liveWith(clientLayer, 15_000)

  live("503 and 429 with Retry-After: the handshake and a request go through on a later attempt", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* refuseFirst(server, "initialize", 2, 503, { "retry-after": "0" })
      const client = yield* McpClient.connect(StreamableHttp.make({ url: server.url }), { protocol: "2025-11-25" })
      expect(client.serverInfo.name).toBe("misbehaving")
      expect(posts(server, "initialize")).toHaveLength(3)

      yield* refuseFirst(server, "x/echo", 1, 429, { "retry-after": "0" })
      const answer = yield* client.request("x/echo", {})
      expect(answer).toMatchObject({ method: "x/echo" })
      expect(posts(server, "x/echo")).toHaveLength(2)
      // The attempt after a refusal still carries the session.
      expect(posts(server, "x/echo").map((p) => p.headers["mcp-session-id"])).toEqual([Server.SESSION_ID, Server.SESSION_ID])
      expect(yield* client.connection.pendingCount).toBe(0)
    }))

  live("attempts run out: the last refusal is the error, with its Retry-After", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const client = yield* connect(server, { attempts: 1 })
      yield* refuseFirst(server, "tools/list", 5, 503, { "retry-after": "0" })
      const error = yield* Effect.flip(client.request("tools/list", {}))
      expect(error).toMatchObject({ _tag: "HttpError", status: 503, retryAfterMs: 0 })
      expect(posts(server, "tools/list")).toHaveLength(2)
      expect(yield* client.pendingCount).toBe(0)
    }))

  live("sent once: without Retry-After, another status, a wait over maxDelay, or retryUnavailable false", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const cases = [
        { status: 503, headers: {}, options: undefined, retryAfterMs: undefined },
        { status: 500, headers: { "retry-after": "0" }, options: undefined, retryAfterMs: 0 },
        { status: 503, headers: { "retry-after": "6" }, options: undefined, retryAfterMs: 6000 },
        { status: 503, headers: { "retry-after": "2" }, options: { maxDelay: "1 second" }, retryAfterMs: 2000 },
        { status: 503, headers: { "retry-after": "0" }, options: false, retryAfterMs: 0 }
      ] as const
      for (const c of cases) {
        const client = yield* connect(server, c.options)
        const before = posts(server, "tools/list").length
        yield* refuseFirst(server, "tools/list", 1, c.status, c.headers)
        const error = yield* Effect.flip(client.request("tools/list", {}))
        expect(error).toMatchObject({ _tag: "HttpError", status: c.status, retryAfterMs: c.retryAfterMs })
        expect(posts(server, "tools/list").length - before).toBe(1)
        yield* server.setHandler(() => Effect.succeed(undefined))
      }
    }))

  live("tools/call is sent again only with toolCalls: true", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const plain = yield* connect(server)
      yield* refuseFirst(server, "tools/call", 1, 503, { "retry-after": "0" })
      const error = yield* Effect.flip(plain.request("tools/call", { name: "deploy", arguments: {} }))
      expect(error).toMatchObject({ _tag: "HttpError", status: 503, retryAfterMs: 0 })
      expect(posts(server, "tools/call")).toHaveLength(1)

      const opted = yield* connect(server, { toolCalls: true })
      yield* refuseFirst(server, "tools/call", 1, 503, { "retry-after": "0" })
      const result = yield* opted.request("tools/call", { name: "deploy", arguments: {} })
      expect(result).toMatchObject({ method: "tools/call" })
      expect(posts(server, "tools/call")).toHaveLength(3)
    }))

  live("the wait is the server's: a second attempt a second after a Retry-After of 1", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const client = yield* connect(server)
      yield* refuseFirst(server, "ping", 1, 503, { "retry-after": "1" })
      yield* client.request("ping")
      const [first, second] = posts(server, "ping")
      expect(second!.at - first!.at).toBeGreaterThanOrEqual(900)
    }))

  live("the request's timeout covers the wait: RequestTimeout, no second attempt, nothing pending", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const client = yield* connect(server, { maxDelay: "1 minute" })
      yield* refuseFirst(server, "tools/list", 1, 503, { "retry-after": "30" })
      const error = yield* Effect.flip(client.request("tools/list", {}, { timeout: "300 millis" }))
      expect(error._tag).toBe("RequestTimeout")
      expect(posts(server, "tools/list")).toHaveLength(1)
      expect(yield* client.pendingCount).toBe(0)
    }))

  live("the legacy HTTP+SSE transport sends a refused POST again too", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const feed = yield* server.pushable()
      let refused = 0
      yield* server.setHandler((r, s) =>
        Effect.gen(function*() {
          if (r.verb === "GET" && r.path === "/sse") {
            yield* feed.push(Server.event({ event: "endpoint", data: "/message?sessionId=abc" }))
            return s.sse(feed.stream, { label: "sse" })
          }
          if (r.verb !== "POST" || r.path !== "/message") return undefined
          if (refused++ === 0) return Server.status(503, "not reading the stream", { "retry-after": "0" })
          yield* feed.push(Server.event({ event: "message", data: Server.result(r.json.id, { method: r.json.method }) }))
          return Server.status(202, "Accepted")
        })
      )
      const t = yield* SseTransport.make({ url: `${server.origin}/sse` })
      expect(yield* t.request("ping")).toEqual({ method: "ping" })
      expect(server.received("POST")).toHaveLength(2)

      const once = yield* SseTransport.make({ url: `${server.origin}/sse`, retryUnavailable: false })
      refused = 0
      const exit = yield* Effect.exit(once.request("ping"))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(server.received("POST")).toHaveLength(3)
    }))
})

describe.each(httpClients)("a refused GET waited out, via %s", (_name, clientLayer) => {
  const live = liveWith(clientLayer, 15_000)

  /** `long` answers on SSE with one event and breaks; the GETs that resume it are refused `refusals` times first. */
  const breakingAnswer = (server: Server.MisbehavingServer, refusals: number, after: string) => {
    let requestId: unknown
    return server.setHandler((r, s) =>
      Effect.succeed(
        isMethod("long")(r)
          ? (requestId = r.json.id,
            s.sse(Server.cutAfter([Server.event({ id: "ev-1", data: Server.notification("notifications/progress", { progress: 1 }) })])))
          : r.verb === "GET"
          ? refusals-- > 0
            ? Server.status(503, "draining", { "retry-after": after })
            : s.sse(Stream.make(Server.event({ id: "ev-2", data: Server.result(requestId, { resumed: true }) })))
          : undefined
      )
    )
  }

  live("a resumption refused for now is tried again after the wait (another instance may resume it)", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* breakingAnswer(server, 1, "1")
      const t = yield* connect(server)
      expect(yield* t.request("long")).toEqual({ resumed: true })
      const [refused, resumed] = server.received("GET")
      expect([refused!.headers["last-event-id"], resumed!.headers["last-event-id"]]).toEqual(["ev-1", "ev-1"])
      expect(resumed!.at - refused!.at).toBeGreaterThanOrEqual(900)
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("a resumption refused for longer than maxDelay, or with retryUnavailable false, fails with the refusal", () =>
    Effect.gen(function*() {
      const long = yield* Server.make
      yield* breakingAnswer(long, 1, "30")
      const t = yield* connect(long)
      expect(yield* Effect.flip(t.request("long"))).toMatchObject({ _tag: "HttpError", status: 503, retryAfterMs: 30_000 })
      expect(long.received("GET")).toHaveLength(1)

      const off = yield* Server.make
      yield* breakingAnswer(off, 1, "0")
      const u = yield* connect(off, false)
      expect(yield* Effect.flip(u.request("long"))).toMatchObject({ _tag: "HttpError", status: 503 })
      expect(off.received("GET")).toHaveLength(1)
    }))

  live("the standalone GET stream refused for now reconnects after the wait the server asked", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      let gets = 0
      yield* server.setHandler((r, s) =>
        Effect.sync(() => {
          if (r.verb !== "GET") return undefined
          return gets++ === 0 ? Server.status(503, "draining", { "retry-after": "1" }) : s.sse(Server.thenSilence([]))
        })
      )
      const t = yield* connect(server)
      const reconnecting = yield* SubscriptionRef.changes(t.listenerState).pipe(
        Stream.filter((state) => state._tag === "Reconnecting"),
        Stream.runHead,
        Effect.forkChild({ startImmediately: true })
      )
      yield* t.listen
      expect(yield* Fiber.join(reconnecting)).toEqual(Option.some({ _tag: "Reconnecting", attempt: 1, delayMs: 1000 }))
      yield* server.waitForRequest((r) => r.verb === "GET" && server.received("GET").length === 2)
      const [refused, open] = server.received("GET")
      expect(open!.at - refused!.at).toBeGreaterThanOrEqual(900)
    }))

  live("the legacy HTTP+SSE transport's stream GET refused for now is sent again; past the attempts, or off, the connect fails with the refusal", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      let refusals = 0
      yield* server.setHandler((r, s) =>
        Effect.gen(function*() {
          if (r.verb !== "GET" || r.path !== "/sse") return undefined
          if (refusals-- > 0) return Server.status(503, "draining", { "retry-after": "1" })
          const feed = yield* server.pushable()
          yield* feed.push(Server.event({ event: "endpoint", data: "/message?sessionId=abc" }))
          return s.sse(feed.stream, { label: "sse" })
        })
      )
      refusals = 2
      const t = yield* SseTransport.make({ url: `${server.origin}/sse` })
      expect(t.endpoint).toBe(`${server.origin}/message?sessionId=abc`)
      const [first, , third] = server.received("GET")
      expect(server.received("GET")).toHaveLength(3)
      expect(third!.at - first!.at).toBeGreaterThanOrEqual(1_800)

      refusals = 2
      const spent = yield* Effect.flip(SseTransport.make({ url: `${server.origin}/sse`, retryUnavailable: { attempts: 1 } }))
      expect(spent).toMatchObject({ _tag: "HttpError", status: 503, retryAfterMs: 1000 })
      expect(server.received("GET")).toHaveLength(5)

      refusals = 1
      const off = yield* Effect.flip(SseTransport.make({ url: `${server.origin}/sse`, retryUnavailable: false }))
      expect(off).toMatchObject({ _tag: "HttpError", status: 503 })
      expect(server.received("GET")).toHaveLength(6)
    }), 20_000)
})

describe("against this project's server while it drains", () => {
  it.live("McpClient sends a request again on each 503 with Retry-After, then fails with the last", () =>
    Effect.gen(function*() {
      const server = McpServer.make({ serverInfo: { name: "draining", version: "1.0.0" }, capabilities: { tools: {} } })
        .pipe(Tool.add("echo", { parameters: { text: Schema.String } }, ({ text }) => Effect.succeed(text)))
      const context = yield* Layer.build(McpServer.layerHttp(server, { port: 0 }))
      const transport = Context.get(context, HttpServerTransport.HttpServerTransport)
      const url = Option.getOrThrow(transport.url)
      const sent: Array<string> = []
      const client = yield* McpClient.connect(StreamableHttp.make({
        url,
        requestHeaders: (request) => Effect.sync(() => (sent.push(request.message !== undefined && "method" in request.message ? request.message.method : request.verb), {}))
      }))
      expect((yield* client.listTools()).tools.map((t) => t.name)).toEqual(["echo"])

      yield* transport.shutdown
      sent.length = 0
      const error = yield* Effect.flip(client.listTools())
      expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "HttpError", status: 503, retryAfterMs: 1000 } })
      expect(sent).toEqual(["tools/list", "tools/list", "tools/list"])
      expect(yield* client.connection.pendingCount).toBe(0)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)), 15_000)
})
