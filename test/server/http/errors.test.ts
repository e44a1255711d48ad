/**
 * Every error path of the HTTP server transport, with raw HTTP on loopback:
 * what status, which JSON-RPC error, which headers, and that nothing is left
 * behind.
 */
import { describe, expect, it } from "@effect/vitest"
import * as net from "node:net"
import { Effect } from "effect"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import { initializeBody, isClean, openSession, post, raw, run, withServer } from "./helpers.ts"

const rpcError = async (res: Response) => (await res.json()) as { jsonrpc: string; id: unknown; error: { code: number; message: string; data?: unknown } }

describe("HTTP server transport: error paths", () => {
  it.live("oversized body: 413 with a JSON-RPC error, checked while streaming, connection closed", () =>
    withServer({ maxBodyBytes: 1024 }, async ({ port, url, transport }) => {
      // Declared length over the limit: refused before reading.
      const declared = await post(url, JSON.stringify(initializeBody()) + " ".repeat(2000))
      expect(declared.status).toBe(413)
      const body = await rpcError(declared)
      expect(body.error.code).toBe(-32700)
      expect(body.id).toBeNull()

      // Chunked body with no length: counted as it arrives; we stop reading and close.
      const result = await new Promise<{ status: number; text: string; closed: boolean }>((resolve, reject) => {
        const socket = net.connect(port, "127.0.0.1")
        let text = ""
        let written = 0
        const chunk = "x".repeat(512)
        socket.on("connect", () => {
          socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`)
          const pump = () => {
            // Keep offering far more than the limit; the server must answer without reading it all.
            while (written < 64 && !socket.destroyed) {
              written++
              if (!socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`)) return socket.once("drain", pump)
            }
          }
          pump()
        })
        socket.on("data", (d) => {
          text += d.toString()
        })
        socket.on("error", () => {})
        socket.on("close", () => resolve({ status: Number(text.split(" ")[1]), text, closed: true }))
        setTimeout(() => reject(new Error("no answer")), 10_000).unref()
      })
      expect(result.status).toBe(413)
      expect(result.text.toLowerCase()).toContain("connection: close")
      expect(result.text).toContain("\"code\":-32700")
      expect(result.closed).toBe(true)
      expect(await isClean(transport)).toBe(true)
    }))

  it.live("unparsable JSON: 400, -32700, the parser's message in data", () =>
    withServer(undefined, async ({ url }) => {
      const res = await post(url, "{\"jsonrpc\": \"2.0\", ")
      expect(res.status).toBe(400)
      const body = await rpcError(res)
      expect(body.error.code).toBe(-32700)
      expect(body.id).toBeNull()
      expect(typeof body.error.data).toBe("string")
      expect(String(body.error.data)).toMatch(/JSON/)
    }))

  it.live("bad Origin: 403 with a JSON-RPC error; allowed and absent Origins pass", () =>
    withServer(undefined, async ({ url, port }) => {
      const bad = await post(url, initializeBody(), { origin: "http://evil.example" })
      expect(bad.status).toBe(403)
      expect((await rpcError(bad)).error.code).toBe(-32600)
      expect(bad.headers.get("access-control-allow-origin")).toBeNull()
      expect(bad.headers.get("vary")).toBe("Origin")
      const own = await post(url, initializeBody(), { origin: `http://localhost:${port}` })
      expect(own.status).toBe(200)
      expect(own.headers.get("access-control-allow-origin")).toBe(`http://localhost:${port}`)
      expect(own.headers.get("access-control-expose-headers")).toContain("Mcp-Session-Id")
      await own.text()
      // Same host, another port: not the server's own origin.
      const otherPort = await post(url, initializeBody(), { origin: `http://localhost:${port + 1}` })
      expect(otherPort.status).toBe(403)
    }))

  it.live("bad Host (DNS rebinding): 403; localhost names pass", () =>
    withServer(undefined, async ({ port }) => {
      const body = JSON.stringify(initializeBody())
      const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" }
      const evil = await raw(port, { method: "POST", path: "/mcp", headers: { ...headers, host: "evil.example.com" }, body })
      expect(evil.status).toBe(403)
      expect(JSON.parse(evil.body).error.code).toBe(-32600)
      const evilWithPort = await raw(port, { method: "POST", path: "/mcp", headers: { ...headers, host: `evil.example.com:${port}` }, body })
      expect(evilWithPort.status).toBe(403)
      const rebinding = await raw(port, {
        method: "POST",
        path: "/mcp",
        headers: { ...headers, host: "evil.example.com", origin: "http://evil.example.com" },
        body
      })
      expect(rebinding.status).toBe(403)
      for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
        const ok = await raw(port, { method: "POST", path: "/mcp", headers: { ...headers, host, origin: `http://${host}` }, body })
        expect(ok.status).toBe(200)
      }
      // Health and the 404 page are behind the same check.
      expect((await raw(port, { method: "GET", path: "/mcp/health", headers: { host: "evil.example.com" } })).status).toBe(403)
    }))

  it.live("an absolute-form target names the host judged, in place of the Host line (RFC 9112, 3.2.2)", () =>
    withServer(undefined, async ({ port }) => {
      const body = JSON.stringify(initializeBody())
      const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" }
      const elsewhere = await raw(port, {
        method: "POST",
        path: "http://evil.example.com/mcp",
        headers: { ...headers, host: `127.0.0.1:${port}` },
        body
      })
      expect(elsewhere.status).toBe(403)
      expect(JSON.parse(elsewhere.body).error.message).toBe("Forbidden: Host header not allowed")
      const here = await raw(port, {
        method: "POST",
        path: `http://127.0.0.1:${port}/mcp`,
        headers: { ...headers, host: "evil.example.com" },
        body
      })
      expect(here.status).toBe(200)
    }))

  it.live("each Host value keeps its verdict on every request, past the number of values judged once and kept", () =>
    withServer(undefined, async ({ port }) => {
      const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" }
      const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" })
      const status = async (host: string) => (await raw(port, { method: "POST", path: "/mcp", headers: { ...headers, host }, body })).status
      // More distinct values than are kept, refused and allowed in turn, then each again.
      // Allowed values differ by the case of `localhost` (Host names are not case-sensitive).
      const casing = (i: number) => [..."localhost"].map((c, bit) => ((i >> bit) & 1) === 1 ? c.toUpperCase() : c).join("")
      // Refused ones start as the allowed ones do.
      const hosts = Array.from({ length: 80 }, (_, i) => i % 2 === 0 ? `localhost.evil-${i}.example.com` : `${casing(i >> 1)}:${port}`)
      for (let round = 0; round < 2; round++) {
        for (const host of hosts) expect([host, await status(host)]).toEqual([host, host.includes("evil") ? 403 : 400])
      }
    }))

  it.live("unknown or terminated session: 404; missing session id: 400", () =>
    withServer(undefined, async ({ url }) => {
      const call = { jsonrpc: "2.0", id: 2, method: "tools/list" }
      const unknown = await post(url, call, { "mcp-session-id": "no-such-session" })
      expect(unknown.status).toBe(404)
      expect((await rpcError(unknown)).error.code).toBe(-32600)
      const missing = await post(url, call)
      expect(missing.status).toBe(400)
      expect((await rpcError(missing)).error.message).toMatch(/Mcp-Session-Id/)
      const sessionId = await openSession(url)
      const del = await fetch(url, { method: "DELETE", headers: { "mcp-session-id": sessionId } })
      expect(del.status).toBe(204)
      const after = await post(url, call, { "mcp-session-id": sessionId })
      expect(after.status).toBe(404)
      const getAfter = await fetch(url, { headers: { accept: "text/event-stream", "mcp-session-id": sessionId } })
      expect(getAfter.status).toBe(404)
      await getAfter.text()
    }))

  it.live("DELETE: 204 once, then 404; without a session id 400", () =>
    withServer(undefined, async ({ url, transport }) => {
      const sessionId = await openSession(url)
      expect(await run(transport.sessionIds)).toEqual([sessionId])
      const noId = await fetch(url, { method: "DELETE" })
      expect(noId.status).toBe(400)
      await noId.text()
      const first = await fetch(url, { method: "DELETE", headers: { "mcp-session-id": sessionId } })
      expect(first.status).toBe(204)
      const second = await fetch(url, { method: "DELETE", headers: { "mcp-session-id": sessionId } })
      expect(second.status).toBe(404)
      await second.text()
      expect(await isClean(transport)).toBe(true)
    }))

  it.live("unknown route: 404 with a -32600 error object; other methods on /mcp: 405", () =>
    withServer(undefined, async ({ base }) => {
      const res = await fetch(`${base}/nowhere?x=1`)
      expect(res.status).toBe(404)
      const body = await rpcError(res)
      expect(body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } })
      expect(body.error.message).toContain("/nowhere")
      const put = await fetch(`${base}/mcp`, { method: "PUT", body: "{}" })
      expect(put.status).toBe(405)
      await put.text()
    }))

  it.live("OPTIONS: 204 preflight with MCP's CORS headers; a foreign origin gets 403", () =>
    withServer({ allowedOrigins: ["http://app.example:3000"] }, async ({ base }) => {
      const pre = await fetch(`${base}/mcp`, {
        method: "OPTIONS",
        headers: {
          origin: "http://app.example:3000",
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type, mcp-session-id, mcp-protocol-version"
        }
      })
      expect(pre.status).toBe(204)
      expect(pre.headers.get("access-control-allow-origin")).toBe("http://app.example:3000")
      expect(pre.headers.get("vary")).toBe("Origin")
      const allowHeaders = (pre.headers.get("access-control-allow-headers") ?? "").toLowerCase()
      for (const h of ["content-type", "authorization", "mcp-session-id", "mcp-protocol-version", "last-event-id"]) {
        expect(allowHeaders).toContain(h)
      }
      expect(pre.headers.get("access-control-allow-methods")).toBe("GET, POST, DELETE, OPTIONS")
      // Anywhere, for plain clients' preflights.
      const elsewhere = await fetch(`${base}/anything`, { method: "OPTIONS" })
      expect(elsewhere.status).toBe(204)
      const foreign = await fetch(`${base}/mcp`, { method: "OPTIONS", headers: { origin: "http://evil.example" } })
      expect(foreign.status).toBe(403)
      await foreign.text()
    }))

  it.live("wrong media types: 415 for the body, 406 for Accept", () =>
    withServer(undefined, async ({ url }) => {
      const text = await post(url, initializeBody(), { "content-type": "text/plain" })
      expect(text.status).toBe(415)
      await text.text()
      const accept = await post(url, initializeBody(), { accept: "text/html" })
      expect(accept.status).toBe(406)
      await accept.text()
    }))

  it.live("unsupported MCP-Protocol-Version: 400 on POST, GET and DELETE", () =>
    withServer(undefined, async ({ url }) => {
      const sessionId = await openSession(url)
      const headers = { "mcp-session-id": sessionId, "mcp-protocol-version": "1999-01-01" }
      const p = await post(url, { jsonrpc: "2.0", id: 5, method: "ping" }, headers)
      expect(p.status).toBe(400)
      expect((await rpcError(p)).error.data).toMatchObject({ requested: "1999-01-01" })
      const g = await fetch(url, { headers: { ...headers, accept: "text/event-stream" } })
      expect(g.status).toBe(400)
      await g.text()
      const d = await fetch(url, { method: "DELETE", headers })
      expect(d.status).toBe(400)
      await d.text()
      // A supported one passes.
      const ok = await post(url, { jsonrpc: "2.0", id: 6, method: "ping" }, { ...headers, "mcp-protocol-version": "2025-06-18" })
      expect(ok.status).toBe(200)
      expect(await ok.json()).toEqual({ jsonrpc: "2.0", id: 6, result: {} })
    }))

  it.live("handler failure: -32603 without the cause or a stack trace", () =>
    withServer(undefined, async ({ url }) => {
      const sessionId = await openSession(url)
      const res = await post(url, { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "fail" } }, {
        "mcp-session-id": sessionId
      })
      expect(res.status).toBe(200)
      const text = await res.text()
      expect(JSON.parse(text)).toEqual({ jsonrpc: "2.0", id: 9, error: { code: -32603, message: "Internal error" } })
      expect(text).not.toContain("secret")
      expect(text).not.toContain("at ")
    }))

  it.live("a failed initialize hands out no session id and leaves no session, answered with JSON or SSE", () => {
    // Refuses every initialize; a client named `notify-first` gets a log message on the way first.
    const refusing = (): Handler => (message, context) => {
      if (!("id" in message)) return Effect.succeed(null)
      const refusal = Effect.succeed(JsonRpc.failure(message.id, -32602, "Unsupported protocol version"))
      const name = (message.params as { clientInfo?: { name?: string } } | undefined)?.clientInfo?.name
      return name === "notify-first"
        ? Effect.andThen(context.notify("notifications/message", { level: "info", data: "checking" }), refusal)
        : refusal
    }
    const refused = { jsonrpc: "2.0", id: 1, error: { code: -32602, message: "Unsupported protocol version" } }
    const initializeAs = (name: string) => ({ ...initializeBody(1), params: { ...initializeBody(1).params, clientInfo: { name, version: "1" } } })
    const check = async (url: string, transport: HttpServerTransport.HttpServerTransportShape, body: unknown, accept: string, wire: "json" | "sse") => {
      const res = await post(url, body, { accept })
      expect(res.headers.get("mcp-session-id")).toBeNull()
      const text = await res.text()
      const messages = wire === "json"
        ? [JSON.parse(text)]
        : text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)))
      expect(res.headers.get("content-type")).toContain(wire === "json" ? "application/json" : "text/event-stream")
      expect(messages.at(-1)).toEqual(refused)
      expect(await run(transport.sessionIds)).toEqual([])
      return messages
    }
    const both = "application/json, text/event-stream"
    return Effect.andThen(
      withServer(undefined, async ({ transport, url }) => {
        await check(url, transport, initializeBody(1), both, "json")
        await check(url, transport, initializeBody(1), "text/event-stream", "sse")
        await check(url, transport, initializeAs("notify-first"), both, "json")
      }, refusing),
      withServer({ responseMode: "sse" }, async ({ transport, url }) => {
        await check(url, transport, initializeBody(1), both, "json")
        const streamed = await check(url, transport, initializeAs("notify-first"), "text/event-stream", "sse")
        expect(streamed[0]).toEqual({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "checking" } })
      }, refusing)
    )
  })

  it.live("batches: refused in a 2025-11-25 session and in a batch with initialize; accepted in a 2025-03-26 session", () =>
    withServer(undefined, async ({ url }) => {
      const withInit = await post(url, [initializeBody(), { jsonrpc: "2.0", id: 2, method: "ping" }])
      expect(withInit.status).toBe(400)
      await withInit.text()
      const modern = await openSession(url, "2025-11-25")
      const refused = await post(url, [{ jsonrpc: "2.0", id: 2, method: "ping" }], { "mcp-session-id": modern })
      expect(refused.status).toBe(400)
      expect((await rpcError(refused)).error.message).toMatch(/batch/)
      const old = await openSession(url, "2025-03-26")
      const accepted = await post(url, [
        { jsonrpc: "2.0", id: 2, method: "ping" },
        { jsonrpc: "2.0", method: "notifications/whatever" },
        { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "add", arguments: { a: 1, b: 2 } } }
      ], { "mcp-session-id": old })
      expect(accepted.status).toBe(200)
      const replies = (await accepted.json()) as Array<{ id: number }>
      expect(replies.map((r) => r.id).sort()).toEqual([2, 3])
      const empty = await post(url, [], { "mcp-session-id": old })
      expect(empty.status).toBe(400)
      await empty.text()
    }))

  it.live("invalid JSON-RPC in a valid JSON body: -32600 reply", () =>
    withServer(undefined, async ({ url }) => {
      const sessionId = await openSession(url)
      const res = await post(url, { jsonrpc: "1.0", id: 4, method: "ping" }, { "mcp-session-id": sessionId })
      expect(res.status).toBe(200)
      expect((await rpcError(res)).error.code).toBe(-32600)
    }))

  it.live("authentication hook: 401 with WWW-Authenticate; a session answers only its principal (404 otherwise)", () => {
    const authenticate: HttpServerTransport.Authenticate = (request) => {
      const auth = request.headers["authorization"]
      if (auth === "Bearer alice") return Effect.succeed({ id: "alice" })
      if (auth === "Bearer bob") return Effect.succeed({ id: "bob" })
      return Effect.fail(new HttpServerTransport.Unauthorized({ wwwAuthenticate: "Bearer realm=\"mcp\", error=\"invalid_token\"" }))
    }
    return withServer({ authenticate }, async ({ url, base }) => {
      const none = await post(url, initializeBody())
      expect(none.status).toBe(401)
      expect(none.headers.get("www-authenticate")).toBe("Bearer realm=\"mcp\", error=\"invalid_token\"")
      expect((await rpcError(none)).error.code).toBe(-32600)
      const alice = { authorization: "Bearer alice" }
      const sessionId = await openSession(url, "2025-11-25", alice)
      const mine = await post(url, { jsonrpc: "2.0", id: 2, method: "ping" }, { ...alice, "mcp-session-id": sessionId })
      expect(mine.status).toBe(200)
      await mine.text()
      const stolen = await post(url, { jsonrpc: "2.0", id: 2, method: "ping" }, { authorization: "Bearer bob", "mcp-session-id": sessionId })
      expect(stolen.status).toBe(404)
      await stolen.text()
      const stolenDelete = await fetch(url, { method: "DELETE", headers: { authorization: "Bearer bob", "mcp-session-id": sessionId } })
      expect(stolenDelete.status).toBe(404)
      // Health needs no credentials.
      const health = await fetch(`${base}/mcp/health`)
      expect(health.status).toBe(200)
      expect(await health.json()).toEqual({ status: "ok", transport: "sse" })
    })
  })

  it.live("a defect inside the transport: 500 with -32603 and no detail, its CORS headers kept", () => {
    // An authentication hook that dies (not a refusal) is such a defect.
    const authenticate: HttpServerTransport.Authenticate = () => Effect.die(new Error("secret hook state"))
    return withServer({ authenticate }, async ({ url, port }) => {
      const plain = await post(url, initializeBody())
      expect(plain.status).toBe(500)
      expect(plain.headers.get("vary")).toBe("Origin")
      const text = await plain.text()
      expect(JSON.parse(text)).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32603, message: "Internal error" } })
      expect(text).not.toContain("secret")
      const origin = `http://localhost:${port}`
      const browser = await post(url, initializeBody(), { origin })
      expect(browser.status).toBe(500)
      expect(browser.headers.get("access-control-allow-origin")).toBe(origin)
      await browser.text()
    })
  })

  it.live("an authentication hook that throws instead of returning an effect: the same 500, no detail", () => {
    const authenticate: HttpServerTransport.Authenticate = () => {
      throw new Error("secret hook state")
    }
    return withServer({ authenticate }, async ({ url }) => {
      const thrown = await post(url, initializeBody())
      expect(thrown.status).toBe(500)
      const text = await thrown.text()
      expect(JSON.parse(text)).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32603, message: "Internal error" } })
      expect(text).not.toContain("secret")
    })
  })

  it.live("stateless mode: GET and DELETE answer 405 at once; POST works without a session", () =>
    withServer({ mode: "stateless" }, async ({ url, transport }) => {
      const get = await fetch(url, { headers: { accept: "text/event-stream" } })
      expect(get.status).toBe(405)
      expect(get.headers.get("allow")).toBe("POST")
      await get.text()
      const del = await fetch(url, { method: "DELETE", headers: { "mcp-session-id": "x" } })
      expect(del.status).toBe(405)
      await del.text()
      const init = await post(url, initializeBody())
      expect(init.status).toBe(200)
      expect(init.headers.get("mcp-session-id")).toBeNull()
      await init.text()
      const call = await post(url, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } })
      expect(await call.json()).toEqual({ jsonrpc: "2.0", id: 2, result: { content: [{ type: "text", text: "hi" }] } })
      expect(await isClean(transport)).toBe(true)
    }))

  it.live("standalone stream disabled: GET answers 405", () =>
    withServer({ standaloneStream: false }, async ({ url }) => {
      const sessionId = await openSession(url)
      const get = await fetch(url, { headers: { accept: "text/event-stream", "mcp-session-id": sessionId } })
      expect(get.status).toBe(405)
      await get.text()
    }))
})
