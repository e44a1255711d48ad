/**
 * Middleware around McpServer's requests: what it sees in both eras, the
 * order of composition, short-circuits, services, the ready-made pieces
 * (principal checks, rate limits, logging) and the span of every request,
 * in memory and over HTTP with an `authenticate` hook.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Deferred, Effect, Fiber, Logger, References, Tracer } from "effect"
import { TestClock } from "effect/testing"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as JsonRpc from "../../src/JsonRpc.ts"
import { RpcError } from "../../src/McpError.ts"
import * as RequestMeta from "../../src/RequestMeta.ts"
import type { Handler, HandlerContext } from "../../src/server/Handler.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as Middleware from "../../src/server/Middleware.ts"
import { makeAskingServer } from "../fixtures/asking-server.ts"
import { openSession, post, serve } from "./http/helpers.ts"
import { recordingTracer } from "../fixtures/RecordingTracer.ts"

const MODERN = "2026-07-28"
const modernMeta = () => RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: {} })

const text = (t: string) => ({ content: [{ type: "text", text: t }] })

/** Serves `echo` (and `wait`, which blocks until `release` and tells `started`). */
const makeServer = (hooks: { started?: Deferred.Deferred<void>; release?: Deferred.Deferred<void> } = {}) =>
  McpServer.make({ serverInfo: { name: "mw", version: "1.0.0" }, stateless: true, enforceInitialized: false }).pipe(
    McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [{ name: "echo", inputSchema: { type: "object" } }] })),
    McpServer.method("tools/call", {}, (params) =>
      Effect.gen(function*() {
        const p = params as { name: string; arguments?: { text?: string } }
        if (p.name === "wait") {
          if (hooks.started !== undefined) yield* Deferred.succeed(hooks.started, undefined)
          if (hooks.release !== undefined) yield* Deferred.await(hooks.release)
        }
        if (p.name === "boom") return yield* Effect.fail(new RpcError({ code: -32050, rpcMessage: "boom" }))
        return text(p.arguments?.text ?? p.name)
      }))
  )

const contextOf = (o: Partial<HandlerContext> = {}): HandlerContext => ({
  sessionId: undefined,
  requestId: undefined,
  notify: () => Effect.void,
  request: () => Effect.die("no client here"),
  ...o
})

const legacyCall = <R = never>(handler: Handler<R>, id: number, name: string, o: Partial<HandlerContext> = {}) =>
  Effect.map(
    handler(JsonRpc.request(id, "tools/call", { name, arguments: { text: name } }), contextOf(o)),
    (r) => r as JsonRpc.JsonRpcResponse
  )

const modernCall = <R = never>(handler: Handler<R>, id: number, name: string, o: Partial<HandlerContext> = {}) =>
  Effect.map(
    handler(JsonRpc.request(id, "tools/call", { name, arguments: { text: name }, _meta: modernMeta() }), contextOf(o)),
    (r) => r as JsonRpc.JsonRpcResponse
  )

const errorOf = (r: JsonRpc.JsonRpcResponse) => ("error" in r ? r.error : undefined)

