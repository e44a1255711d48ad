/**
 * The official TypeScript SDK's server transports on `node:http`, as interop
 * peers: Streamable HTTP (stateful with SSE answers, stateful with JSON
 * answers, stateless, resumable with an event store) and the legacy
 * `SSEServerTransport`. One low-level SDK `Server` per session, with a few
 * tools that exercise the transport: echo, chatty (notification + ping on the
 * request's stream), slow (waits for cancellation), drop (closes its own SSE
 * stream so the client has to resume) and announce (a notification on the
 * standalone stream).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js"
import { type EventStore, StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import {
  CallToolRequestSchema,
  EmptyResultSchema,
  type JSONRPCMessage,
  ListToolsRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import { Deferred, Effect, type Scope } from "effect"
import { randomUUID } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/** What the server side saw, awaitable. */
export interface Events {
  readonly all: () => ReadonlyArray<string>
  readonly waitFor: (predicate: (event: string) => boolean) => Effect.Effect<string>
}

const makeEvents = () => {
  const seen: Array<string> = []
  const waiters = new Set<{ test: (e: string) => boolean; done: Deferred.Deferred<string> }>()
  const add = (event: string) => {
    seen.push(event)
    for (const w of waiters) {
      if (w.test(event)) {
        waiters.delete(w)
        Deferred.doneUnsafe(w.done, Effect.succeed(event))
      }
    }
  }
  const events: Events = {
    all: () => seen,
    waitFor: (test) =>
      Effect.suspend(() => {
        const found = seen.find(test)
        if (found !== undefined) return Effect.succeed(found)
        const done = Deferred.makeUnsafe<string>()
        const waiter = { test, done }
        waiters.add(waiter)
        return Effect.ensuring(Deferred.await(done), Effect.sync(() => waiters.delete(waiter)))
      })
  }
  return { add, events }
}

export interface SdkServer {
  readonly origin: string
  readonly url: string
  readonly events: Events
  /** Forgets a session, so that its next request gets 404. */
  readonly forget: (sessionId: string) => void
}

export type StreamableMode = "stateful-sse" | "stateful-json" | "stateless" | "resumable"

/**
 * Replay in insertion order. (The SDK's example store sorts ids made of a
 * millisecond timestamp and a random suffix, so two events stored in the same
 * millisecond can replay out of order or be skipped.)
 */
const makeEventStore = (): EventStore => {
  const events: Array<{ readonly id: string; readonly streamId: string; readonly message: JSONRPCMessage }> = []
  let counter = 0
  return {
    storeEvent: async (streamId, message) => {
      const id = `${streamId}::${++counter}`
      events.push({ id, streamId, message })
      return id
    },
    replayEventsAfter: async (lastEventId, { send }) => {
      const index = events.findIndex((e) => e.id === lastEventId)
      if (index === -1) return ""
      const streamId = events[index]!.streamId
      for (const event of events.slice(index + 1)) {
        if (event.streamId === streamId) await send(event.id, event.message)
      }
      return streamId
    }
  }
}

const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] })

const makeMcpServer = (add: (event: string) => void, closeStream: (requestId: string | number) => void) => {
  const server = new Server(
    { name: "sdk-interop", version: "1.0.0" },
    { capabilities: { tools: {}, logging: {} } }
  )
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: ["echo", "chatty", "slow", "drop", "announce"].map((name) => ({ name, inputSchema: { type: "object" as const } }))
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    switch (request.params.name) {
      case "echo":
        return text(JSON.stringify(request.params.arguments ?? {}))
      case "chatty": {
        await extra.sendNotification({ method: "notifications/message", params: { level: "info", data: "working" } })
        await extra.sendRequest({ method: "ping" }, EmptyResultSchema)
        return text("pinged back")
      }
      case "slow":
        return await new Promise((resolve) => {
          extra.signal.addEventListener("abort", () => {
            add(`cancelled:${extra.requestId}`)
            resolve(text("cancelled"))
          })
        })
      case "drop": {
        await extra.sendNotification({ method: "notifications/message", params: { level: "info", data: "before the drop" } })
        closeStream(extra.requestId)
        await extra.sendNotification({ method: "notifications/message", params: { level: "info", data: "after the drop" } })
        return text("resumed")
      }
      case "announce": {
        await server.notification({ method: "notifications/message", params: { level: "info", data: "unrelated news" } })
        return text("announced")
      }
      default:
        throw new Error(`unknown tool ${request.params.name}`)
    }
  })
  return server
}

const listen = (handler: Http.RequestListener, add: (event: string) => void) =>
  Effect.acquireRelease(
    Effect.callback<Http.Server>((resume) => {
      const server = Http.createServer((req, res) => {
        add(`${req.method} ${req.url}`)
        Promise.resolve(handler(req, res)).catch((error) => {
          add(`error:${error}`)
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

export const streamable = (mode: StreamableMode): Effect.Effect<SdkServer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { add, events } = makeEvents()
    const sessions = new Map<string, StreamableHTTPServerTransport>()

    const handler: Http.RequestListener = async (req, res) => {
      const sid = req.headers["mcp-session-id"] as string | undefined
      if (req.method === "DELETE") add(`delete:${sid}`)
      if (mode === "stateless") {
        const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true })
        const server = makeMcpServer(add, () => {})
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
        ...(mode === "resumable" ? { eventStore: makeEventStore(), retryInterval: 50 } : {}),
        onsessioninitialized: (id) => {
          sessions.set(id, transport)
          add(`session:${id}`)
        },
        onsessionclosed: (id) => {
          sessions.delete(id)
          add(`closed:${id}`)
        }
      })
      const server = makeMcpServer(add, (requestId) => transport.closeSSEStream(requestId))
      await server.connect(transport)
      return transport.handleRequest(req, res)
    }

    const http = yield* listen(handler, add)
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => Promise.all(Array.from(sessions.values(), (t) => t.close())))
    )
    const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
    return { origin, url: `${origin}/mcp`, events, forget: (id) => void sessions.delete(id) }
  })

export const legacy: Effect.Effect<SdkServer, never, Scope.Scope> = Effect.gen(function*() {
  const { add, events } = makeEvents()
  const sessions = new Map<string, SSEServerTransport>()
  const handler: Http.RequestListener = async (req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    if (req.method === "GET" && url.pathname === "/sse") {
      const transport = new SSEServerTransport("/messages", res)
      sessions.set(transport.sessionId, transport)
      res.on("close", () => add(`sse-closed:${transport.sessionId}`))
      const server = makeMcpServer(add, () => {})
      await server.connect(transport)
      add(`sse-open:${transport.sessionId}`)
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
    res.writeHead(404).end("not found")
  }
  const http = yield* listen(handler, add)
  yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all(Array.from(sessions.values(), (t) => t.close()))))
  const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  return { origin, url: `${origin}/sse`, events, forget: (id) => void sessions.delete(id) }
})
