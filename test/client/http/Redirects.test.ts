/**
 * HTTP redirects from an MCP server, against loopback node:http servers:
 * same-origin 307 and 308 are followed with the method, body and headers
 * kept; 301/302/303 are followed for GET only; another origin (another port
 * of 127.0.0.1 counts), a Location that is not a URL and a hop past the bound
 * are refused with RedirectRefused, which names the Location.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { FetchHttpClient } from "effect/http"
import * as SseTransport from "../../../src/client/SseClientTransport.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import { MAX_REDIRECTS } from "../../../src/client/internal/HttpExchange.ts"
import { listen } from "../../fixtures/loopback-http.ts"
import { httpClients, liveWith } from "./httpClients.ts"

interface Seen {
  readonly method: string
  readonly path: string
  readonly body: string
  readonly authorization: string | undefined
  readonly session: string | undefined
  readonly extra: string | undefined
}

type Route = (seen: Seen, res: ServerResponse) => void

/** A loopback server that records every request and answers with `route` (404 when it returns nothing). */
const recordingServer = (route: Route) =>
  Effect.gen(function*() {
    const seen: Array<Seen> = []
    const loopback = yield* listen((req: IncomingMessage, res: ServerResponse) => {
      let body = ""
      req.setEncoding("utf8")
      req.on("data", (chunk: string) => body += chunk)
      req.on("end", () => {
        const entry: Seen = {
          method: req.method ?? "",
          path: req.url ?? "",
          body,
          authorization: req.headers["authorization"],
          session: req.headers["mcp-session-id"] as string | undefined,
          extra: req.headers["x-extra"] as string | undefined
        }
        seen.push(entry)
        route(entry, res)
        if (!res.headersSent) res.writeHead(404).end()
      })
    })
    return { ...loopback, seen }
  })

const redirect = (res: ServerResponse, status: number, location: string) =>
  res.writeHead(status, { location, "content-type": "text/plain" }).end(`see ${location}`)

/** Answers a JSON-RPC request with its method and params; 202 for the rest. */
const answer = (seen: Seen, res: ServerResponse, headers: Record<string, string> = {}) => {
  const message = JSON.parse(seen.body) as { id?: number; method: string; params?: unknown }
  if (message.id === undefined) return res.writeHead(202).end()
  const result = { method: message.method, params: message.params ?? null }
  res.writeHead(200, { "content-type": "application/json", ...headers })
    .end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }))
}

const connect = (url: string) =>
  StreamableHttp.make({ url, headers: { authorization: "Bearer secret" }, defaultTimeout: "10 seconds" })