describe("McpServer.middleware", () => {
  it.effect("sees the method, name, params, principal, session and era of requests of both eras", () =>
    Effect.gen(function*() {
      const seen: Array<Omit<Middleware.McpRequest, "message" | "context" | "params">> = []
      const server = makeServer().pipe(
        McpServer.middleware((next) => (request) => {
          const { message: _m, context: _c, params: _p, ...rest } = request
          seen.push(rest)
          return next(request)
        })
      )
      const { handler } = yield* McpServer.toHandler(server)
      yield* legacyCall(handler, 1, "echo", { principal: "alice", sessionId: "s1" })
      yield* modernCall(handler, 2, "echo", { principal: "bob" })
      yield* Effect.map(handler(JsonRpc.request(3, "resources/read", { uri: "file:///a" }), contextOf()), () => undefined)
      expect(seen).toEqual([
        { method: "tools/call", id: 1, name: "echo", principal: "alice", sessionId: "s1", era: "legacy" },
        { method: "tools/call", id: 2, name: "echo", principal: "bob", sessionId: undefined, era: "modern" },
        { method: "resources/read", id: 3, name: "file:///a", principal: undefined, sessionId: undefined, era: "legacy" }
      ])
    }))

  it.effect("the middleware added last is the outermost: it sees the request first and the reply last", () =>
    Effect.gen(function*() {
      const order: Array<string> = []
      const mark = (label: string): Middleware.Middleware => (next) => (request) =>
        Effect.sync(() => order.push(`${label} before`)).pipe(
          Effect.andThen(next(request)),
          Effect.tap(() => Effect.sync(() => order.push(`${label} after`)))
        )
      const server = makeServer().pipe(McpServer.middleware(mark("first")), McpServer.middleware(mark("second")))
      const { handler } = yield* McpServer.toHandler(server)
      yield* legacyCall(handler, 1, "echo")
      expect(order).toEqual(["second before", "first before", "first after", "second after"])
    }))

  it.effect("short-circuits with an RpcError or a reply of its own in both eras; the handler does not run", () =>
    Effect.gen(function*() {
      let ran = 0
      const server = McpServer.make({ serverInfo: { name: "mw", version: "1" }, stateless: true, enforceInitialized: false }).pipe(
        McpServer.method("tools/call", {}, () => Effect.sync(() => (ran++, text("handler")))),
        McpServer.middleware((next) => (request) =>
          request.name === "denied"
            ? Effect.fail(new RpcError({ code: -32099, rpcMessage: "no", data: { why: "test" } }))
            : request.name === "cached"
            ? Effect.succeed(Middleware.reply(request, text("from middleware")))
            : next(request)
        )
      )
      const { handler } = yield* McpServer.toHandler(server)
      for (const call of [legacyCall, modernCall]) {
        expect(errorOf(yield* call(handler, 1, "denied"))).toEqual({ code: -32099, message: "no", data: { why: "test" } })
        expect(yield* call(handler, 2, "cached")).toEqual(JsonRpc.success(2, text("from middleware")))
      }
      expect(ran).toBe(0)
      expect(yield* legacyCall(handler, 3, "other")).toEqual(JsonRpc.success(3, text("handler")))
    }))

  it.effect("a middleware that fails otherwise is answered -32603, and the middleware around it still gets a reply", () =>
    Effect.gen(function*() {
      const outerSaw: Array<unknown> = []
      const server = makeServer().pipe(
        McpServer.middleware(() => () => Effect.die(new Error("middleware bug"))),
        McpServer.middleware((next) => (request) => Effect.tap(next(request), (r) => Effect.sync(() => outerSaw.push(errorOf(r)?.code))))
      )
      const { handler } = yield* McpServer.toHandler(server)
      expect(errorOf(yield* legacyCall(handler, 1, "echo"))?.code).toBe(-32603)
      expect(outerSaw).toEqual([-32603])
    }).pipe(Effect.provide(Logger.layer([]))))

  it.effect("provideService gives request handlers a service, taking it off what the server needs", () =>
    Effect.gen(function*() {
      class Tenant extends Context.Service<Tenant, { readonly name: string }>()("test/Tenant") {}
      const server = McpServer.make({ serverInfo: { name: "mw", version: "1" }, stateless: true, enforceInitialized: false }).pipe(
        McpServer.method("tools/call", {}, () => Effect.map(Tenant, (t) => text(t.name))),
        McpServer.middleware(Middleware.provideService(Tenant, (request) =>
          request.principal === undefined
            ? Effect.fail(new RpcError({ code: -32011, rpcMessage: "who?" }))
            : Effect.succeed({ name: `tenant of ${request.principal}` })))
      )
      // No Tenant left to provide: the handler type-checks as Handler<never>.
      const { handler }: McpServer.ServerHandle<never> = yield* McpServer.toHandler(server)
      expect(yield* legacyCall(handler, 1, "echo", { principal: "ann" })).toEqual(JsonRpc.success(1, text("tenant of ann")))
      expect(yield* modernCall(handler, 2, "echo", { principal: "bo" })).toMatchObject({ result: text("tenant of bo") })
      expect(errorOf(yield* legacyCall(handler, 3, "echo"))?.code).toBe(-32011)
    }))

  it.effect("a middleware's own requirements are added to what the server needs", () =>
    Effect.gen(function*() {
      class Policy extends Context.Service<Policy, { readonly open: boolean }>()("test/Policy") {}
      const server: McpServer.McpServer<Policy> = makeServer().pipe(
        McpServer.middleware(Middleware.requirePrincipal({ allow: () => Effect.map(Policy, (p) => p.open) }))
      )
      const { handler } = yield* McpServer.toHandler(server)
      const closed = yield* legacyCall(handler, 1, "echo", { principal: "a" }).pipe(Effect.provideService(Policy, { open: false }))
      expect(errorOf(closed)?.code).toBe(Middleware.ErrorCode.Forbidden)
      const open = yield* legacyCall(handler, 2, "echo", { principal: "a" }).pipe(Effect.provideService(Policy, { open: true }))
      expect(open).toMatchObject({ result: text("echo") })
    }))
})

