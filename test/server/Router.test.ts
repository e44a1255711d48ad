import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Option, Schema, SchemaGetter, Stream } from "effect"
import type { ClientTransportShape } from "../../src/client/ClientTransport.ts"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import * as JsonRpc from "../../src/JsonRpc.ts"
import { RpcError, TransportClosed } from "../../src/McpError.ts"
import type { HandlerContext } from "../../src/server/Handler.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as Router from "../../src/server/Router.ts"
import { makeServer } from "../fixtures/router-stdio-server.ts"
import { TestClock } from "effect/testing"

const fixturePath = new URL("../fixtures/router-stdio-server.ts", import.meta.url).pathname

const initParams = (protocolVersion = "2025-11-25", capabilities: object = {}) => ({
  protocolVersion,
  capabilities,
  clientInfo: { name: "raw-client", version: "1.0.0" }
})

/** A raw transport that has done the handshake by hand. */
const initialize = (t: ClientTransportShape, capabilities: object = {}) =>
  Effect.gen(function*() {
    const result = yield* t.request("initialize", initParams("2025-11-25", capabilities))
    yield* t.notify("notifications/initialized")
    return result
  })

const rpcError = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (e) => {
    if (!(e instanceof RpcError)) throw new Error(`expected an RpcError, got ${String(e)}`)
    return e
  })

/** Starts collecting a stream now (subscribed when this returns). */
const collect = <A, E>(stream: Stream.Stream<A, E>, n: number) =>
  Stream.take(stream, n).pipe(Stream.runCollect, Effect.forkChild({ startImmediately: true }))

const pairFor = (server: McpServer.McpServer, options?: InMemoryTransport.InMemoryOptions) =>
  Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(server)
    const pair = yield* InMemoryTransport.makePair(handle.handler, options)
    return { handle, pair, t: pair.client }
  })

