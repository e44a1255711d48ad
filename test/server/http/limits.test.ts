/**
 * Limits on sessions and streams, and idle expiry (with the test clock: the
 * HTTP traffic is real, the server's notion of time is not).
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Ref } from "effect"
import { TestClock } from "effect/testing"
import { eventually, initializeBody, openSession, openSse, post, run, serve, withServer } from "./helpers.ts"

describe("HTTP server transport: limits and idle expiry", () => {
  it.live("maxSessions with every session busy: initialize beyond the limit gets 503; a freed slot is reusable", () =>
    withServer({ maxSessions: 2 }, async ({ url, base }) => {
      const a = await openSession(url)
      const b = await openSession(url)
      // Idle sessions would make room (session-eviction.test.ts): open streams keep these busy.
      const streams = await Promise.all([a, b].map((id) =>
        openSse(url, { headers: { accept: "text/event-stream", "mcp-session-id": id } })
      ))
      const third = await post(url, initializeBody())
      expect(third.status).toBe(503)
      expect(((await third.json()) as any).error.message).toMatch(/too many sessions/)
      const legacy = await fetch(`${base}/sse`, { headers: { accept: "text/event-stream" } })
      expect(legacy.status).toBe(503)
      await legacy.text()
      await fetch(url, { method: "DELETE", headers: { "mcp-session-id": a } })
      expect(typeof (await openSession(url))).toBe("string")
      for (const s of streams) s.reader!.close()
    }))

  it.live("maxStreamsPerSession: 429 beyond it; maxStreams: 503 server-wide", () =>
    Effect.gen(function*() {
      yield* withServer({ maxStreamsPerSession: 1 }, async ({ url }) => {
        const sessionId = await openSession(url)
        const h = { "mcp-session-id": sessionId }
        const standalone = await openSse(url, { headers: { accept: "text/event-stream", ...h } })
        expect(standalone.response.status).toBe(200)
        const refused = await post(url, { jsonrpc: "2.0", id: 2, method: "ping" }, h)
        expect(refused.status).toBe(429)
        await refused.text()
        // Notifications need no stream.
        const note = await post(url, { jsonrpc: "2.0", method: "notifications/x" }, h)
        expect(note.status).toBe(202)
        standalone.reader!.close()
      })
      yield* withServer({ maxStreams: 1 }, async ({ base, url, transport }) => {
        const first = await openSse(`${base}/mcp/events`, { headers: { accept: "text/event-stream" } })
        expect(first.response.status).toBe(200)
        const second = await fetch(`${base}/mcp/events`, { headers: { accept: "text/event-stream" } })
        expect(second.status).toBe(503)
        await second.text()
        // An initialize refused for capacity leaves no session behind.
        const init = await post(url, initializeBody())
        expect(init.status).toBe(503)
        await init.text()
        expect((await run(transport.stats)).sessions).toBe(0)
        first.reader!.close()
      })
    }))

  it.effect("idle sessions expire after the timeout; a running request keeps its session alive", () =>
    Effect.gen(function*() {
      const { url, transport, probe } = yield* serve({ sessionIdleTimeout: "30 minutes" })
      const idle = yield* Effect.promise(() => openSession(url))
      const busy = yield* Effect.promise(() => openSession(url))
      const slow = post(url, { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "slow" } }, {
        "mcp-session-id": busy
      })
      yield* Deferred.await(probe.slowStarted)
      yield* TestClock.adjust("31 minutes")
      const expired = yield* Effect.promise(() =>
        eventually(async () => (await run(transport.sessionIds)).length === 1)
      )
      expect(expired).toBe(true)
      expect(yield* transport.sessionIds).toEqual([busy])
      expect(yield* Ref.get(probe.cancelled)).toEqual([])
      const gone = yield* Effect.promise(() => post(url, { jsonrpc: "2.0", id: 1, method: "ping" }, { "mcp-session-id": idle }))
      expect(gone.status).toBe(404)
      // The request ends; the session is idle from then on and expires in its turn.
      yield* Effect.promise(() => post(url, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7 } }, { "mcp-session-id": busy }))
      expect((yield* Effect.promise(() => slow)).status).toBe(202)
      yield* TestClock.adjust("31 minutes")
      expect(yield* Effect.promise(() => eventually(async () => (await run(transport.sessionIds)).length === 0))).toBe(true)
      expect((yield* transport.stats).inFlight).toBe(0)
    }))

  it.effect("sessionIdleTimeout never: sessions stay", () =>
    Effect.gen(function*() {
      const { url, transport } = yield* serve({ sessionIdleTimeout: "never" })
      const id = yield* Effect.promise(() => openSession(url))
      yield* TestClock.adjust("100 days")
      expect(yield* transport.sessionIds).toEqual([id])
    }))
})