describe("Middleware.requirePrincipal", () => {
  const server = makeServer().pipe(
    McpServer.middleware(Middleware.requirePrincipal({
      allow: (request) => request.name !== "admin" || request.principal === "root",
      exempt: ["ping"]
    }))
  )

  it.effect("refuses a request with no principal (-32011) and one the principal may not make (-32012), in both eras", () =>
    Effect.gen(function*() {
      const { handler } = yield* McpServer.toHandler(server)
      for (const call of [legacyCall, modernCall]) {
        expect(errorOf(yield* call(handler, 1, "echo"))).toMatchObject({
          code: Middleware.ErrorCode.Unauthenticated,
          message: expect.stringContaining("Unauthenticated")
        })
        expect(errorOf(yield* call(handler, 2, "admin", { principal: "alice" }))).toEqual({
          code: Middleware.ErrorCode.Forbidden,
          message: "Forbidden: alice may not call tools/call admin",
          data: { method: "tools/call", name: "admin" }
        })
        expect(yield* call(handler, 3, "admin", { principal: "root" })).toMatchObject({ result: text("admin") })
        expect(yield* call(handler, 4, "echo", { principal: "alice" })).toMatchObject({ result: text("echo") })
      }
      // Exempt by method.
      expect(yield* handler(JsonRpc.request(5, "ping", {}), contextOf())).toEqual(JsonRpc.success(5, {}))
    }))
})

describe("Middleware.rateLimit", () => {
  it.effect("a principal's bucket empties after its capacity and refills with time; buckets are per principal", () =>
    Effect.gen(function*() {
      const server = makeServer().pipe(
        McpServer.middleware(Middleware.rateLimit({
          capacity: 2,
          refillEvery: "1 second",
          key: (request) => request.method === "ping" ? undefined : request.principal ?? "anonymous"
        }))
      )
      const { handler } = yield* McpServer.toHandler(server)
      const alice = { principal: "alice" }
      expect(yield* legacyCall(handler, 1, "echo", alice)).toMatchObject({ result: text("echo") })
      expect(yield* modernCall(handler, 2, "echo", alice)).toMatchObject({ result: text("echo") })
      expect(errorOf(yield* legacyCall(handler, 3, "echo", alice))).toEqual({
        code: Middleware.ErrorCode.RateLimited,
        message: "Rate limited: retry in 1000 ms",
        data: { retryAfterMs: 1000 }
      })
      // Another principal, and exempt requests, are not held back.
      expect(yield* legacyCall(handler, 4, "echo", { principal: "bob" })).toMatchObject({ result: text("echo") })
      expect(yield* handler(JsonRpc.request(5, "ping", {}), contextOf(alice))).toEqual(JsonRpc.success(5, {}))
      yield* TestClock.adjust("500 millis")
      expect(errorOf(yield* modernCall(handler, 6, "echo", alice))).toMatchObject({ data: { retryAfterMs: 500 } })
      yield* TestClock.adjust("500 millis")
      expect(yield* legacyCall(handler, 7, "echo", alice)).toMatchObject({ result: text("echo") })
      expect(errorOf(yield* legacyCall(handler, 8, "echo", alice))?.code).toBe(Middleware.ErrorCode.RateLimited)
    }))

  it.effect("past maxKeys, idle (full) buckets make room", () =>
    Effect.gen(function*() {
      const server = makeServer().pipe(McpServer.middleware(Middleware.rateLimit({ capacity: 1, refillEvery: "1 second", maxKeys: 2 })))
      const { handler } = yield* McpServer.toHandler(server)
      yield* legacyCall(handler, 1, "echo", { principal: "a" })
      yield* legacyCall(handler, 2, "echo", { principal: "b" })
      yield* TestClock.adjust("1 second")
      // a and b are full again and swept; a starts over with a full bucket.
      yield* legacyCall(handler, 3, "echo", { principal: "c" })
      expect(yield* legacyCall(handler, 4, "echo", { principal: "a" })).toMatchObject({ result: text("echo") })
      expect(errorOf(yield* legacyCall(handler, 5, "echo", { principal: "c" }))?.code).toBe(Middleware.ErrorCode.RateLimited)
    }))
})

