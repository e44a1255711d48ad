/**
 * One Streamable HTTP endpoint for both eras: a POST naming 2026-07-28 in
 * `MCP-Protocol-Version` is served on its own (checked against its headers,
 * no session), everything else by the sessions, on a real loopback server
 * with `McpServer` (`stateless: true`) behind it.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Context, Deferred, Effect, Layer, Option, type Scope } from "effect"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../../../src/client/StreamableHttpClientTransport.ts"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import { eventually, isClean, post, run } from "./helpers.ts"

const MODERN = "2026-07-28"
const ClientEnv = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)

const tools = [
  { name: "echo", inputSchema: { type: "object", properties: { text: { type: "string" } } } },
  {
    name: "region_echo",
    inputSchema: {
      type: "object",
      properties: { region: { type: "string", "x-mcp-header": "Region" }, count: { type: "integer", "x-mcp-header": "Count" } },
      required: ["region"]
    }
  },
  { name: "hang", inputSchema: { type: "object" } },
  { name: "jitter", inputSchema: { type: "object", properties: { ms: { type: "integer" } } } }
]

const text = (t: string) => ({ content: [{ type: "text", text: t }] })

/** The server every test mounts; `hang` reports its interruption to `interrupted`. */
const makeServer = (interrupted: Deferred.Deferred<void>, stateless = true) =>
  McpServer.make({ serverInfo: { name: "dual-http", version: "1.0.0" }, capabilities: { tools: {} }, stateless }).pipe(
    // The cache hints 2026-07-28 requires on list results (the SDK v2 client checks them).
    McpServer.method("tools/list", {}, () => Effect.succeed({ tools, ttlMs: 0, cacheScope: "private" })),
    McpServer.method("tools/call", {}, (params, ctx) => {
      const p = params as { name: string; arguments?: Record<string, unknown> }
      switch (p.name) {
        case "echo":
          return Effect.succeed(text(`echo: ${p.arguments?.text}`))
        case "region_echo":
          return Effect.succeed(text(`region: ${p.arguments?.region}`))
        case "hang":
          return ctx.progress(1, { total: 2 }).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
          )
        case "jitter":
          return ctx.progress(1).pipe(
            Effect.andThen(Effect.sleep(`${Number(p.arguments?.ms ?? 0)} millis`)),
            Effect.as(text("done"))
          )
        default:
          return Effect.succeed(text("?"))
      }
    })
  )

interface Running {
  readonly url: string
  readonly transport: HttpServerTransport.HttpServerTransportShape
  readonly handle: McpServer.ServerHandle<never>
  readonly interrupted: Deferred.Deferred<void>
}

const serveDual = (
  options: HttpServerTransport.Options = {},
  stateless = true
): Effect.Effect<Running, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const interrupted = yield* Deferred.make<void>()
    const handle = yield* McpServer.toHandler(makeServer(interrupted, stateless))
    const context = yield* Layer.build(
      HttpServerTransport.layer(handle.handler, { port: 0, ...options })
    )
    const transport = Context.get(context, HttpServerTransport.HttpServerTransport)
    return { url: Option.getOrThrow(transport.url), transport, handle, interrupted }
  })

const meta = (overrides: Record<string, unknown> = {}) => ({
  ...RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: {} }),
  ...overrides
})

/** A well-formed modern POST: body, and the headers our client would send. */
const modern = (method: string, params: Record<string, unknown> = {}, id: number | null = 1) => {
  const full = { ...params, _meta: { ...meta(), ...(params._meta as object | undefined) } }
  const body = id === null ? { jsonrpc: "2.0", method, params: full } : { jsonrpc: "2.0", id, method, params: full }
  return { body, headers: RequestMeta.standardHeaders(MODERN, method, full) }
}

const errorOf = async (res: Response) => {
  const body = await res.json() as { id: unknown; error: { code: number; message: string; data?: unknown } }
  return { status: res.status, id: body.id, code: body.error.code, data: body.error.data }
}

const stateless = async (transport: HttpServerTransport.HttpServerTransportShape) => {
  const s = await run(transport.stats)
  return s.statelessRequests === 0 && s.openStreams === 0 && s.slotsInUse === 0 && s.ephemeralSessions === 0 &&
    s.sessions === 0
}

