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
import type { EventStore, StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import {
  CallToolRequestSchema,
  EmptyResultSchema,
  type JSONRPCMessage,
  ListToolsRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import { Effect, type Scope } from "effect"
import { type Events, legacyRoutes, makeEvents, serve, streamableRoutes } from "../../fixtures/sdk-http-peer.ts"

export type { Events }

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

export const streamable = (mode: StreamableMode): Effect.Effect<SdkServer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const events = makeEvents()
    const routes = streamableRoutes({
      stateless: mode === "stateless",
      options: mode === "stateless"
        ? { enableJsonResponse: true }
        : {
          enableJsonResponse: mode === "stateful-json",
          ...(mode === "resumable" ? { eventStore: makeEventStore(), retryInterval: 50 } : {})
        },
      makeServer: (transport: StreamableHTTPServerTransport) =>
        makeMcpServer(events.add, mode === "stateless" ? () => {} : (requestId) => transport.closeSSEStream(requestId))
    }, events)
    const { origin } = yield* serve(routes, events)
    return { origin, url: `${origin}/mcp`, events, forget: (id) => void routes.sessions.delete(id) }
  })

export const legacy: Effect.Effect<SdkServer, never, Scope.Scope> = Effect.gen(function*() {
  const events = makeEvents()
  const routes = legacyRoutes(() => makeMcpServer(events.add, () => {}), events)
  const { origin } = yield* serve(routes, events)
  return { origin, url: `${origin}/sse`, events, forget: (id) => void routes.sessions.delete(id) }
})