describe("Middleware.SharedRateLimitBuckets", () => {
  const limited = () => makeServer().pipe(McpServer.middleware(Middleware.rateLimit({ capacity: 2, refillEvery: "1 second" })))

  it.effect("by default each server keeps its own buckets; given a shared store, two servers limit a principal together", () =>
    Effect.gen(function*() {
      const alice = { principal: "alice" }
      // Two instances of one server, each with its own rateLimit value.
      const one = (yield* McpServer.toHandler(limited())).handler
      const two = (yield* McpServer.toHandler(limited())).handler
      for (const [id, handler] of [[1, one], [2, one], [3, two], [4, two]] as const) {
        expect(yield* legacyCall(handler, id, "echo", alice)).toMatchObject({ result: text("echo") })
      }

      const shared = Middleware.makeRateLimitBuckets()
      const fleet = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Middleware.SharedRateLimitBuckets, shared)
      const a = (yield* McpServer.toHandler(limited())).handler
      const b = (yield* McpServer.toHandler(limited())).handler
      expect(yield* fleet(legacyCall(a, 5, "echo", alice))).toMatchObject({ result: text("echo") })
      expect(yield* fleet(modernCall(b, 6, "echo", alice))).toMatchObject({ result: text("echo") })
      expect(errorOf(yield* fleet(legacyCall(a, 7, "echo", alice)))).toEqual({
        code: Middleware.ErrorCode.RateLimited,
        message: "Rate limited: retry in 1000 ms",
        data: { retryAfterMs: 1000 }
      })
      expect(errorOf(yield* fleet(legacyCall(b, 8, "echo", alice)))?.code).toBe(Middleware.ErrorCode.RateLimited)
      // Bob's bucket is his own; the servers' own buckets were not touched by the shared store.
      expect(yield* fleet(legacyCall(b, 9, "echo", { principal: "bob" }))).toMatchObject({ result: text("echo") })
      expect(yield* legacyCall(a, 10, "echo", alice)).toMatchObject({ result: text("echo") })
      yield* TestClock.adjust("500 millis")
      expect(errorOf(yield* fleet(modernCall(a, 11, "echo", alice)))).toMatchObject({ data: { retryAfterMs: 500 } })
      yield* TestClock.adjust("500 millis")
      expect(yield* fleet(legacyCall(b, 12, "echo", alice))).toMatchObject({ result: text("echo") })
    }))

  it.effect("a store of another kind is asked with the key, the bucket's size and the time", () =>
    Effect.gen(function*() {
      const asked: Array<unknown> = []
      const store: Middleware.RateLimitBuckets = {
        take: (key, bucket, now) => Effect.sync(() => (asked.push({ key, bucket, now }), key === "alice" ? 250 : undefined))
      }
      const handler = (yield* McpServer.toHandler(limited())).handler
      const fleet = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Middleware.SharedRateLimitBuckets, store)
      expect(errorOf(yield* fleet(legacyCall(handler, 1, "echo", { principal: "alice" })))).toMatchObject({ data: { retryAfterMs: 250 } })
      expect(yield* fleet(legacyCall(handler, 2, "echo", { principal: "bob" }))).toMatchObject({ result: text("echo") })
      expect(asked).toEqual([
        { key: "alice", bucket: { capacity: 2, refillMs: 1000 }, now: 0 },
        { key: "bob", bucket: { capacity: 2, refillMs: 1000 }, now: 0 }
      ])
    }))

  it.effect("provided to the transport, the store reaches every request it serves", () =>
    Effect.gen(function*() {
      const shared = Middleware.makeRateLimitBuckets()
      const clients: Array<McpClient.McpClientShape<never>> = []
      for (let i = 0; i < 2; i++) {
        // Tool calls alone are counted: connecting sends requests of its own.
        const { handler } = yield* McpServer.toHandler(makeServer().pipe(McpServer.middleware(Middleware.rateLimit({
          capacity: 2,
          refillEvery: "1 second",
          key: (request) => request.method === "tools/call" ? "tools" : undefined
        }))))
        const pair = yield* Effect.provideService(InMemoryTransport.makePair(handler), Middleware.SharedRateLimitBuckets, shared)
        clients.push(yield* McpClient.fromTransport(pair.client, { protocol: MODERN, listen: false }))
      }
      const call = (i: number) => Effect.flip(clients[i]!.callTool({ name: "echo", arguments: { text: "hi" } })).pipe(Effect.option)
      // One bucket of 2 across both servers: the third call is refused.
      expect((yield* call(0))._tag).toBe("None")
      expect((yield* call(1))._tag).toBe("None")
      const refused = yield* call(0)
      expect(refused._tag).toBe("Some")
      expect(JSON.stringify(refused)).toContain("Rate limited")
    }))

  it.effect("an in-memory store past maxKeys drops idle (full) buckets", () =>
    Effect.gen(function*() {
      const store = Middleware.makeRateLimitBuckets({ maxKeys: 1 })
      const size = { capacity: 1, refillMs: 1000 }
      expect(yield* store.take("a", size, 0)).toBeUndefined()
      expect(yield* store.take("a", size, 0)).toBe(1000)
      expect(yield* store.take("b", size, 1000)).toBeUndefined()
      // a was full again and dropped to make room for b: it starts over full.
      expect(yield* store.take("a", size, 1000)).toBeUndefined()
    }))
})