describe("Streamable HTTP: both eras on one endpoint", () => {
  it.live("our client (pinned and auto) gets the stateless era, x-mcp-header included; an SDK 1.x client keeps its session at the same time", () =>
    Effect.gen(function*() {
      const { handle, transport, url } = yield* serveDual()
      const sdk = new Client({ name: "sdk1", version: "1.0.0" })
      yield* Effect.promise(() => sdk.connect(new StreamableHTTPClientTransport(new URL(url))))
      for (const protocol of [MODERN, "auto"] as const) {
        const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol, listen: false })
        expect(client.era).toBe("modern")
        const called = yield* client.callTool({ name: "region_echo", arguments: { region: "eu-west", count: 3 } })
        expect(called.content).toEqual([{ type: "text", text: "region: eu-west" }])
        const legacy = yield* Effect.promise(() => sdk.callTool({ name: "echo", arguments: { text: "old" } }))
        expect(legacy.content).toEqual([{ type: "text", text: "echo: old" }])
      }
      // One session (the SDK's); the stateless requests left nothing behind.
      expect((yield* transport.sessionIds).length).toBe(1)
      expect((yield* handle.sessions).map((s) => s.era)).toEqual(["legacy"])
      yield* Effect.promise(() => sdk.close())
    }).pipe(Effect.scoped, Effect.provide(ClientEnv)))

  it.live("header and body disagree: 400 -32020 for each field; unsupported version -32022; missing _meta -32602", () =>
    Effect.scoped(Effect.gen(function*() {
      const { url } = yield* serveDual()
      const call = modern("tools/call", { name: "region_echo", arguments: { region: "eu", count: 7 } })
      const withParams: Record<string, string> = { ...call.headers, "mcp-param-region": "eu", "mcp-param-count": "7" }
      const ask = (headers: Record<string, string>, body: unknown = call.body) =>
        Effect.promise(() => post(url, body, headers).then(errorOf))
      const mismatch = { status: 400, id: 1, code: -32020 }

      expect(yield* Effect.promise(() => post(url, call.body, withParams).then((r) => r.status))).toBe(200)
      // Integers compare numerically; a sentinel decodes before comparing.
      expect(yield* Effect.promise(() =>
        post(url, call.body, { ...withParams, "mcp-param-count": "7.0", "mcp-param-region": "=?base64?ZXU=?=" })
          .then((r) => r.status)
      )).toBe(200)

      expect(yield* ask({ ...withParams, "mcp-protocol-version": MODERN }, {
        ...call.body,
        params: { ...call.body.params, _meta: meta({ [RequestMeta.MetaKey.protocolVersion]: "2099-01-01" }) }
      })).toMatchObject(mismatch)
      expect(yield* ask({ ...withParams, "mcp-method": "tools/list" })).toMatchObject(mismatch)
      const { "mcp-method": _m, ...noMethod } = withParams
      expect(yield* ask(noMethod)).toMatchObject(mismatch)
      expect(yield* ask({ ...withParams, "mcp-name": "echo" })).toMatchObject(mismatch)
      const { "mcp-name": _n, ...noName } = withParams
      expect(yield* ask(noName)).toMatchObject(mismatch)
      expect(yield* ask({ ...withParams, "mcp-name": "=?base64?not base64!?=" })).toMatchObject(mismatch)
      expect(yield* ask({ ...withParams, "mcp-param-region": "us" })).toMatchObject(mismatch)
      expect(yield* ask({ ...withParams, "mcp-param-count": "8" })).toMatchObject(mismatch)
      expect(yield* ask({ ...withParams, "mcp-param-region": "=?base64?@@?=" })).toMatchObject(mismatch)
      const { "mcp-param-region": _r, ...noRegion } = withParams
      expect(yield* ask(noRegion)).toMatchObject({ ...mismatch, data: { header: "Mcp-Param-Region" } })
      // No value in the body, no header expected.
      const noCount = modern("tools/call", { name: "region_echo", arguments: { region: "eu" } })
      expect(yield* Effect.promise(() =>
        post(url, noCount.body, { ...noCount.headers, "mcp-param-region": "eu" }).then((r) => r.status)
      )).toBe(200)

      const later = modern("tools/list")
      expect(yield* ask({ ...later.headers, "mcp-protocol-version": "2099-01-01" }, {
        ...later.body,
        params: { _meta: meta({ [RequestMeta.MetaKey.protocolVersion]: "2099-01-01" }) }
      })).toEqual({ status: 400, id: 1, code: -32022, data: { supported: [MODERN], requested: "2099-01-01" } })
      expect(yield* ask(later.headers, { ...later.body, params: {} })).toMatchObject({ status: 400, id: 1, code: -32602 })
      expect(yield* ask(later.headers, {
        ...later.body,
        params: { _meta: { [RequestMeta.MetaKey.protocolVersion]: MODERN } }
      })).toMatchObject({ status: 400, code: -32602, data: { missing: [RequestMeta.MetaKey.clientCapabilities] } })
    })))

  it.live("removed and unknown methods: 404 with -32601; a notification: 202; a batch: 400; a session id is ignored", () =>
    Effect.scoped(Effect.gen(function*() {
      const { transport, url } = yield* serveDual()
      for (const method of ["ping", "initialize", "logging/setLevel", "resources/subscribe", "no/such"]) {
        const m = modern(method)
        expect(yield* Effect.promise(() => post(url, m.body, m.headers).then(errorOf)))
          .toMatchObject({ status: 404, id: 1, code: -32601 })
      }
      const note = modern("notifications/whatever", {}, null)
      const accepted = yield* Effect.promise(() => post(url, note.body, note.headers))
      expect(accepted.status).toBe(202)
      expect(yield* Effect.promise(() => accepted.text())).toBe("")
      const list = modern("tools/list")
      expect(yield* Effect.promise(() => post(url, [list.body], list.headers).then(errorOf)))
        .toMatchObject({ status: 400, code: -32600 })
      const withSession = yield* Effect.promise(() => post(url, list.body, { ...list.headers, "mcp-session-id": "made-up" }))
      expect(withSession.status).toBe(200)
      expect(withSession.headers.get("mcp-session-id")).toBeNull()
      expect(yield* Effect.promise(() => withSession.json())).toMatchObject({ id: 1, result: { resultType: "complete" } })
      expect(yield* transport.sessionIds).toEqual([])
    })))

  it.live("closing the response stream interrupts the handler; SSE answers say X-Accel-Buffering: no", () =>
    Effect.scoped(Effect.gen(function*() {
      const { interrupted, transport, url } = yield* serveDual()
      const m = modern("tools/call", { name: "hang", _meta: { ...meta(), progressToken: "p" } })
      const controller = new AbortController()
      const res = yield* Effect.promise(() => post(url, m.body, m.headers, { signal: controller.signal }))
      expect(res.headers.get("content-type")).toContain("text/event-stream")
      expect(res.headers.get("x-accel-buffering")).toBe("no")
      const reader = res.body!.getReader()
      let seen = ""
      while (!seen.includes("notifications/progress")) {
        const chunk = yield* Effect.promise(() => reader.read())
        expect(chunk.done).toBe(false)
        seen += new TextDecoder().decode(chunk.value)
      }
      controller.abort()
      yield* Deferred.await(interrupted)
      expect(yield* Effect.promise(() => eventually(() => stateless(transport)))).toBe(true)
    })))

  it.live("500 concurrent stateless requests, some cut at random points, leave no handler running and nothing held", () =>
    Effect.scoped(Effect.gen(function*() {
      const { handle, transport, url } = yield* serveDual()
      const one = async (i: number) => {
        const m = modern("tools/call", { name: "jitter", arguments: { ms: i % 7 }, _meta: { ...meta(), progressToken: i } })
        const controller = new AbortController()
        const cut = Math.random() < 0.5 ? setTimeout(() => controller.abort(), Math.floor(Math.random() * 8)) : undefined
        try {
          const res = await post(url, m.body, m.headers, { signal: controller.signal })
          await res.text()
          return res.status
        } catch {
          return "cut"
        } finally {
          clearTimeout(cut)
        }
      }
      const outcomes = yield* Effect.promise(() => Promise.all(Array.from({ length: 500 }, (_, i) => one(i))))
      expect(outcomes.every((o) => o === 200 || o === "cut")).toBe(true)
      expect(yield* Effect.promise(() => eventually(() => stateless(transport)))).toBe(true)
      expect(yield* Effect.promise(() => isClean(transport))).toBe(true)
      expect(yield* handle.sessions).toEqual([])
    })))

  it.live("a handler without the stateless era keeps today's answer: 400 that no dual-era client reads as modern", () =>
    Effect.scoped(Effect.gen(function*() {
      const { url } = yield* serveDual({}, false)
      const m = modern("server/discover")
      const e = yield* Effect.promise(() => post(url, m.body, m.headers).then(errorOf))
      expect(e.status).toBe(400)
      expect([-32020, -32021, -32022]).not.toContain(e.code)
    })))

  it.live("eras: modern answers GET and DELETE 405 and an initialize -32022; legacy serves modern headers as today", () =>
    Effect.scoped(Effect.gen(function*() {
      const modernOnly = yield* serveDual({ eras: "modern" })
      for (const method of ["GET", "DELETE"]) {
        const res = yield* Effect.promise(() => fetch(modernOnly.url, { method, headers: { accept: "text/event-stream" } }))
        expect(res.status).toBe(405)
        expect(res.headers.get("allow")).toBe("POST")
      }
      const init = {
        jsonrpc: "2.0",
        id: 3,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } }
      }
      expect(yield* Effect.promise(() => post(modernOnly.url, init).then(errorOf))).toEqual({
        status: 400,
        id: 3,
        code: -32022,
        data: { supported: [MODERN], requested: "2025-11-25" }
      })
      const list = modern("tools/list")
      const { "mcp-protocol-version": _v, ...noVersion } = list.headers
      expect(yield* Effect.promise(() => post(modernOnly.url, list.body, noVersion).then(errorOf)))
        .toMatchObject({ status: 400, code: -32020 })

      const legacyOnly = yield* serveDual({ eras: "legacy" })
      const e = yield* Effect.promise(() => post(legacyOnly.url, list.body, list.headers).then(errorOf))
      expect(e).toMatchObject({ status: 400, code: -32600 })
    })))

  it.live("CORS: a preflight allows Mcp-Method, Mcp-Name and the Mcp-Param-* headers asked for", () =>
    Effect.scoped(Effect.gen(function*() {
      const { url } = yield* serveDual()
      const origin = new URL(url).origin
      const res = yield* Effect.promise(() =>
        fetch(url, {
          method: "OPTIONS",
          headers: {
            origin,
            "access-control-request-method": "POST",
            "access-control-request-headers": "mcp-method, mcp-name, mcp-param-region, x-other"
          }
        })
      )
      expect(res.status).toBe(204)
      const allowed = (res.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(/,\s*/)
      expect(allowed).toEqual(expect.arrayContaining(["mcp-method", "mcp-name", "mcp-param-region"]))
      expect(allowed).not.toContain("x-other")
    })))
})

