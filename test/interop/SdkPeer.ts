/**
 * The official SDK's McpServer (test/fixtures/sdk-mcp-server.ts) served the
 * ways the SDK offers, for our McpClient:
 * - over HTTP on node:http (127.0.0.1, port 0): Streamable HTTP stateful with
 *   SSE answers, stateful with JSON answers (`enableJsonResponse`), stateless
 *   (`sessionIdGenerator: undefined`, one server and transport per request),
 *   and the legacy `SSEServerTransport` (GET /sse, POST /messages);
 * - over stdio as a child process (the fixture `sdk-stdio-server.ts`).
 * Server-side observations (sessions opened and closed, DELETEs, handler
 * aborts) are recorded as events a test can await.
 */
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { Deferred, Effect, type Scope } from "effect"
import { randomUUID } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { makeSdkServer } from "../fixtures/sdk-mcp-server.ts"

/** What the server side saw, in order, awaitable. */
export interface Events {
  readonly all: () => ReadonlyArray<string>
  readonly add: (event: string) => void
  /** The first event (past or future) that matches, bounded by `timeout`. */
  readonly waitFor: (predicate: (event: string) => boolean, timeout?: string) => Effect.Effect<string, Error>
}

export const makeEvents = (): Events => {
  const seen: Array<string> = []
  const waiters = new Set<{ test: (e: string) => boolean; done: Deferred.Deferred<string> }>()
  return {
    all: () => seen,
    add: (event) => {
      seen.push(event)
      for (const w of waiters) {
        if (w.test(event)) {
          waiters.delete(w)
          Deferred.doneUnsafe(w.done, Effect.succeed(event))
        }
      }
    },
    waitFor: (test, timeout = "10 seconds") =>
      Effect.suspend(() => {
        const found = seen.find(test)
        if (found !== undefined) return Effect.succeed(found)
        const done = Deferred.makeUnsafe<string>()
        const waiter = { test, done }
        waiters.add(waiter)
        return Deferred.await(done).pipe(
          Effect.timeoutOrElse({
            duration: timeout as "10 seconds",
            orElse: () => Effect.fail(new Error(`no matching server event; saw:\n${seen.join("\n")}`))
          }),
          Effect.ensuring(Effect.sync(() => waiters.delete(waiter)))
        )
      })
  }
}

export type HttpMode = "stateful-sse" | "stateful-json" | "stateless" | "legacy-sse"

export interface HttpPeer {
  readonly origin: string
  /** The endpoint a client is given: /mcp, or /sse for the legacy transport. */
  readonly url: string
  readonly events: Events
  /** Sessions the server still holds. */
  readonly sessionCount: () => number
}

const listen = (handler: Http.RequestListener, events: Events) =>
  Effect.acquireRelease(
    Effect.callback<Http.Server>((resume) => {
      const server = Http.createServer((req, res) => {
        events.add(`${req.method} ${req.url}`)
        Promise.resolve(handler(req, res)).catch((error) => {
          events.add(`error:${error}`)
          if (!res.headersSent) res.writeHead(500).end(String(error))
        })
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

const streamableHandler = (mode: Exclude<HttpMode, "legacy-sse">, events: Events) => {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const handler: Http.RequestListener = async (req, res) => {
    const sid = req.headers["mcp-session-id"] as string | undefined
    if (req.method === "DELETE") events.add(`delete:${sid}`)
    if (mode === "stateless") {
      // The SDK's recipe: a fresh server and transport for every request, closed with its response.
      // No `sessionIdGenerator` (the SDK's `sessionIdGenerator: undefined`) is what makes it stateless.
      const transport = new StreamableHTTPServerTransport({})
      const server = makeSdkServer(events.add)
      res.on("close", () => {
        void transport.close()
        void server.close()
      })
      await server.connect(transport)
      return transport.handleRequest(req, res)
    }
    if (sid !== undefined) {
      const transport = sessions.get(sid)
      if (transport === undefined) {
        res.writeHead(404, { "content-type": "application/json" }).end(
          JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null })
        )
        return
      }
      return transport.handleRequest(req, res)
    }
    if (req.method !== "POST") {
      res.writeHead(400).end("no session")
      return
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: mode === "stateful-json",
      onsessioninitialized: (id) => {
        sessions.set(id, transport)
        events.add(`session:${id}`)
      },
      onsessionclosed: (id) => {
        sessions.delete(id)
        events.add(`closed:${id}`)
      }
    })
    const server = makeSdkServer(events.add)
    await server.connect(transport)
    return transport.handleRequest(req, res)
  }
  return { handler, sessions }
}

const legacyHandler = (events: Events) => {
  const sessions = new Map<string, SSEServerTransport>()
  const handler: Http.RequestListener = async (req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    if (req.method === "GET" && url.pathname === "/sse") {
      const transport = new SSEServerTransport("/messages", res)
      sessions.set(transport.sessionId, transport)
      res.on("close", () => {
        sessions.delete(transport.sessionId)
        events.add(`sse-closed:${transport.sessionId}`)
      })
      const server = makeSdkServer(events.add)
      await server.connect(transport)
      events.add(`sse-open:${transport.sessionId}`)
      return
    }
    if (req.method === "POST" && url.pathname === "/messages") {
      const transport = sessions.get(url.searchParams.get("sessionId") ?? "")
      if (transport === undefined) {
        res.writeHead(404).end("unknown session")
        return
      }
      return transport.handlePostMessage(req, res)
    }
    // Includes the Streamable HTTP probe (POST /sse): no such thing here.
    res.writeHead(404).end("not found")
  }
  return { handler, sessions }
}

/** The SDK server over HTTP in one of its modes, for the lifetime of the scope. */
export const serveHttp = (mode: HttpMode): Effect.Effect<HttpPeer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const events = makeEvents()
    const { handler, sessions } = mode === "legacy-sse" ? legacyHandler(events) : streamableHandler(mode, events)
    const http = yield* listen(handler, events)
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => Promise.all(Array.from(sessions.values(), (t: { close(): Promise<void> }) => t.close())))
    )
    const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
    return {
      origin,
      url: mode === "legacy-sse" ? `${origin}/sse` : `${origin}/mcp`,
      events,
      sessionCount: () => sessions.size
    }
  })