describe("Middleware.logging", () => {
  it.effect("logs one annotated line per answered request", () =>
    Effect.gen(function*() {
      const lines: Array<{ message: unknown; annotations: Record<string, unknown> }> = []
      const capture = Logger.make((o) => {
        lines.push({ message: o.message, annotations: { ...o.fiber.getRef(References.CurrentLogAnnotations) } })
      })
      const server = makeServer().pipe(McpServer.middleware(Middleware.logging()))
      const { handler } = yield* McpServer.toHandler(server)
      yield* Effect.gen(function*() {
        yield* legacyCall(handler, 1, "echo", { principal: "alice", sessionId: "s1" })
        yield* modernCall(handler, 2, "boom")
      }).pipe(Effect.provide(Logger.layer([capture])))
      expect(lines.map((l) => l.message)).toEqual([["MCP tools/call echo ok"], ["MCP tools/call boom error -32050"]])
      expect(lines[0]!.annotations).toMatchObject({
        "mcp.method": "tools/call",
        "mcp.name": "echo",
        "mcp.era": "legacy",
        "mcp.session": "s1",
        "mcp.principal": "alice",
        "mcp.outcome": "ok",
        "mcp.durationMs": 0
      })
      expect(lines[1]!.annotations).toMatchObject({ "mcp.era": "modern", "mcp.outcome": "error -32050" })
    }))
})

