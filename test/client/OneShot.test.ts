/**
 * One-shot calls over real loopback HTTP: the stateless revision against
 * scripted node:http servers (JSON and SSE answers, refusals, retries,
 * broken answers), and the session era against our own HttpServerTransport
 * behind a recording proxy (the handshake, and the DELETE however the call
 * ends).
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import * as TestClock from "effect/testing/TestClock"
import * as Negotiation from "../../src/client/Negotiation.ts"
import * as OneShot from "../../src/client/OneShot.ts"
import { listen } from "../fixtures/loopback-http.ts"
import { serve } from "../server/http/helpers.ts"
import { httpClients, liveWith } from "./http/httpClients.ts"

interface Seen {
  readonly verb: string
  readonly headers: IncomingHttpHeaders
  readonly json: any
  /** When it arrived (ms since the epoch). */
  readonly at: number
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
  })

/** A node:http server that records every request and answers with `answer`. */
const scripted = (answer: (seen: Seen, res: ServerResponse, req: IncomingMessage) => void) =>
  Effect.gen(function*() {
    const seen: Array<Seen> = []
    const server = yield* listen((req, res) => {
      void readBody(req).then((text) => {
        const entry = { verb: req.method ?? "", headers: req.headers, json: text.length > 0 ? JSON.parse(text) : undefined, at: Date.now() }
        seen.push(entry)
        answer(entry, res, req)
      })
    })
    return { url: server.url, seen }
  })

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body))

const result = (id: unknown, value: unknown) => ({ jsonrpc: "2.0", id, result: value })
const rpcError = (id: unknown, code: number, message: string, data?: unknown) => ({
  jsonrpc: "2.0",
  id,
  error: data === undefined ? { code, message } : { code, message, data }
})
const text = (t: string) => ({ content: [{ type: "text", text: t }] })

const modernEcho = (seen: Seen, res: ServerResponse) =>
  json(res, 200, result(seen.json.id, { ...text(`echo ${seen.json.params?.arguments?.text}`), resultType: "complete" }))

/** A scripted session-era server: one session "s1" whose `tools/call` echoes. */
const sessionEra = (seen: Seen, res: ServerResponse) => {
  if (seen.json?.method === "initialize") {
    return res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s1" })
      .end(JSON.stringify(result(seen.json.id, { protocolVersion: "2025-11-25", capabilities: {}, serverInfo: { name: "s", version: "1" } })))
  }
  if (seen.json?.method === "tools/call" && seen.headers["mcp-session-id"] === "s1") return modernEcho(seen, res)
  if (seen.verb === "POST" && seen.json?.id === undefined) return res.writeHead(202).end()
  if (seen.verb === "DELETE") return res.writeHead(200).end()
  return res.writeHead(400).end("Bad Request: no session")
}

/**
 * A proxy in front of `target` that records what the client sends; a client
 * that goes away aborts the upstream request too. `answer` may answer a
 * request itself (it returns true) instead of passing it on.
 */
const recordingProxy = (target: string, answer?: (seen: Seen, res: ServerResponse) => boolean) =>
  Effect.gen(function*() {
    const seen: Array<Seen> = []
    const server = yield* listen((req, res) => {
      void readBody(req).then(async (body) => {
        const entry = { verb: req.method ?? "", headers: req.headers, json: body.length > 0 ? JSON.parse(body) : undefined, at: Date.now() }
        seen.push(entry)
        if (answer?.(entry, res)) return
        const abort = new AbortController()
        res.on("close", () => abort.abort())
        const headers: Record<string, string> = {}
        for (const [key, value] of Object.entries(req.headers)) {
          if (typeof value === "string" && !["host", "connection", "content-length"].includes(key)) headers[key] = value
        }
        try {
          const upstream = await fetch(target, {
            method: req.method ?? "GET",
            headers,
            signal: abort.signal,
            ...(body.length > 0 ? { body } : {})
          })
          const out: Record<string, string> = {}
          upstream.headers.forEach((value, key) => {
            if (key !== "content-length" && key !== "transfer-encoding" && key !== "connection") out[key] = value
          })
          res.writeHead(upstream.status, out)
          if (upstream.body !== null) for await (const chunk of upstream.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk)
          res.end()
        } catch {
          res.destroy()
        }
      })
    })
    return { url: server.url, seen }
  })

