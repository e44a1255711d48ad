/**
 * Over real loopback HTTP: a `notifications/cancelled` POST that overtakes
 * the request POST it cancels still cancels it, and when a session ends the
 * transport tells both the handler (McpServer drops its state, nothing
 * wired) and `onSessionEnd`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as McpServer from "../../../src/server/McpServer.ts"
import { openSession, post, serve } from "./helpers.ts"

const VERSION = "2025-11-25"

const recordingServer = (ran: Array<unknown>) =>
  McpServer.make({ serverInfo: { name: "lifecycle", version: "1" } }).pipe(
    McpServer.method("work", {}, (_, ctx) => Effect.sync(() => (ran.push(ctx.requestId), { done: ctx.requestId })))
  )

const headersFor = (sessionId: string) => ({
  "mcp-session-id": sessionId,
  "mcp-protocol-version": VERSION,
  // JSON only: a dropped request ends its POST with 202 and no body.
  accept: "application/json"
})

describe("HttpServerTransport session lifecycle", () => {
  it.live("a cancel that arrives before its request: the request never runs and gets no reply", () =>
    Effect.gen(function*() {
      const ran: Array<unknown> = []
      const handle = yield* McpServer.toHandler(recordingServer(ran))
      const server = yield* serve(undefined, () => handle.handler)
      const result = yield* Effect.promise(async () => {
        const sessionId = await openSession(server.url)
        const h = headersFor(sessionId)
        const cancel = await post(server.url, {
          jsonrpc: "2.0",
          method: "notifications/cancelled",
          params: { requestId: 7, reason: "overtaken" }
        }, h)
        await cancel.text()
        const cancelled = await post(server.url, { jsonrpc: "2.0", id: 7, method: "work" }, h)
        const cancelledBody = await cancelled.text()
        // Only that id is dropped, and only once.
        const other = await post(server.url, { jsonrpc: "2.0", id: 8, method: "work" }, h)
        const otherBody = await other.json()
        return { cancel: cancel.status, cancelled: cancelled.status, cancelledBody, other: other.status, otherBody }
      })
      expect(result.cancel).toBe(202)
      expect(result.cancelled).toBe(202)
      expect(result.cancelledBody).toBe("")
      expect(result.other).toBe(200)
      expect(result.otherBody).toEqual({ jsonrpc: "2.0", id: 8, result: { done: 8 } })
      expect(ran).toEqual([8])
      const stats = yield* server.transport.stats
      expect(stats.inFlight).toBe(0)
    }))

  it.live("a cancel for a request that already finished does not drop a later request with another id", () =>
    Effect.gen(function*() {
      const ran: Array<unknown> = []
      const handle = yield* McpServer.toHandler(recordingServer(ran))
      const server = yield* serve(undefined, () => handle.handler)
      const statuses = yield* Effect.promise(async () => {
        const sessionId = await openSession(server.url)
        const h = headersFor(sessionId)
        const first = await post(server.url, { jsonrpc: "2.0", id: 1, method: "work" }, h)
        await first.text()
        const late = await post(server.url, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } }, h)
        await late.text()
        const second = await post(server.url, { jsonrpc: "2.0", id: 2, method: "work" }, h)
        await second.text()
        return [first.status, late.status, second.status]
      })
      expect(statuses).toEqual([200, 202, 200])
      expect(ran).toEqual([1, 2])
    }))

  it.live("after DELETE the router holds no state for the session, and onSessionEnd is told", () =>
    Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(recordingServer([]))
      const ended: Array<string> = []
      const server = yield* serve({
        onSessionEnd: (id) => Effect.sync(() => void ended.push(id))
      }, () => handle.handler)
      const [kept, deleted] = yield* Effect.promise(() => Promise.all([openSession(server.url), openSession(server.url)]))
      expect((yield* handle.sessions).map((s) => s.sessionId).sort()).toEqual([kept, deleted].sort())
      const status = yield* Effect.promise(async () => {
        const res = await fetch(server.url, { method: "DELETE", headers: headersFor(deleted) })
        await res.text()
        return res.status
      })
      expect(status).toBe(204)
      expect(ended).toEqual([deleted])
      expect((yield* handle.sessions).map((s) => s.sessionId)).toEqual([kept])
      // closeSession (and shutdown) end sessions the same way.
      expect(yield* server.transport.closeSession(kept)).toBe(true)
      expect(ended).toEqual([deleted, kept])
      expect(yield* handle.sessions).toEqual([])
    }))
})