describe("request spans", () => {
  it.effect("every request is a server span named by method and tool, with its attributes and outcome", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      const server = makeServer().pipe(McpServer.middleware(Middleware.requirePrincipal({ allow: (r) => r.name !== "admin" })))
      const { handler } = yield* McpServer.toHandler(server)
      yield* Effect.gen(function*() {
        yield* legacyCall(handler, 1, "echo", { principal: "alice", sessionId: "s1" })
        yield* modernCall(handler, "r-2" as unknown as number, "boom", { principal: "alice" })
        yield* legacyCall(handler, 3, "admin", { principal: "alice" })
        yield* handler(JsonRpc.request(4, "tools/list", {}), contextOf({ principal: "bob" }))
      }).pipe(Effect.provideService(Tracer.Tracer, tracer))
      expect(spans.map((s) => s.name)).toEqual(["tools/call echo", "tools/call boom", "tools/call admin", "tools/list"])
      expect(spans.every((s) => s.kind === "server" && s.status._tag === "Ended")).toBe(true)
      const attrs = spans.map((s) => Object.fromEntries(s.attributes))
      expect(attrs[0]).toEqual({
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool",
        "mcp.era": "legacy",
        "jsonrpc.request.id": "1",
        "mcp.session.id": "s1",
        "mcp.principal.id": "alice",
        "mcp.protocol.version": expect.any(String),
        "mcp.outcome": "ok"
      })
      expect(attrs[1]).toMatchObject({
        "mcp.era": "modern",
        "mcp.protocol.version": MODERN,
        "jsonrpc.request.id": "r-2",
        "mcp.outcome": "error",
        "error.type": "-32050",
        "rpc.response.status_code": "-32050"
      })
      expect(attrs[1]!["mcp.session.id"]).toBeUndefined()
      // An error reply is a failed span, its status message the JSON-RPC message.
      const status = spans[1]!.status
      expect(status._tag === "Ended" && status.exit._tag === "Failure" ? Cause.squash(status.exit.cause) : undefined)
        .toMatchObject({ message: "boom" })
      // Refused by the middleware: the span is around it.
      expect(attrs[2]).toMatchObject({ "mcp.outcome": "error", "error.type": String(Middleware.ErrorCode.Forbidden) })
      expect(attrs[3]).toMatchObject({ "mcp.method.name": "tools/list", "mcp.principal.id": "bob", "mcp.outcome": "ok" })
    }))

  it.effect("a stateless request answered input_required ends its span with that outcome", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      const { handler } = yield* McpServer.toHandler(makeAskingServer({ stateless: true }).server)
      const clientCapabilities = { elicitation: { form: {} } }
      const params = { name: "counted", _meta: RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities }) }
      const reply = yield* handler(JsonRpc.request(1, "tools/call", params), contextOf()).pipe(
        Effect.provideService(Tracer.Tracer, tracer)
      )
      expect(reply).toMatchObject({ result: { resultType: "input_required" } })
      expect(spans.map((s) => [s.name, s.attributes.get("mcp.outcome")])).toEqual([["tools/call counted", "input_required"]])
    }))

  it.effect("an interrupted request (the client cancelled) ends its span with outcome interrupted", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const { handler } = yield* McpServer.toHandler(makeServer({ started, release }))
      const fiber = yield* legacyCall(handler, 1, "wait").pipe(Effect.provideService(Tracer.Tracer, tracer), Effect.forkChild)
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      expect(spans.map((s) => s.name)).toEqual(["tools/call wait"])
      expect(spans[0]!.status._tag).toBe("Ended")
      expect(spans[0]!.attributes.get("mcp.outcome")).toBe("interrupted")
    }))

  it.effect("over the in-memory transport, both eras' requests are spans, the handshake's included", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      yield* Effect.gen(function*() {
        for (const protocol of ["2025-11-25", MODERN] as const) {
          const { handler } = yield* McpServer.toHandler(makeServer())
          const pair = yield* InMemoryTransport.makePair(handler)
          const client = yield* McpClient.fromTransport(pair.client, { protocol, listen: false })
          const result = yield* client.callTool({ name: "echo", arguments: { text: "hi" } })
          expect(result.content).toEqual([{ type: "text", text: "hi" }])
        }
      }).pipe(Effect.scoped, Effect.provideService(Tracer.Tracer, tracer))
      const served = spans.filter((s) => s.kind === "server")
      const calls = served.filter((s) => s.name === "tools/call echo").map((s) => s.attributes.get("mcp.era"))
      expect(calls).toEqual(["legacy", "modern"])
      expect(served.some((s) => s.name === "initialize")).toBe(true)
      // The client's span of each call is the parent of the server's (the trace context went in `_meta`).
      for (const call of served.filter((s) => s.name === "tools/call echo")) {
        const parent = spans.find((s) => s.spanId === (call.parent._tag === "Some" ? call.parent.value.spanId : undefined))
        expect(parent?.kind).toBe("client")
        expect(parent?.name).toBe("tools/call echo")
      }
    }))
})