describe("Streamable HTTP both eras: the official SDK v2 client", () => {
  it.live("pinned to 2026-07-28 (no session made) and in its default negotiation, it calls a tool with an x-mcp-header parameter", () =>
    Effect.scoped(Effect.gen(function*() {
      const { transport, url } = yield* serveDual()
      const { Client: Sdk2Client, StreamableHTTPClientTransport: Sdk2Transport } = yield* Effect.promise(() =>
        import("@modelcontextprotocol/client")
      )
      for (const [pinned, options] of [[true, { versionNegotiation: { mode: { pin: MODERN } } }], [false, {}]] as const) {
        const client = new Sdk2Client({ name: "sdk2", version: "1.0.0" }, options as never)
        yield* Effect.promise(() => client.connect(new Sdk2Transport(new URL(url))))
        // It learns which arguments go in headers from tools/list (and does not list again after a -32020).
        yield* Effect.promise(() => client.listTools())
        const called = yield* Effect.promise(() => client.callTool({ name: "region_echo", arguments: { region: "ap", count: 2 } }))
        expect(called.content).toEqual([{ type: "text", text: "region: ap" }])
        // Pinned, it is served statelessly; in its default negotiation it may take the handshake.
        if (pinned) expect(yield* transport.sessionIds).toEqual([])
        yield* Effect.promise(() => client.close())
      }
    })))
})

