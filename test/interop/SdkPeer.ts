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
import type { Scope } from "effect"
import { Effect } from "effect"
import { type Events, legacyRoutes, makeEvents, serve, streamableRoutes } from "../fixtures/sdk-http-peer.ts"
import { makeSdkServer } from "../fixtures/sdk-mcp-server.ts"

export { type Events, makeEvents }

export type HttpMode = "stateful-sse" | "stateful-json" | "stateless" | "legacy-sse"

export interface HttpPeer {
  readonly origin: string
  /** The endpoint a client is given: /mcp, or /sse for the legacy transport. */
  readonly url: string
  readonly events: Events
  /** Sessions the server still holds. */
  readonly sessionCount: () => number
}

/** The SDK server over HTTP in one of its modes, for the lifetime of the scope. */
export const serveHttp = (mode: HttpMode): Effect.Effect<HttpPeer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const events = makeEvents()
    const routes = mode === "legacy-sse"
      ? legacyRoutes(() => makeSdkServer(events.add), events)
      : streamableRoutes({
        stateless: mode === "stateless",
        options: { enableJsonResponse: mode === "stateful-json" },
        makeServer: () => makeSdkServer(events.add)
      }, events)
    const { origin } = yield* serve(routes, events)
    return {
      origin,
      url: mode === "legacy-sse" ? `${origin}/sse` : `${origin}/mcp`,
      events,
      sessionCount: () => routes.sessions.size
    }
  })
