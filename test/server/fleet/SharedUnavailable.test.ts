/**
 * Which requests the HTTP server transport refuses while the shared store
 * is unreachable (an `Availability` that says so, no Redis needed): 503
 * with `Retry-After` at once for everything of the handshake era, the
 * broadcast stream and a stateless-era `subscriptions/listen`; a
 * stateless-era call is served, and the health probe answers 503
 * `unavailable`. When the store is back, nothing is refused and the probe
 * says `ok`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import { Availability } from "../../../src/server/Availability.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import { initializeBody, post } from "../http/helpers.ts"

const MODERN = "2026-07-28"

const server = McpServer.make({
  serverInfo: { name: "shared-unavailable", version: "1.0.0" },
  capabilities: { tools: {}, resources: { subscribe: true } }
}).pipe(
  McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [], ttlMs: 0, cacheScope: "private" })),
  McpServer.method("tools/call", {}, () => Effect.succeed({ content: [{ type: "text", text: "ok" }] }))
)

const modern = (method: string, params: Record<string, unknown>) => {
  const full = { ...params, _meta: RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: {} }) }
  return { body: { jsonrpc: "2.0", id: 1, method, params: full }, headers: RequestMeta.standardHeaders(MODERN, method, full) }
}

describe("while the shared store is unreachable", () => {
  it.live("what needs it gets 503 + Retry-After at once; a stateless call is served, health says unavailable; back, nothing is refused", () =>
    Effect.gen(function*() {
      let available = false
      const context = yield* Layer.build(
        McpServer.layerHttp(server, { port: 0 }).pipe(
          Layer.provide(Layer.succeed(Availability, { available: () => available, retryAfterSeconds: 7 }))
        )
      )
      const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
      const base = url.replace(/\/mcp$/, "")
      const status = (res: Response) => Effect.promise(async () => ({ status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.text() }))

      const call = modern("tools/call", { name: "x" })
      const listen = modern("subscriptions/listen", { notifications: { resourceSubscriptions: ["file:///x"] } })
      const refusedNow = [
        yield* status(yield* Effect.promise(() => post(url, initializeBody()))),
        yield* status(yield* Effect.promise(() => post(url, listen.body, listen.headers))),
        yield* status(yield* Effect.promise(() => fetch(`${base}/mcp/events`, { headers: { accept: "text/event-stream" } })))
      ]
      for (const refused of refusedNow) {
        expect(refused.status).toBe(503)
        expect(refused.retryAfter).toBe("7")
        expect(JSON.parse(refused.body).error.message).toBe("Service unavailable: the shared store cannot be reached")
      }
      const served = yield* status(yield* Effect.promise(() => post(url, call.body, call.headers)))
      expect(served.status).toBe(200)
      expect(served.body).toContain("ok")
      // The health probe answers, and says why this instance cannot serve.
      const health = yield* status(yield* Effect.promise(() => fetch(`${base}/mcp/health`)))
      expect(health.status).toBe(503)
      expect(health.retryAfter).toBe("7")
      expect(JSON.parse(health.body)).toEqual({ status: "unavailable", store: { kind: "shared", connected: false } })

      available = true
      const healthy = yield* status(yield* Effect.promise(() => fetch(`${base}/mcp/health`)))
      expect(healthy.status).toBe(200)
      expect(JSON.parse(healthy.body)).toEqual({ status: "ok", store: { kind: "shared", connected: true } })
      const initialized = yield* status(yield* Effect.promise(() => post(url, initializeBody())))
      expect(initialized.status).toBe(200)
      const abort = new AbortController()
      const listening = yield* Effect.promise(() => post(url, listen.body, listen.headers, { signal: abort.signal }))
      expect(listening.status).toBe(200)
      abort.abort()
    }).pipe(Effect.scoped), 30_000)
})