describe("Streamable HTTP both eras: McpServer's tool schemas", () => {
  it.live("the Mcp-Param-* check follows the tool list again after notifyAll(tools/list_changed)", () =>
    Effect.scoped(Effect.gen(function*() {
      let marked = false
      const schema = () => ({
        type: "object",
        properties: { zone: marked ? { type: "string", "x-mcp-header": "Zone" } : { type: "string" } }
      })
      const server = McpServer.make({ serverInfo: { name: "dyn", version: "1.0.0" }, stateless: true }).pipe(
        McpServer.method("tools/list", {}, () => Effect.sync(() => ({ tools: [{ name: "dyn", inputSchema: schema() }] }))),
        McpServer.method("tools/call", {}, () => Effect.succeed(text("ok")))
      )
      const handle = yield* McpServer.toHandler(server)
      const context = yield* Layer.build(HttpServerTransport.layer(handle.handler, { port: 0 }))
      const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
      const m = modern("tools/call", { name: "dyn", arguments: { zone: "z1" } })
      const status = () => Effect.promise(() => post(url, m.body, m.headers).then((r) => r.status))
      expect(yield* status()).toBe(200)
      marked = true
      expect(yield* status()).toBe(200)
      yield* handle.notifyAll("notifications/tools/list_changed")
      expect(yield* status()).toBe(400)
    })))
})