describe.each(httpClients)("HTTP redirects via %s", (_name, clientLayer) => {
  const live = liveWith(clientLayer, 15_000)

  live("same-origin 307 and 308 on a POST are followed with the method, body and headers kept", () =>
    Effect.gen(function*() {
      const server = yield* recordingServer((seen, res) => {
        if (seen.path === "/mcp") return redirect(res, 307, "/mcp/moved")
        // An absolute Location on the same origin.
        if (seen.path === "/mcp/moved") return redirect(res, 308, `http://127.0.0.1:${port()}/mcp/final`)
        if (seen.path === "/mcp/final") return answer(seen, res)
      })
      const port = () => new URL(server.origin).port
      const t = yield* connect(server.url)
      expect(yield* t.request("tools/list", { cursor: "c" })).toEqual({ method: "tools/list", params: { cursor: "c" } })
      expect(server.seen.map((s) => s.path)).toEqual(["/mcp", "/mcp/moved", "/mcp/final"])
      const [first] = server.seen
      expect(JSON.parse(first!.body)).toMatchObject({ method: "tools/list", params: { cursor: "c" } })
      for (const hop of server.seen) {
        expect(hop.method).toBe("POST")
        expect(hop.body).toBe(first!.body)
        expect(hop.authorization).toBe("Bearer secret")
      }
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("a DELETE of the session follows a same-origin 307 too", () =>
    Effect.gen(function*() {
      const server = yield* recordingServer((seen, res) => {
        if (seen.method === "DELETE") {
          if (seen.path === "/mcp") return redirect(res, 307, "/mcp/sessions")
          return res.writeHead(204).end()
        }
        if (seen.method === "POST") return answer(seen, res, { "mcp-session-id": "s-1" })
      })
      const scope = yield* Scope.make()
      const t = yield* connect(server.url).pipe(Scope.provide(scope))
      yield* t.request("initialize", {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "t", version: "0" }
      })
      yield* Scope.close(scope, Exit.void)
      const deletes = server.seen.filter((s) => s.method === "DELETE")
      expect(deletes.map((s) => [s.path, s.session])).toEqual([["/mcp", "s-1"], ["/mcp/sessions", "s-1"]])
    }))

  live(`a redirect loop stops after ${MAX_REDIRECTS} hops with RedirectRefused`, () =>
    Effect.gen(function*() {
      const server = yield* recordingServer((_seen, res) => redirect(res, 307, "/mcp"))
      const t = yield* connect(server.url)
      const error = yield* Effect.flip(t.request("tools/list"))
      expect(error).toMatchObject({
        _tag: "RedirectRefused",
        status: 307,
        location: server.url,
        url: server.url,
        method: "tools/list",
        reason: `more than ${MAX_REDIRECTS} redirects`
      })
      expect(server.seen.length).toBe(MAX_REDIRECTS + 1)
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("a redirect to another origin is refused with its Location, and nothing reaches that origin", () =>
    Effect.gen(function*() {
      const other = yield* recordingServer((seen, res) => answer(seen, res))
      const server = yield* recordingServer((_seen, res) => redirect(res, 307, `${other.url}?from=redirect`))
      const t = yield* connect(server.url)
      const error = yield* Effect.flip(t.request("tools/list"))
      expect(error).toMatchObject({
        _tag: "RedirectRefused",
        status: 307,
        location: `${other.url}?from=redirect`,
        url: server.url,
        reason: "another origin"
      })
      expect(error.message).toBe(
        `Redirect refused: HTTP 307 from ${server.url} to ${other.url}?from=redirect (another origin)`
      )
      const notified = yield* Effect.flip(t.notify("notifications/initialized"))
      expect(notified).toMatchObject({ _tag: "RedirectRefused", location: `${other.url}?from=redirect` })
      expect(other.seen).toEqual([])
    }))

  live("301, 302 and 303 on a POST are refused; a Location that is not a URL is refused", () =>
    Effect.gen(function*() {
      let status = 301
      const server = yield* recordingServer((seen, res) => {
        if (seen.path === "/bad") return redirect(res, 307, "http://[::1")
        return redirect(res, status, "/mcp/elsewhere")
      })
      const t = yield* connect(server.url)
      for (const code of [301, 302, 303]) {
        status = code
        const error = yield* Effect.flip(t.request("tools/list"))
        expect(error).toMatchObject({
          _tag: "RedirectRefused",
          status: code,
          location: `${server.origin}/mcp/elsewhere`,
          reason: `a ${code} would turn the POST into a GET; only 307 and 308 are followed`
        })
      }
      expect(server.seen.every((s) => s.path === "/mcp")).toBe(true)
      const bad = yield* Effect.flip(connect(`${server.origin}/bad`).pipe(Effect.flatMap((b) => b.request("ping"))))
      expect(bad).toMatchObject({
        _tag: "RedirectRefused",
        location: "http://[::1",
        reason: "the Location is not a URL"
      })
    }))

  live("legacy SSE: a 301 on the stream's GET is followed and the endpoint resolves against where it landed", () =>
    Effect.gen(function*() {
      let stream: ServerResponse | undefined
      const server = yield* recordingServer((seen, res) => {
        if (seen.method === "GET" && seen.path === "/sse") return redirect(res, 301, "/v2/sse")
        if (seen.method === "GET" && seen.path === "/v2/sse") {
          stream = res
          res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
          res.write("event: endpoint\ndata: messages?session=1\n\n")
          return
        }
        if (seen.method === "POST" && seen.path === "/v2/messages?session=1") {
          res.writeHead(202).end()
          const message = JSON.parse(seen.body) as { id?: number; method: string }
          if (message.id !== undefined) {
            const reply = { jsonrpc: "2.0", id: message.id, result: { via: seen.path } }
            stream?.write(`event: message\ndata: ${JSON.stringify(reply)}\n\n`)
          }
          return
        }
      })
      const t = yield* SseTransport.make({ url: `${server.origin}/sse`, headers: { authorization: "Bearer secret" } })
      expect(t.endpoint).toBe(`${server.origin}/v2/messages?session=1`)
      expect(yield* t.request("ping")).toEqual({ via: "/v2/messages?session=1" })
      expect(server.seen.map((s) => s.authorization)).toEqual(["Bearer secret", "Bearer secret", "Bearer secret"])
      stream?.end()
    }))
})

it.live("FetchHttpClient: a RequestInit of the user's that follows redirects is kept, but not its redirect mode", () =>
  Effect.gen(function*() {
    const other = yield* recordingServer((seen, res) => answer(seen, res))
    const server = yield* recordingServer((_seen, res) => redirect(res, 308, other.url))
    const t = yield* connect(server.url)
    const error = yield* Effect.flip(t.request("tools/list"))
    expect(error).toMatchObject({ _tag: "RedirectRefused", status: 308, location: other.url, reason: "another origin" })
    expect(server.seen.map((s) => s.extra)).toEqual(["from RequestInit"])
    expect(other.seen).toEqual([])
  }).pipe(
    Effect.scoped,
    Effect.provide(FetchHttpClient.layer),
    Effect.provideService(FetchHttpClient.RequestInit, {
      redirect: "follow",
      headers: { "x-extra": "from RequestInit" }
    })
  ))