describe("over HTTP: authenticate → principal → rate limit", () => {
  /** `Authorization: Bearer <name>` names the principal `<name>`; anything else is 401. */
  const authenticate: HttpServerTransport.Authenticate = (request) => {
    const m = /^Bearer (\w+)$/.exec(request.headers.authorization ?? "")
    return m === null
      ? Effect.fail(new HttpServerTransport.Unauthorized({ wwwAuthenticate: "Bearer realm=\"mcp\"" }))
      : Effect.succeed({ id: m[1]! })
  }

  const send = (url: string, body: unknown, headers: Record<string, string>) =>
    Effect.promise(async () => {
      const res = await post(url, body, headers)
      const raw = await res.text()
      // A JSON reply, or the one message of an SSE reply.
      const json = raw.startsWith("{") ? raw : raw.split("\n").find((l) => l.startsWith("data: {"))?.slice(6)
      return { status: res.status, body: json === undefined ? undefined : JSON.parse(json) as Record<string, any> }
    })

  it.live("a handshake session and stateless POSTs are limited per authenticated principal", () =>
    Effect.gen(function*() {
      const server = makeServer().pipe(
        McpServer.middleware(Middleware.requirePrincipal()),
        McpServer.middleware(Middleware.rateLimit({ capacity: 2, refillEvery: "1 hour" }))
      )
      const handle = yield* McpServer.toHandler(server)
      const { url } = yield* serve({ authenticate }, () => handle.handler)
      const auth = (who: string) => ({ authorization: `Bearer ${who}` })

      // Handshake era: the session's requests carry the principal (initialize took alice's first token).
      const sessionId = yield* Effect.promise(() => openSession(url, "2025-11-25", auth("alice")))
      const inSession = { ...auth("alice"), "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
      const call = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } })
      expect((yield* send(url, call(2), inSession)).body?.result).toEqual(text("hi"))
      const limited = yield* send(url, call(3), inSession)
      expect(limited.body?.error).toEqual({
        code: Middleware.ErrorCode.RateLimited,
        message: expect.stringMatching(/^Rate limited: retry in \d+ ms$/),
        data: { retryAfterMs: expect.any(Number) }
      })

      // Stateless era: the same principal's bucket is empty; another principal's is not.
      const modern = (id: number) => {
        const params = { name: "echo", arguments: { text: "hi" }, _meta: modernMeta() }
        return {
          body: { jsonrpc: "2.0", id, method: "tools/call", params },
          headers: RequestMeta.standardHeaders(MODERN, "tools/call", params)
        }
      }
      const m1 = modern(4)
      expect((yield* send(url, m1.body, { ...m1.headers, ...auth("alice") })).body?.error?.code).toBe(Middleware.ErrorCode.RateLimited)
      const m2 = modern(5)
      const bob = yield* send(url, m2.body, { ...m2.headers, ...auth("bob") })
      expect(bob.status).toBe(200)
      expect(bob.body?.result).toMatchObject(text("hi"))

      // No credentials: the transport refuses before any middleware runs.
      expect((yield* send(url, m2.body, m2.headers)).status).toBe(401)
    }).pipe(Effect.scoped))

  it.live("a handler in an HTTP session of the handshake era sees the principal authenticate named", () =>
    Effect.gen(function*() {
      const seen: Array<string | undefined> = []
      const server = makeServer().pipe(
        McpServer.middleware((next) => (request) => Effect.andThen(Effect.sync(() => seen.push(request.principal)), next(request)))
      )
      const handle = yield* McpServer.toHandler(server)
      const { url } = yield* serve({ authenticate }, () => handle.handler)
      const sessionId = yield* Effect.promise(() => openSession(url, "2025-11-25", { authorization: "Bearer carol" }))
      yield* send(url, { jsonrpc: "2.0", id: 2, method: "ping" }, {
        authorization: "Bearer carol",
        "mcp-session-id": sessionId,
        "mcp-protocol-version": "2025-11-25"
      })
      expect(seen).toEqual(["carol", "carol"])
    }).pipe(Effect.scoped))
})