/** Our session-era server (HttpServerTransport + the test handler) behind a recording proxy. */
const legacyServer = Effect.gen(function*() {
  const server = yield* serve()
  const proxy = yield* recordingProxy(server.url)
  return { ...proxy, server }
})

const methods = (seen: ReadonlyArray<Seen>) => seen.map((s) => s.verb === "POST" ? s.json?.method ?? "response" : s.verb)

describe("decideFallback", () => {
  const decide = (status: number, body: unknown) =>
    OneShot.decideFallback({ status, body: typeof body === "string" ? body : JSON.stringify(body) }, "2026-07-28")._tag

  liveWith(httpClients[0][1], 5_000)("falls back only on a 4xx that is not a stateless server's error", () =>
    Effect.sync(() => {
      expect(decide(400, "")).toBe("Fallback")
      expect(decide(404, "Not Found")).toBe("Fallback")
      expect(decide(405, "")).toBe("Fallback")
      expect(decide(400, rpcError(null, -32600, "Unsupported MCP-Protocol-Version"))).toBe("Fallback")
      expect(decide(400, rpcError(null, -32000, "Bad Request: No valid session ID provided"))).toBe("Fallback")
      expect(decide(400, rpcError(1, -32020, "Mcp-Method does not match"))).toBe("Stay")
      expect(decide(400, rpcError(1, -32021, "needs sampling"))).toBe("Stay")
      expect(decide(404, rpcError(1, -32601, "Method not found"))).toBe("Stay")
      expect(decide(400, rpcError(1, -32022, "nope", { supported: ["2099-01-01"] }))).toBe("Stay")
      expect(decide(400, rpcError(1, -32022, "nope", { supported: ["2025-11-25"] }))).toBe("Fallback")
      for (const status of [401, 403, 500, 502, 503]) expect(decide(status, "")).toBe("Stay")
    }))
})