describe("McpServer (server-side lifecycle)", () => {
  describe("initialize and the initialized gate (in-memory)", () => {
    it.effect("before initialize: everything but ping and initialize is rejected with -32002", () =>
      Effect.gen(function*() {
        const { t } = yield* pairFor(makeServer())
        expect(yield* t.request("ping")).toEqual({})
        const error = yield* rpcError(t.request("tools/list"))
        expect(error.code).toBe(McpServer.DEFAULT_NOT_INITIALIZED_CODE)
        expect(error.rpcMessage).toContain("send initialize first")
        expect(error.data).toEqual({ method: "tools/list" })
      }))

    it.effect("version negotiation: a supported version is echoed, anything else gets our latest", () =>
      Effect.gen(function*() {
        const { t } = yield* pairFor(makeServer())
        for (const version of ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]) {
          expect(yield* t.request("initialize", initParams(version))).toMatchObject({ protocolVersion: version })
        }
        const result = yield* t.request("initialize", initParams("1999-01-01"))
        expect(result).toMatchObject({
          protocolVersion: "2025-11-25",
          serverInfo: { name: "router-fixture", version: "1.0.0" },
          instructions: "A fixture server for tests."
        })
      }))

    it.effect("declared capabilities: implied by the methods, explicit ones merged over them", () =>
      Effect.gen(function*() {
        const { t } = yield* pairFor(makeServer())
        const result = (yield* t.request("initialize", initParams())) as { capabilities: unknown }
        expect(result.capabilities).toEqual({
          logging: {},
          tools: { listChanged: true },
          resources: { subscribe: true, listChanged: true },
          prompts: {},
          completions: {}
        })
        const bare = McpServer.make({ serverInfo: { name: "bare", version: "0" } })
        expect(McpServer.capabilities(bare)).toEqual({ logging: {} })
      }))

    it.effect("invalid initialize params: -32602 naming the problem", () =>
      Effect.gen(function*() {
        const { t } = yield* pairFor(makeServer())
        const error = yield* rpcError(t.request("initialize", { protocolVersion: "2025-11-25" }))
        expect(error.code).toBe(-32602)
        expect(error.rpcMessage).toContain("clientInfo")
      }))

    it.effect("after initialize but before notifications/initialized: rejected once the grace period ends", () =>
      Effect.gen(function*() {
        const server = McpServer.make({ serverInfo: { name: "gate", version: "1" }, initializedGracePeriod: "2 seconds" })
          .pipe(McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [] })))
        const { t } = yield* pairFor(server)
        yield* t.request("initialize", initParams())
        const early = yield* rpcError(t.request("tools/list")).pipe(Effect.forkChild({ startImmediately: true }))
        // Let the request reach the server (its grace timer starts there).
        for (let i = 0; i < 200; i++) yield* Effect.yieldNow
        yield* TestClock.adjust("2100 millis")
        const error = yield* Fiber.join(early)
        expect(error.code).toBe(-32002)
        expect(error.rpcMessage).toContain("notifications/initialized")
        // Within the grace period, the notification lets a waiting request through.
        const waiting = yield* t.request("tools/list").pipe(Effect.forkChild({ startImmediately: true }))
        yield* TestClock.adjust("500 millis")
        yield* t.notify("notifications/initialized")
        expect(yield* Fiber.join(waiting)).toEqual({ tools: [] })
      }))

    it.effect("enforceInitialized: false serves requests without a handshake (stateless HTTP)", () =>
      Effect.gen(function*() {
        const server = McpServer.make({ serverInfo: { name: "stateless", version: "1" }, enforceInitialized: false })
          .pipe(McpServer.method("tools/list", {}, (_, ctx) => Effect.succeed({ tools: [], v: ctx.session.protocolVersion })))
        const { t } = yield* pairFor(server)
        expect(yield* t.request("tools/list")).toEqual({ tools: [], v: "2025-11-25" })
      }))

    it.effect("a repeated initialize starts the session over", () =>
      Effect.gen(function*() {
        const { t, handle } = yield* pairFor(makeServer())
        yield* initialize(t)
        yield* t.request("tools/list")
        yield* t.request("initialize", initParams("2025-03-26"))
        const [session] = yield* handle.sessions
        expect(session).toMatchObject({ phase: "initializing", protocolVersion: "2025-03-26" })
      }))
  })

  describe("method table (in-memory)", () => {
    it.effect("bad params: -32602 with the decoder's message; unknown method: -32601", () =>
      Effect.gen(function*() {
        const { t } = yield* pairFor(makeServer())
        yield* initialize(t)
        const bad = yield* rpcError(t.request("tools/call", { arguments: {} }))
        expect(bad.code).toBe(-32602)
        expect(bad.rpcMessage).toContain("Invalid params")
        expect(bad.rpcMessage).toContain("name")
        const unknown = yield* rpcError(t.request("no/such/method"))
        expect(unknown.code).toBe(-32601)
        expect(unknown.data).toEqual({ method: "no/such/method" })
      }))

    it.effect("a handler's RpcError is sent as is; other failures and defects are -32603 without details", () =>
      Effect.gen(function*() {
        const server = McpServer.make({ serverInfo: { name: "errors", version: "1" } }).pipe(
          McpServer.method("x/rpc", {}, () => Effect.fail(new RpcError({ code: -32042, rpcMessage: "nope", data: { a: 1 } }))),
          McpServer.method("x/fail", {}, () => Effect.fail(new Error("secret detail"))),
          McpServer.method("x/die", {}, () => Effect.die(new Error("secret defect"))),
          McpServer.method("x/void", {}, () => Effect.void)
        )
        const { t } = yield* pairFor(server)
        yield* initialize(t)
        expect(yield* rpcError(t.request("x/rpc"))).toMatchObject({ code: -32042, rpcMessage: "nope", data: { a: 1 } })
        const failed = yield* rpcError(t.request("x/fail"))
        expect(failed.code).toBe(-32603)
        expect(JSON.stringify(failed.data ?? null)).not.toContain("secret")
        expect((yield* rpcError(t.request("x/die"))).code).toBe(-32603)
        expect(yield* t.request("x/void")).toEqual({})
      }))

    it.effect("a result schema encodes the handler's value", () =>
      Effect.gen(function*() {
        const server = McpServer.make({ serverInfo: { name: "encode", version: "1" } }).pipe(
          McpServer.method(
            "x/bytes",
            { result: Schema.Struct({ data: Schema.Uint8ArrayFromBase64 }) },
            () => Effect.succeed({ data: new Uint8Array([104, 105]) })
          )
        )
        const { t } = yield* pairFor(server)
        yield* initialize(t)
        expect(yield* t.request("x/bytes")).toEqual({ data: "aGk=" })
      }))

    it.effect("notification handlers run with the session; their failures are dropped", () =>
      Effect.gen(function*() {
        const got = yield* Deferred.make<string>()
        const server = McpServer.make({ serverInfo: { name: "notes", version: "1" } }).pipe(
          McpServer.notification("notifications/roots/list_changed", {}, (_, ctx) =>
            Deferred.succeed(got, ctx.session.clientInfo.name)),
          McpServer.notification("notifications/boom", {}, () => Effect.fail("ignored"))
        )
        const { t } = yield* pairFor(server)
        yield* initialize(t)
        yield* t.notify("notifications/boom")
        yield* t.notify("notifications/roots/list_changed")
        expect(yield* Deferred.await(got)).toBe("raw-client")
        expect(yield* t.request("ping")).toEqual({})
      }))
  })

  describe("handler context (in-memory)", () => {
    it.effect("progress is sent only when the request carried a progress token", () =>
      Effect.gen(function*() {
        const { t } = yield* pairFor(makeServer())
        yield* initialize(t)
        const progress = yield* collect(Stream.filter(t.notifications, (n) => n.method === "notifications/progress"), 3)
        const without = yield* t.request("tools/call", { name: "progress", arguments: { steps: 2 } })
        expect(without).toMatchObject({ structuredContent: { hadToken: false } })
        const withToken = yield* t.request("tools/call", {
          name: "progress",
          arguments: { steps: 3 },
          _meta: { progressToken: "tok-1" }
        })
        expect(withToken).toMatchObject({ structuredContent: { hadToken: true } })
        const received = yield* Fiber.join(progress)
        expect(received.map((n) => n.params)).toEqual([
          { progressToken: "tok-1", progress: 1, total: 3, message: "step 1" },
          { progressToken: "tok-1", progress: 2, total: 3, message: "step 2" },
          { progressToken: "tok-1", progress: 3, total: 3, message: "step 3" }
        ])
      }))

    it.effect("the context's capabilities work destructured, and each is one function per request", () =>
      Effect.gen(function*() {
        const seen: Array<unknown> = []
        const server = McpServer.make({ serverInfo: { name: "destructure", version: "1" } }).pipe(
          McpServer.method("tools/call", {}, (_params, ctx) => {
            const { progress, log, requestId, progressToken } = ctx
            seen.push(ctx.progress === progress && ctx.log === log, requestId, progressToken)
            return Effect.as(Effect.andThen(progress(1, { total: 1 }), log("info", "hi")), { content: [] })
          })
        )
        const { t } = yield* pairFor(server)
        yield* initialize(t)
        const notes = yield* collect(t.notifications, 2)
        yield* t.request("tools/call", { name: "x", _meta: { progressToken: "p" } })
        expect((yield* Fiber.join(notes)).map((n) => [n.method, n.params])).toEqual([
          ["notifications/progress", { progressToken: "p", progress: 1, total: 1 }],
          ["notifications/message", { level: "info", data: "hi" }]
        ])
        expect(seen).toEqual([true, expect.anything(), "p"])
      }))

    it.effect("log messages respect the client's logging/setLevel; a bad level is -32602", () =>
      Effect.gen(function*() {
        const { t } = yield* pairFor(makeServer())
        yield* initialize(t)
        const logs = yield* collect(Stream.filter(t.notifications, (n) => n.method === "notifications/message"), 2)
        yield* t.request("tools/call", { name: "log", arguments: { level: "debug", text: "a" } })
        yield* t.request("logging/setLevel", { level: "error" })
        yield* t.request("tools/call", { name: "log", arguments: { level: "warning", text: "dropped" } })
        yield* t.request("tools/call", { name: "log", arguments: { level: "critical", text: "b" } })
        const received = yield* Fiber.join(logs)
        expect(received.map((n) => n.params)).toEqual([
          { level: "debug", logger: "fixture", data: "a" },
          { level: "critical", logger: "fixture", data: "b" }
        ])
        expect((yield* rpcError(t.request("logging/setLevel", { level: "loud" }))).code).toBe(-32602)
      }))

    it.effect("requests to the client need its capability: refused before sending, served when declared", () =>
      Effect.gen(function*() {
        const { t } = yield* pairFor(makeServer())
        let asked = 0
        yield* t.setRequestHandler((request) =>
          Effect.sync(() => {
            asked++
            return request.method === "roots/list" ? { roots: [{ uri: "file:///x" }] } : {}
          })
        )
        yield* initialize(t)
        const refused = yield* rpcError(t.request("tools/call", { name: "roots" }))
        expect(refused.rpcMessage).toContain("did not declare the roots capability")
        expect(asked).toBe(0)
        yield* t.request("initialize", initParams("2025-11-25", { roots: {} }))
        yield* t.notify("notifications/initialized")
        expect(yield* t.request("tools/call", { name: "roots" })).toMatchObject({
          content: [{ type: "text", text: "file:///x" }]
        })
        expect(asked).toBe(1)
      }))

    it.effect("notifications/cancelled interrupts the handler and no reply is sent", () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<JsonRpc.RequestId>()
        const interrupted = yield* Deferred.make<void>()
        const server = McpServer.make({ serverInfo: { name: "cancel", version: "1" } }).pipe(
          McpServer.method("x/hang", {}, (_, ctx) =>
            Deferred.succeed(started, ctx.requestId).pipe(
              Effect.andThen(Effect.never),
              Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
            ))
        )
        const { t, pair } = yield* pairFor(server)
        yield* initialize(t)
        const fiber = yield* t.request("x/hang").pipe(Effect.forkChild({ startImmediately: true }))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(fiber)
        yield* Deferred.await(interrupted)
        const diagnostics = yield* collect(t.diagnostics, 1)
        // The dispatcher's fiber finishes right after the handler's.
        for (let i = 0; i < 100 && (yield* pair.server.inFlight) > 0; i++) yield* Effect.yieldNow
        expect(yield* pair.server.inFlight).toBe(0)
        // No reply arrived for the cancelled request (it would be an unknown response).
        expect(yield* t.request("ping")).toEqual({})
        expect(diagnostics.pollUnsafe()).toBeUndefined()
        expect(yield* t.pendingCount).toBe(0)
      }))

    it.effect("notifyAll reaches initialized sessions", () =>
      Effect.gen(function*() {
        const { t, handle } = yield* pairFor(makeServer())
        yield* initialize(t)
        yield* t.request("ping")
        const changed = yield* collect(t.notifications, 1)
        yield* t.request("tools/list")
        yield* handle.notifyAll("notifications/tools/list_changed")
        expect((yield* Fiber.join(changed))[0]?.method).toBe("notifications/tools/list_changed")
      }))
  })

  describe("per-session state", () => {
    /** A context for driving the handler directly, as a transport with session ids would. */
    const contextFor = (sessionId: string | undefined, sent: Array<unknown>): HandlerContext => ({
      sessionId,
      requestId: undefined,
      notify: (method, params) => Effect.sync(() => void sent.push({ method, params })),
      request: () => Effect.fail(new TransportClosed({ reason: "no client" }))
    })

    it.effect("sessions are keyed by the transport's session id and end when the transport says so", () =>
      Effect.gen(function*() {
        const handle = yield* McpServer.toHandler(makeServer())
        const sent: Array<unknown> = []
        const a = contextFor("a", sent)
        const b = contextFor("b", sent)
        const reply = (message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification, ctx: HandlerContext) =>
          handle.handler(message, ctx)
        yield* reply(JsonRpc.request(1, "initialize", initParams("2025-06-18")), a)
        yield* reply(JsonRpc.notification("notifications/initialized"), a)
        yield* reply(JsonRpc.request(1, "initialize", initParams("2024-11-05")), b)
        expect(yield* reply(JsonRpc.request(2, "tools/list"), a)).toMatchObject({ result: { tools: expect.any(Array) } })
        expect(yield* reply(JsonRpc.request(2, "ping"), b)).toEqual(JsonRpc.success(2, {}))
        const sessions = yield* handle.sessions
        expect(sessions.map((s) => [s.sessionId, s.phase, s.protocolVersion])).toEqual([
          ["a", "ready", "2025-06-18"],
          ["b", "initializing", "2024-11-05"]
        ])
        yield* handle.notifyAll("notifications/tools/list_changed")
        expect(sent).toEqual([{ method: "notifications/tools/list_changed", params: undefined }])
        yield* handle.handler.sessionEnded!("a")
        expect(yield* reply(JsonRpc.request(3, "tools/list"), a)).toMatchObject({ error: { code: -32002 } })
      }))

    it("Router.dispatch is total over failures", () => {
      const router = Router.add(Router.empty<void>(), "m", { params: Schema.Struct({ n: Schema.Number }) }, (p) =>
        Effect.succeed(p.n * 2))
      const run = (params: unknown) => Effect.runSync(Router.dispatch(router, JsonRpc.request(1, "m", params), undefined))
      expect(run({ n: 2 })).toEqual(JsonRpc.success(1, 4))
      expect(run({ n: "x" })).toMatchObject({ error: { code: -32602 } })
      expect(Effect.runSync(Router.dispatch(router, JsonRpc.request(1, "other"), undefined))).toMatchObject({
        error: { code: -32601 }
      })
    })
  })

  describe("Router.dispatch on each path of a route", () => {
    const request = (method: string, params?: unknown) => JsonRpc.request(7, method, params)
    const run = <R>(router: Router.Router<void, R>, method: string, params?: unknown) =>
      Effect.runSync(Router.dispatch(router, request(method, params), undefined) as Effect.Effect<JsonRpc.JsonRpcResponse>)
    // A params schema with an async step decodes through the fiber, not as an Exit.
    const Slow = Schema.Struct({
      n: Schema.Number.pipe(Schema.decodeTo(Schema.Number, {
        decode: SchemaGetter.transformEffect((n: number) => Effect.as(Effect.yieldNow, n)),
        encode: SchemaGetter.passthrough()
      }))
    })

    it("a handler that throws instead of returning an effect is answered -32603, as one that dies", () => {
      const router = Router.add(Router.empty<void>(), "m", {}, (): Effect.Effect<unknown> => {
        throw new Error("thrown")
      })
      expect(run(router, "m")).toMatchObject({ id: 7, error: { code: -32603 } })
    })

    it("a result its schema cannot encode is -32603; one it encodes is sent encoded; no schema sends it as it is", () => {
      const Result = Schema.Struct({ data: Schema.Uint8ArrayFromBase64 })
      const router = Router.add(
        Router.add(Router.empty<void>(), "bad", { result: Result }, () => Effect.succeed({ data: "not bytes" } as never)),
        "good",
        { result: Result },
        () => Effect.succeed({ data: new Uint8Array([104, 105]) })
      )
      const plain = Router.add(router, "plain", {}, () => Effect.succeed(undefined))
      expect(run(plain, "bad")).toMatchObject({ id: 7, error: { code: -32603 } })
      expect(run(plain, "good")).toEqual(JsonRpc.success(7, { data: "aGk=" }))
      // An absent result is an empty one.
      expect(run(plain, "plain")).toEqual(JsonRpc.success(7, {}))
    })

    it("toRpcError chooses the reply to a failure that is no RpcError", () => {
      class Teapot {}
      const router = Router.add(Router.empty<void>(), "m", {}, () => Effect.fail(new Teapot()))
      const mapped = Effect.runSync(
        Router.dispatch(router, request("m"), undefined, (e) => e instanceof Teapot ? new RpcError({ code: -32042, rpcMessage: "teapot" }) : undefined)
      )
      expect(mapped).toEqual(JsonRpc.failure(7, -32042, "teapot"))
    })

    it.effect("params decoded through an async step: decoded ones are served, others answered -32602 with the message", () =>
      Effect.gen(function*() {
        const router = Router.add(Router.empty<void>(), "m", { params: Slow }, (p) => Effect.succeed(p.n + 1))
        expect(yield* Router.dispatch(router, request("m", { n: 1 }), undefined)).toEqual(JsonRpc.success(7, 2))
        const bad = yield* Router.dispatch(router, request("m", { n: "x" }), undefined)
        expect(bad).toMatchObject({ id: 7, error: { code: -32602 } })
        expect("error" in bad && bad.error.message).toContain("Invalid params")
      }))
  })

  describe("over stdio (the fixture server as a child process)", { timeout: 60_000 }, () => {
    const fixture: StdioClientTransport.StdioClientConfig = {
      command: process.execPath,
      args: [fixturePath],
      shutdown: { gracePeriod: "300 millis", killAfter: "300 millis" }
    }

    it.live("calls before initialized, bad params, unknown methods, progress only with a token, cancellation", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(fixture)
        expect((yield* rpcError(t.request("tools/list"))).code).toBe(-32002)
        expect(yield* t.request("ping")).toEqual({})
        yield* t.request("initialize", initParams())
        // Not yet initialized: rejected after the grace period.
        expect((yield* rpcError(t.request("tools/list"))).rpcMessage).toContain("notifications/initialized")
        yield* t.notify("notifications/initialized")
        expect(yield* t.request("tools/list")).toMatchObject({ tools: expect.any(Array) })
        expect((yield* rpcError(t.request("tools/call", {}))).code).toBe(-32602)
        expect((yield* rpcError(t.request("nope"))).code).toBe(-32601)

        const progress = yield* collect(Stream.filter(t.notifications, (n) => n.method === "notifications/progress"), 2)
        expect(yield* t.request("tools/call", { name: "progress", arguments: { steps: 2 } })).toMatchObject({
          structuredContent: { hadToken: false }
        })
        yield* t.request("tools/call", { name: "progress", arguments: { steps: 2 }, _meta: { progressToken: 7 } })
        expect((yield* Fiber.join(progress)).map((n) => (n.params as { progressToken: unknown }).progressToken)).toEqual([7, 7])

        const started = yield* collect(Stream.filter(t.notifications, (n) => n.method === "notifications/progress"), 1)
        const slow = yield* t.request("tools/call", { name: "slow", arguments: { ms: 60_000 }, _meta: { progressToken: "s" } })
          .pipe(Effect.forkChild)
        yield* Fiber.join(started)
        yield* Fiber.interrupt(slow)
        let ids: ReadonlyArray<unknown> = []
        for (let i = 0; i < 500 && ids.length === 0; i++) {
          const r = (yield* t.request("tools/call", { name: "cancelled" })) as { structuredContent: { ids: Array<unknown> } }
          ids = r.structuredContent.ids
          if (ids.length === 0) yield* Effect.sleep("10 millis")
        }
        expect(ids.length).toBe(1)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
  })

  describe("over Streamable HTTP (one handler, many sessions)", { timeout: 60_000 }, () => {
    /** Our router behind the HTTP server transport on a free loopback port. */
    const httpServer = Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(makeServer())
      const services = yield* Layer.build(HttpServerTransport.layer(handle.handler, { port: 0 }))
      const transport = Context.get(services, HttpServerTransport.HttpServerTransport)
      return { handle, transport, url: Option.getOrThrow(transport.url) }
    })

    it.live("the lifecycle per session: gate, negotiation, bad params, progress only with a token", () =>
      Effect.gen(function*() {
        const { handle, transport, url } = yield* httpServer
        const t = yield* StreamableHttpClientTransport.make({ url })
        const init = yield* t.request("initialize", initParams("2025-06-18"))
        expect(init).toMatchObject({ protocolVersion: "2025-06-18", serverInfo: { name: "router-fixture" } })
        yield* t.setProtocolVersion("2025-06-18")
        yield* t.notify("notifications/initialized")
        expect(yield* t.request("tools/list")).toMatchObject({ tools: expect.any(Array) })
        expect((yield* rpcError(t.request("tools/call", { arguments: {} }))).code).toBe(-32602)
        expect((yield* rpcError(t.request("nope"))).code).toBe(-32601)

        // A second session, still before notifications/initialized, is gated on its own.
        const t2 = yield* StreamableHttpClientTransport.make({ url })
        yield* t2.request("initialize", initParams("2025-03-26"))
        const sessions = yield* handle.sessions
        expect(sessions.map((s) => [s.phase, s.protocolVersion]).sort()).toEqual([
          ["initializing", "2025-03-26"],
          ["ready", "2025-06-18"]
        ])
        expect(new Set(sessions.map((s) => s.sessionId))).toEqual(new Set(yield* transport.sessionIds))
        yield* t2.setProtocolVersion("2025-03-26")
        const early = yield* rpcError(t2.request("tools/list"))
        expect(early.code).toBe(-32002)
        expect(early.rpcMessage).toContain("notifications/initialized")

        const progress = yield* collect(Stream.filter(t.notifications, (n) => n.method === "notifications/progress"), 2)
        const plain = yield* t.request("tools/call", { name: "progress", arguments: { steps: 2 } })
        expect(plain).toMatchObject({ structuredContent: { hadToken: false } })
        yield* t.request("tools/call", { name: "progress", arguments: { steps: 2 }, _meta: { progressToken: "h" } })
        expect((yield* Fiber.join(progress)).map((n) => (n.params as { progress: number }).progress)).toEqual([1, 2])

        // When the transport's sessions end, their state goes too.
        yield* transport.closeSession((yield* transport.sessionIds)[0]!)
        expect((yield* handle.sessions).length).toBe(1)
      }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

    it.live("McpClient over HTTP: typed calls, server requests, logging and cancellation reaching the handler", () =>
      Effect.gen(function*() {
        const { url } = yield* httpServer
        const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), {
          protocol: "2025-11-25",
          handlers: {
            createMessage: () =>
              Effect.succeed({ role: "assistant" as const, model: "m", content: { type: "text" as const, text: "sampled" } }),
            elicit: () => Effect.succeed({ action: "accept" as const, content: { name: "Grace" } }),
            listRoots: () => Effect.succeed([{ uri: "file:///srv" }])
          }
        })
        expect(client.connection.kind).toBe("streamable-http")
        // The server calls the client back while serving a request (on that request's stream).
        expect((yield* client.callTool({ name: "sample" })).content[0]).toMatchObject({ text: "m: sampled" })
        expect((yield* client.callTool({ name: "elicit" })).structuredContent).toEqual({
          action: "accept",
          content: { name: "Grace" }
        })
        expect((yield* client.callTool({ name: "roots" })).content[0]).toMatchObject({ text: "file:///srv" })
        expect(client.protocolVersion).toBe("2025-11-25")
        const tools = yield* client.listAllTools()
        expect(tools.length).toBe(13)
        const events = yield* Stream.runCollect(client.callToolStream({ name: "progress", arguments: { steps: 2 } }))
        expect(events.map((e) => e._tag)).toEqual(["Progress", "Progress", "Result"])
        const logs = yield* collect(client.logging, 1)
        yield* client.setLoggingLevel("error")
        yield* client.callTool({ name: "log", arguments: { level: "info", text: "dropped" } })
        yield* client.callTool({ name: "log", arguments: { level: "alert", text: "kept" } })
        expect((yield* Fiber.join(logs)).map((l) => l.data)).toEqual(["kept"])

        // Cancel once the handler runs: over HTTP the cancel travels on its own POST and could
        // otherwise overtake the request it cancels.
        const started = yield* Deferred.make<void>()
        const slow = yield* client.callTool({ name: "slow", arguments: { ms: 60_000 } }, {
          onProgress: () => Deferred.succeed(started, undefined).pipe(Effect.asVoid)
        }).pipe(Effect.forkChild)
        yield* Deferred.await(started)
        yield* Fiber.interrupt(slow)
        let ids: ReadonlyArray<unknown> = []
        for (let i = 0; i < 500 && ids.length === 0; i++) {
          ids = ((yield* client.callTool({ name: "cancelled" })).structuredContent as { ids: Array<unknown> }).ids
          if (ids.length === 0) yield* Effect.sleep("10 millis")
        }
        expect(ids.length).toBe(1)
      }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))
  })
})