describe.each(httpClients)("OneShot via %s", (_name, clientLayer) => {
  const liveShared = liveWith(clientLayer, 15_000)
  /** Each test learns eras in a cache of its own: nothing carries over from another test. */
  const live: typeof liveShared = (name, body, timeout) =>
    liveShared(name, () => Effect.provideService(body(), OneShot.CurrentEras, Negotiation.make()), timeout)

  // ---------------------------------------------------------------------------
  // The stateless revision

  live("a JSON answer: one POST with _meta and the routing headers", () =>
    Effect.gen(function*() {
      const server = yield* scripted(modernEcho)
      const got = yield* OneShot.callTool(server.url, "echo", { text: "hi" }, {
        headers: { Authorization: "Bearer t" },
        clientInfo: { name: "script", version: "1.2.3" }
      })
      expect(got.content).toEqual([{ type: "text", text: "echo hi" }])
      expect(server.seen).toHaveLength(1)
      const [sent] = server.seen
      expect(sent!.headers["mcp-protocol-version"]).toBe("2026-07-28")
      expect(sent!.headers["mcp-method"]).toBe("tools/call")
      expect(sent!.headers["mcp-name"]).toBe("echo")
      expect(sent!.headers["authorization"]).toBe("Bearer t")
      expect(sent!.headers["accept"]).toBe("application/json, text/event-stream")
      expect(sent!.json.params._meta).toEqual({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { name: "script", version: "1.2.3" }
      })
      // The origin is known to be stateless now: the next call goes straight to it too.
      expect(yield* OneShot.call(server.url, "tools/list", {})).toMatchObject({ resultType: "complete" })
      expect(methods(server.seen)).toEqual(["tools/call", "tools/list"])
    }))

  live("an SSE answer: progress, another id, comments and multi-line data come before the response", () =>
    Effect.gen(function*() {
      for (const whole of [false, true]) {
        const server = yield* scripted((seen, res) => {
          const id = seen.json.id
          const events = [
            ": keep-alive\r\n\r\n",
            `event: message\r\ndata: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } })}\r\n\r\n`,
            `data: ${JSON.stringify(result(id + 1000, text("not yours")))}\n\n`,
            "event: other\ndata: {\"ignored\":true}\n\n",
            `data: {"jsonrpc":"2.0",\ndata: "id":${JSON.stringify(id)},\ndata: "result":{"content":[{"type":"text","text":"mine"}]}}\n\n`,
            `data: ${JSON.stringify(result(id, text("too late")))}\n\n`
          ]
          res.writeHead(200, { "content-type": "text/event-stream" })
          if (whole) res.end(events.join(""))
          else {
            for (const event of events) res.write(event)
            res.end()
          }
        })
        const got = yield* OneShot.callTool(server.url, "echo", {})
        expect(got.content, whole ? "whole body" : "streamed").toEqual([{ type: "text", text: "mine" }])
      }
    }))

  live("resultType: input_required and unknown values are typed errors", () =>
    Effect.gen(function*() {
      const server = yield* scripted((seen, res) =>
        json(res, 200, result(seen.json.id, {
          resultType: seen.json.params.name === "ask" ? "input_required" : "later",
          inputRequests: { confirm: {} }
        }))
      )
      const asked = yield* Effect.flip(OneShot.callTool(server.url, "ask"))
      expect(asked).toMatchObject({ _tag: "InputRequired", method: "tools/call", inputRequests: { confirm: {} } })
      expect(asked.message).toContain("McpClient")
      expect(yield* Effect.flip(OneShot.callTool(server.url, "other"))).toMatchObject({
        _tag: "UnknownResultType",
        resultType: "later"
      })
    }))

  live("a JSON-RPC error is an RpcError; a 404 with -32601 is a stateless server without the method (no fallback)", () =>
    Effect.gen(function*() {
      const server = yield* scripted((seen, res) =>
        seen.json.method === "tools/call"
          ? json(res, 200, rpcError(seen.json.id, -32602, "Unknown tool"))
          : json(res, 404, rpcError(seen.json.id, -32601, "Method not found"))
      )
      expect(yield* Effect.flip(OneShot.callTool(server.url, "nope"))).toMatchObject({ _tag: "McpServerError", reason: { _tag: "RpcError", code: -32602 } })
      expect(yield* Effect.flip(OneShot.call(server.url, "prompts/list"))).toMatchObject({ _tag: "McpServerError", reason: { _tag: "RpcError", code: -32601 } })
      expect(methods(server.seen)).toEqual(["tools/call", "prompts/list"])
    }))

  live("no fallback on 401, 403, 408, 429 or 500: one request, an HttpError", () =>
    Effect.gen(function*() {
      for (const status of [401, 403, 500]) {
        const server = yield* scripted((_seen, res) =>
          res.writeHead(status, status === 401 ? { "www-authenticate": "Bearer realm=\"x\"" } : {}).end("no")
        )
        const error = yield* Effect.flip(OneShot.callTool(server.url, "echo"))
        expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "HttpError", status } })
        if (status === 401) expect(error).toMatchObject({ reason: { wwwAuthenticate: "Bearer realm=\"x\"" } })
        expect(server.seen).toHaveLength(1)
      }
      // A JSON-RPC error in the body does not hide the status, nor the wait a 429 asks for. (A 407
      // from a server that is no proxy is a network error to fetch, so it is left out here.)
      for (const status of [408, 429]) {
        const server = yield* scripted((seen, res) =>
          json(res, status, rpcError(seen.json?.id ?? null, -32000, "not now"), status === 429 ? { "retry-after": "2" } : {})
        )
        const error = yield* Effect.flip(OneShot.callTool(server.url, "echo"))
        expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "HttpError", status } })
        if (status === 429) expect(error).toMatchObject({ reason: { retryAfterMs: 2000 } })
        expect(server.seen).toHaveLength(1)
      }
    }))

  // ---------------------------------------------------------------------------
  // Refusals with Retry-After

  /** Refuses the first `refusals` requests with `status` and `Retry-After: after`, then echoes. */
  const refusing = (refusals: number, after: string, status = 503) =>
    scripted((seen, res) => {
      if (refusals-- > 0) return json(res, status, rpcError(seen.json.id, -32000, "busy"), { "retry-after": after })
      if (seen.json.method === "tools/call") return modernEcho(seen, res)
      return json(res, 200, result(seen.json.id, { tools: [], resultType: "complete" }))
    })

  live("a request refused with 503 or 429 and Retry-After is sent again, with the same id, after the wait", () =>
    Effect.gen(function*() {
      const server = yield* refusing(1, "1")
      const got = yield* OneShot.call(server.url, "tools/list")
      expect(got).toMatchObject({ tools: [] })
      expect(methods(server.seen)).toEqual(["tools/list", "tools/list"])
      expect(server.seen[1]!.json.id).toEqual(server.seen[0]!.json.id)
      expect(server.seen[1]!.at - server.seen[0]!.at).toBeGreaterThanOrEqual(900)

      const limited = yield* refusing(2, "0", 429)
      expect(yield* OneShot.call(limited.url, "tools/list")).toMatchObject({ tools: [] })
      expect(methods(limited.seen)).toEqual(["tools/list", "tools/list", "tools/list"])
    }))

  live("the attempts spent, the last refusal is the HttpError, with its wait", () =>
    Effect.gen(function*() {
      const server = yield* refusing(Infinity, "0")
      const error = yield* Effect.flip(OneShot.call(server.url, "tools/list"))
      expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "HttpError", status: 503, retryAfterMs: 0 } })
      expect(methods(server.seen)).toEqual(["tools/list", "tools/list", "tools/list"])

      const once = yield* refusing(Infinity, "0")
      yield* Effect.flip(OneShot.call(once.url, "tools/list", {}, { retryUnavailable: { attempts: 1 } }))
      expect(once.seen).toHaveLength(2)
    }))

  live("not sent again: a tool call unless asked, a wait past maxDelay, retryUnavailable false", () =>
    Effect.gen(function*() {
      const tool = yield* refusing(1, "0")
      const error = yield* Effect.flip(OneShot.callTool(tool.url, "echo", { text: "x" }))
      expect(error).toMatchObject({ reason: { _tag: "HttpError", status: 503 } })
      expect(tool.seen).toHaveLength(1)
      const asked = yield* refusing(1, "0")
      const got = yield* OneShot.callTool(asked.url, "echo", { text: "x" }, { retryUnavailable: { toolCalls: true } })
      expect(got.content).toEqual([{ type: "text", text: "echo x" }])
      expect(methods(asked.seen)).toEqual(["tools/call", "tools/call"])

      const long = yield* refusing(1, "30")
      expect(yield* Effect.flip(OneShot.call(long.url, "tools/list"))).toMatchObject({ reason: { retryAfterMs: 30_000 } })
      expect(long.seen).toHaveLength(1)
      const off = yield* refusing(1, "0")
      yield* Effect.flip(OneShot.call(off.url, "tools/list", {}, { retryUnavailable: false }))
      expect(off.seen).toHaveLength(1)
    }))

  live("the session era's initialize refused for now is sent again; the handshake goes on", () =>
    Effect.gen(function*() {
      let refusals = 1
      const server = yield* recordingProxy((yield* serve()).url, (seen, res) => {
        if (seen.json?.method !== "initialize" || refusals-- <= 0) return false
        json(res, 503, {}, { "retry-after": "0" })
        return true
      })
      const got = yield* OneShot.callTool(server.url, "echo", { text: "late" }, { protocol: "2025-11-25" })
      expect(got.content).toEqual([{ type: "text", text: "late" }])
      expect(methods(server.seen)).toEqual(["initialize", "initialize", "notifications/initialized", "tools/call", "DELETE"])
    }))

  live("timeout: RequestTimeout, with no fallback", () =>
    Effect.gen(function*() {
      const server = yield* scripted(() => {})
      const error = yield* Effect.flip(OneShot.callTool(server.url, "echo", {}, { timeout: "300 millis" }))
      expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "RequestTimeout", method: "tools/call", timeoutMs: 300 } })
      expect(server.seen).toHaveLength(1)
    }))

  it.effect("the timeout runs on the Clock: a TestClock moved past it fails the call with RequestTimeout", () =>
    Effect.gen(function*() {
      const arrived = yield* Deferred.make<void>()
      const server = yield* scripted(() => Deferred.doneUnsafe(arrived, Exit.void))
      const fiber = yield* Effect.forkChild(
        Effect.flip(OneShot.callTool(server.url, "echo", {}, { timeout: "1 hour" })).pipe(
          Effect.provideService(OneShot.CurrentEras, Negotiation.make())
        )
      )
      yield* Deferred.await(arrived)
      yield* TestClock.adjust("1 hour")
      expect(yield* Fiber.join(fiber)).toMatchObject({
        _tag: "McpTransportError",
        reason: { _tag: "RequestTimeout", method: "tools/call", timeoutMs: 3_600_000 }
      })
    }).pipe(Effect.scoped, Effect.provide(clientLayer)), 15_000)

  live("a network failure is TransportClosed, with no fallback", () =>
    Effect.gen(function*() {
      const url = yield* Effect.scoped(Effect.map(scripted(() => {}), (s) => s.url))
      expect(yield* Effect.flip(OneShot.callTool(url, "echo"))).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "TransportClosed" } })
    }))

  live("-32022 naming a stateless revision we speak: one retry with it", () =>
    Effect.gen(function*() {
      const server = yield* scripted((seen, res) =>
        seen.headers["mcp-protocol-version"] === "2026-07-28"
          ? modernEcho(seen, res)
          : json(res, 400, rpcError(seen.json.id, -32022, "Unsupported protocol version", {
            supported: ["2026-07-28"],
            requested: seen.headers["mcp-protocol-version"]
          }))
      )
      const got = yield* OneShot.callTool(server.url, "echo", { text: "again" }, { protocol: "2027-01-01" })
      expect(got.content).toEqual([{ type: "text", text: "echo again" }])
      expect(server.seen.map((s) => s.headers["mcp-protocol-version"])).toEqual(["2027-01-01", "2026-07-28"])
      expect(server.seen[1]!.json.params._meta["io.modelcontextprotocol/protocolVersion"]).toBe("2026-07-28")
      expect(server.seen[1]!.json.id).not.toBe(server.seen[0]!.json.id)
    }))

  live("-32022 naming nothing we speak: UnsupportedProtocolVersion, no fallback", () =>
    Effect.gen(function*() {
      const server = yield* scripted((seen, res) =>
        json(res, 400, rpcError(seen.json.id, -32022, "Unsupported protocol version", { supported: ["2099-01-01"] }))
      )
      expect(yield* Effect.flip(OneShot.callTool(server.url, "echo"))).toMatchObject({
        _tag: "McpProtocolError",
        reason: { _tag: "UnsupportedProtocolVersion", requested: "2026-07-28", supported: ["2099-01-01"] }
      })
      expect(server.seen).toHaveLength(1)
    }))

  live("-32020 about an Mcp-Param header: tools/list once, then one retry with the headers", () =>
    Effect.gen(function*() {
      const inputSchema = {
        type: "object",
        properties: { region: { type: "string", "x-mcp-header": "Region" }, text: { type: "string" } }
      }
      const server = yield* scripted((seen, res) => {
        if (seen.json.method === "tools/list") {
          return json(res, 200, result(seen.json.id, { tools: [{ name: "other", inputSchema: {} }, { name: "echo", inputSchema }] }))
        }
        if (seen.headers["mcp-param-region"] !== seen.json.params.arguments.region) {
          return json(res, 400, rpcError(seen.json.id, -32020, "Header mismatch: Mcp-Param-Region is missing"))
        }
        return modernEcho(seen, res)
      })
      const args = { region: "café", text: "hi" }
      // The header carries the Base64 form; the scripted server compares it with the body as is.
      const encoded = "=?base64?Y2Fmw6k=?="
      const got = yield* Effect.flip(OneShot.callTool(server.url, "echo", args))
      expect(got).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "HeaderMismatch", method: "tools/call" } })
      expect(methods(server.seen)).toEqual(["tools/call", "tools/list", "tools/call"])
      expect(server.seen[2]!.headers["mcp-param-region"]).toBe(encoded)

      const plain = { region: "eu-north", text: "hi" }
      const before = server.seen.length
      expect((yield* OneShot.callTool(server.url, "echo", plain)).content).toEqual([{ type: "text", text: "echo hi" }])
      expect(methods(server.seen.slice(before))).toEqual(["tools/call", "tools/list", "tools/call"])

      // With the schema given, the headers go out on the first request.
      const given = server.seen.length
      yield* OneShot.callTool(server.url, "echo", plain, { inputSchema })
      expect(methods(server.seen.slice(given))).toEqual(["tools/call"])
      expect(server.seen[given]!.headers["mcp-param-region"]).toBe("eu-north")
    }))

  live("an SSE stream that ends before the response: NoResponse", () =>
    Effect.gen(function*() {
      const server = yield* scripted((seen, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write(`data: ${JSON.stringify(result(seen.json.id + 1, {}))}\n\n`)
        res.end(": bye\n\n")
      })
      expect(yield* Effect.flip(OneShot.callTool(server.url, "echo"))).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "NoResponse", method: "tools/call" } })
    }))

  live("invalid JSON, in a JSON body or an SSE event: MalformedMessage", () =>
    Effect.gen(function*() {
      const server = yield* scripted((seen, res) =>
        seen.json.params.name === "json"
          ? res.writeHead(200, { "content-type": "application/json" }).end("{not json")
          : res.writeHead(200, { "content-type": "text/event-stream" }).end("data: {not json\n\n")
      )
      for (const name of ["json", "sse"]) {
        expect(yield* Effect.flip(OneShot.callTool(server.url, name)), name).toMatchObject({
          _tag: "McpTransportError",
          reason: { _tag: "MalformedMessage", method: "tools/call" }
        })
      }
    }))

  live("a body over maxMessageBytes: MessageTooLarge, declared or streamed", () =>
    Effect.gen(function*() {
      const big = JSON.stringify(text("x".repeat(4096)))
      const server = yield* scripted((seen, res) => {
        const body = `{"jsonrpc":"2.0","id":${seen.json.id},"result":${big}}`
        if (seen.json.params.name === "declared") {
          res.writeHead(200, { "content-type": "application/json" }).end(body)
        } else {
          res.writeHead(200, { "content-type": seen.json.params.name === "sse" ? "text/event-stream" : "application/json" })
          res.write(seen.json.params.name === "sse" ? `data: ${body}` : body)
          res.end(seen.json.params.name === "sse" ? "\n\n" : "")
        }
      })
      for (const name of ["declared", "chunked", "sse"]) {
        expect(yield* Effect.flip(OneShot.callTool(server.url, name, {}, { maxMessageBytes: 1024 })), name)
          .toMatchObject({ _tag: "McpTransportError", reason: { _tag: "MessageTooLarge", limit: 1024, direction: "incoming" } })
      }
    }))

  live("interruption aborts the HTTP request", () =>
    Effect.gen(function*() {
      const closed = yield* Deferred.make<void>()
      const arrived = yield* Deferred.make<void>()
      const server = yield* scripted((_seen, res) => {
        res.on("close", () => Deferred.doneUnsafe(closed, Exit.void))
        Deferred.doneUnsafe(arrived, Exit.void)
      })
      const fiber = yield* Effect.forkChild(OneShot.callTool(server.url, "echo"))
      yield* Deferred.await(arrived)
      yield* Fiber.interrupt(fiber)
      yield* Deferred.await(closed)
      expect(server.seen).toHaveLength(1)
    }))

  // ---------------------------------------------------------------------------
  // The session era

  live("auto against a session-era server: falls back, ends the session, and goes straight to it next time", () =>
    Effect.gen(function*() {
      const legacy = yield* legacyServer
      const got = yield* OneShot.callTool(legacy.url, "echo", { text: "old" })
      expect(got.content).toEqual([{ type: "text", text: "old" }])
      expect(methods(legacy.seen)).toEqual(["tools/call", "initialize", "notifications/initialized", "tools/call", "DELETE"])
      const [, initialize, initialized, call, del] = legacy.seen
      expect(initialize!.json.params.protocolVersion).toBe("2025-11-25")
      expect(initialize!.headers["mcp-protocol-version"]).toBeUndefined()
      const session = del!.headers["mcp-session-id"]
      expect(session).toBeTypeOf("string")
      for (const sent of [initialized, call, del]) {
        expect(sent!.headers["mcp-session-id"]).toBe(session)
        expect(sent!.headers["mcp-protocol-version"]).toBe("2025-11-25")
      }
      expect(call!.json.params._meta).toBeUndefined()
      expect(yield* legacy.server.transport.sessionIds).toEqual([])

      const before = legacy.seen.length
      yield* OneShot.callTool(legacy.url, "echo", { text: "again" })
      expect(methods(legacy.seen.slice(before))).toEqual(["initialize", "notifications/initialized", "tools/call", "DELETE"])
    }))

  live("the session is ended when the call fails", () =>
    Effect.gen(function*() {
      const legacy = yield* legacyServer
      const error = yield* Effect.flip(OneShot.callTool(legacy.url, "fail", {}, { protocol: "2025-11-25" }))
      expect(error).toMatchObject({ _tag: "McpServerError", reason: { _tag: "RpcError", code: -32603 } })
      expect(methods(legacy.seen)).toEqual(["initialize", "notifications/initialized", "tools/call", "DELETE"])
      expect(yield* legacy.server.transport.sessionIds).toEqual([])
    }))

  live("the session is ended when the call is interrupted, or times out", () =>
    Effect.gen(function*() {
      const legacy = yield* legacyServer
      const fiber = yield* Effect.forkChild(OneShot.callTool(legacy.url, "slow", {}, { protocol: "2025-06-18" }))
      yield* Deferred.await(legacy.server.probe.slowStarted)
      yield* Fiber.interrupt(fiber)
      expect(methods(legacy.seen)).toEqual(["initialize", "notifications/initialized", "tools/call", "DELETE"])
      expect(legacy.seen[3]!.headers["mcp-protocol-version"]).toBe("2025-06-18")
      expect(yield* legacy.server.transport.sessionIds).toEqual([])

      const before = legacy.seen.length
      const error = yield* Effect.flip(OneShot.callTool(legacy.url, "slow", {}, { protocol: "2025-11-25", timeout: "1 second" }))
      expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "RequestTimeout", method: "tools/call" } })
      expect(methods(legacy.seen.slice(before))).toEqual(["initialize", "notifications/initialized", "tools/call", "DELETE"])
      expect(yield* legacy.server.transport.sessionIds).toEqual([])
    }))

  live("a cached session era that no longer holds: the server is probed again, stateless first", () =>
    Effect.gen(function*() {
      let modern = false
      const server = yield* scripted((seen, res) => {
        if (!modern) return sessionEra(seen, res)
        if (seen.headers["mcp-protocol-version"] !== "2026-07-28") {
          return json(res, 400, rpcError(seen.json?.id ?? null, -32020, "MCP-Protocol-Version is required"))
        }
        return modernEcho(seen, res)
      })
      yield* OneShot.callTool(server.url, "echo", { text: "a" })
      expect(methods(server.seen)).toEqual(["tools/call", "initialize", "notifications/initialized", "tools/call", "DELETE"])
      modern = true
      const before = server.seen.length
      const got = yield* OneShot.callTool(server.url, "echo", { text: "b" })
      expect(got.content).toEqual([{ type: "text", text: "echo b" }])
      expect(methods(server.seen.slice(before))).toEqual(["initialize", "tools/call"])
    }))

  live("a cached session era answered with a rate limit: the call fails with it and the era stays known", () =>
    Effect.gen(function*() {
      let limited = false
      const server = yield* scripted((seen, res) => {
        if (limited) return res.writeHead(429, { "retry-after": "30" }).end("slow down")
        return sessionEra(seen, res)
      })
      yield* OneShot.callTool(server.url, "echo", { text: "a" })
      limited = true
      const before = server.seen.length
      const error = yield* Effect.flip(OneShot.callTool(server.url, "echo", { text: "b" }))
      expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "HttpError", status: 429, retryAfterMs: 30_000 } })
      expect(methods(server.seen.slice(before))).toEqual(["initialize"])
      expect(Negotiation.get(yield* OneShot.CurrentEras, new URL(server.url).origin)).toMatchObject({ era: "legacy" })
    }))

  // ---------------------------------------------------------------------------
  // What a call reads from its context

  liveShared("CurrentEras: a provided cache starts empty, is shared by the calls given it, and leaves the process's alone", () =>
    Effect.gen(function*() {
      const legacy = yield* legacyServer
      const origin = new URL(legacy.url).origin
      const mine = Negotiation.make()
      const withMine = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, OneShot.CurrentEras, mine)
      yield* withMine(OneShot.callTool(legacy.url, "echo", { text: "a" }))
      expect(Negotiation.get(mine, origin)).toEqual({ era: "legacy", version: "2025-11-25" })
      let before = legacy.seen.length
      yield* withMine(OneShot.callTool(legacy.url, "echo", { text: "b" }))
      expect(methods(legacy.seen.slice(before))).toEqual(["initialize", "notifications/initialized", "tools/call", "DELETE"])
      // Another cache knows nothing of it: the call probes, stateless first.
      before = legacy.seen.length
      yield* Effect.provideService(OneShot.callTool(legacy.url, "echo", { text: "c" }), OneShot.CurrentEras, Negotiation.make())
      expect(methods(legacy.seen.slice(before))[0]).toBe("tools/call")
      expect(legacy.seen[before]!.json.params._meta).toBeDefined()
      // Nor does the process-wide cache, nor does forgetting that one touch a provided cache.
      before = legacy.seen.length
      yield* OneShot.callTool(legacy.url, "echo", { text: "d" })
      expect(legacy.seen[before]!.json.params._meta).toBeDefined()
      OneShot.forgetServers()
      expect(Negotiation.get(mine, origin)?.era).toBe("legacy")
    }))

  liveShared("RequestIds: the ids come from the provided source, one per request sent", () =>
    Effect.gen(function*() {
      const modern = yield* scripted(modernEcho)
      const ids = OneShot.makeRequestIds()
      const withIds = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, OneShot.RequestIds, ids)
      yield* withIds(OneShot.callTool(modern.url, "echo", { text: "a" }))
      yield* withIds(OneShot.callTool(modern.url, "echo", { text: "b" }))
      expect(modern.seen.map((s) => s.json.id)).toEqual([1, 2])
      const legacy = yield* legacyServer
      const named = { next: (() => { let n = 0; return () => `call-${++n}` })() }
      yield* Effect.provideService(OneShot.callTool(legacy.url, "echo", { text: "c" }, { protocol: "2025-11-25" }), OneShot.RequestIds, named)
      expect(legacy.seen.filter((s) => s.json?.id !== undefined).map((s) => s.json.id)).toEqual(["call-1", "call-2"])
    }))
})
