/**
 * At maxSessions the server makes room instead of refusing: sessions that
 * never finish the handshake expire, idle sessions are evicted least
 * recently used first, a principal is held to its own cap and takes slots
 * only from principals holding more, and only when every session is busy is
 * a client refused, with a Retry-After that follows the documented rule.
 *
 * The HTTP traffic is real; the server's clock is the test clock, so "least
 * recently used" and the handshake deadline are exact.
 */
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Deferred, Effect } from "effect"
import { TestClock } from "effect/testing"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import { eventually, initializeBody, openSession, openSse, post, run, serve, withServer } from "./helpers.ts"

const VERSION = "2025-11-25"

const recorder = () => {
  const ended: Array<string> = []
  return { ended, onSessionEnd: (id: string) => Effect.sync(() => void ended.push(id)) }
}

/** The status of a ping in the session (404 once the session is gone). */
const ping = (url: string, sessionId: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const res = await post(url, { jsonrpc: "2.0", id: "p", method: "ping" }, {
      "mcp-session-id": sessionId,
      "mcp-protocol-version": VERSION,
      ...headers
    })
    await res.text()
    return res.status
  })

const open = (url: string, headers: Record<string, string> = {}) => Effect.promise(() => openSession(url, VERSION, headers))

/** `initialize` alone: the session exists, its handshake is not finished. */
const initializeOnly = (url: string) =>
  Effect.promise(async () => {
    const res = await post(url, initializeBody())
    await res.text()
    return res.headers.get("mcp-session-id")!
  })

const refusedInitialize = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const res = await post(url, initializeBody(), headers)
    const body = (await res.json()) as { error: { message: string } }
    return { status: res.status, retryAfter: res.headers.get("retry-after"), message: body.error.message }
  })

/** The standalone GET stream: the session is busy while it is open. */
const standalone = (url: string, sessionId: string, headers: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const sse = await openSse(url, { headers: { accept: "text/event-stream", "mcp-session-id": sessionId, ...headers } })
      if (sse.reader === undefined) throw new Error(`GET stream refused: ${sse.response.status}`)
      return sse.reader
    }),
    (reader) => Effect.sync(() => reader.close())
  )

const later = (duration: "1 second") => TestClock.adjust(duration)

describe("HTTP server transport: sessions at the cap", () => {
  it.effect("an idle session makes room: the least recently used one ends, onSessionEnd is told, its id gets 404", () =>
    Effect.gen(function*() {
      const { ended, onSessionEnd } = recorder()
      const { url, transport } = yield* serve({ maxSessions: 5, onSessionEnd })
      const ids: Array<string> = []
      for (let i = 0; i < 5; i++) {
        ids.push(yield* open(url))
        yield* later("1 second")
      }
      // The oldest is used again: the least recently used is now the second.
      expect(yield* ping(url, ids[0])).toBe(200)
      yield* later("1 second")
      const sixth = yield* open(url)
      expect(ended).toEqual([ids[1]])
      expect(yield* ping(url, ids[1])).toBe(404)
      expect(yield* ping(url, ids[0])).toBe(200)
      expect([...(yield* transport.sessionIds)].sort()).toEqual([ids[0], ...ids.slice(2), sixth].sort())
    }))

  it.effect("a session that never finishes the handshake expires after handshakeTimeout", () =>
    Effect.gen(function*() {
      const { ended, onSessionEnd } = recorder()
      const { url, transport } = yield* serve({ handshakeTimeout: "10 seconds", onSessionEnd })
      const halfOpen = yield* initializeOnly(url)
      const complete = yield* open(url)
      // A client that skips `notifications/initialized` but goes on to use the session has finished it too.
      const skipper = yield* initializeOnly(url)
      const listed = yield* Effect.promise(async () => {
        const res = await post(url, { jsonrpc: "2.0", id: 2, method: "tools/list" }, { "mcp-session-id": skipper })
        await res.text()
        return res.status
      })
      expect(listed).toBe(200)
      yield* TestClock.adjust("9 seconds")
      expect((yield* transport.sessionIds).length).toBe(3)
      yield* TestClock.adjust("2 seconds")
      expect(yield* Effect.promise(() => eventually(async () => (await run(transport.sessionIds)).length === 2))).toBe(true)
      expect([...(yield* transport.sessionIds)].sort()).toEqual([complete, skipper].sort())
      expect(ended).toEqual([halfOpen])
      expect(yield* ping(url, halfOpen)).toBe(404)
    }))

  it.effect("a legacy SSE connection that never initializes is closed at the handshake deadline", () =>
    Effect.gen(function*() {
      const { base, transport } = yield* serve({ handshakeTimeout: "10 seconds" })
      const legacy = yield* Effect.acquireRelease(
        Effect.promise(() => openSse(`${base}/sse`, { headers: { accept: "text/event-stream" } })),
        (sse) => Effect.sync(() => sse.reader?.close())
      )
      expect(yield* Effect.promise(() => legacy.reader!.until((r) => r.events.length > 0))).toBe(true)
      expect((yield* transport.stats).legacySessions).toBe(1)
      yield* TestClock.adjust("11 seconds")
      expect(yield* Effect.promise(() => legacy.reader!.until((r) => r.ended))).toBe(true)
      expect((yield* transport.stats).legacySessions).toBe(0)
    }))

  it.effect("every session busy: 503 with Retry-After until the soonest handshake deadline, else 30 s", () =>
    Effect.gen(function*() {
      const { url, base, probe, transport } = yield* serve({ maxSessions: 3, handshakeTimeout: "30 seconds" })
      const streaming = yield* open(url)
      yield* standalone(url, streaming)
      const working = yield* open(url)
      const slow = post(url, { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "slow" } }, {
        "mcp-session-id": working
      })
      yield* Deferred.await(probe.slowStarted)
      // Busy too, but its handshake deadline is known: its stream does not keep it past that.
      const halfOpen = yield* initializeOnly(url)
      const halfOpenStream = yield* standalone(url, halfOpen)

      yield* TestClock.adjust("10 seconds")
      const first = yield* refusedInitialize(url)
      expect(first).toEqual({ status: 503, retryAfter: "20", message: "Service unavailable: too many sessions" })
      const legacy = yield* Effect.promise(async () => {
        const res = await fetch(`${base}/sse`, { headers: { accept: "text/event-stream" } })
        await res.text()
        return { status: res.status, retryAfter: res.headers.get("retry-after") }
      })
      expect(legacy).toEqual({ status: 503, retryAfter: "20" })

      yield* TestClock.adjust("20 seconds")
      expect(yield* Effect.promise(() => halfOpenStream.until((r) => r.ended))).toBe(true)
      const next = yield* open(url)
      yield* standalone(url, next)
      // No handshake pending: nothing says when a slot frees, so the bound.
      expect(yield* refusedInitialize(url)).toMatchObject({ status: 503, retryAfter: "30" })

      // The request ends: its session is idle and makes room.
      yield* Effect.promise(async () => {
        const cancel = await post(url, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7 } }, {
          "mcp-session-id": working
        })
        await cancel.text()
        await (await slow).text()
      })
      // Its POST has ended once only the two GET streams are open.
      expect(yield* Effect.promise(() => eventually(async () => (await run(transport.stats)).openStreams === 2))).toBe(true)
      yield* open(url)
      expect(yield* ping(url, working)).toBe(404)
    }))

  it.effect("a connected legacy SSE session is busy: never evicted; it ends with its connection", () =>
    Effect.gen(function*() {
      const { url, base, transport } = yield* serve({ maxSessions: 2 })
      const legacy = yield* Effect.acquireRelease(
        Effect.promise(() => openSse(`${base}/sse`, { headers: { accept: "text/event-stream" } })),
        (sse) => Effect.sync(() => sse.reader?.close())
      )
      expect(legacy.response.status).toBe(200)
      yield* later("1 second")
      const idle = yield* open(url)
      yield* later("1 second")
      const newer = yield* open(url)
      expect(yield* ping(url, idle)).toBe(404)
      expect((yield* transport.stats).legacySessions).toBe(1)
      yield* standalone(url, newer)
      expect(yield* refusedInitialize(url)).toMatchObject({ status: 503 })
      legacy.reader!.close()
      expect(yield* Effect.promise(() => eventually(async () => (await run(transport.stats)).legacySessions === 0))).toBe(true)
      yield* open(url)
    }))
})

describe("HTTP server transport: sessions per principal", () => {
  // The principal is whoever the `x-user` header names.
  const authenticate: HttpServerTransport.Authenticate = (request) =>
    Effect.succeed({ id: request.headers["x-user"] ?? "nobody" })
  const as = (user: string) => ({ "x-user": user })

  it.effect("at its cap (by default a tenth of maxSessions) a principal recycles its own idle sessions, not another's", () =>
    Effect.gen(function*() {
      const { ended, onSessionEnd } = recorder()
      const { url } = yield* serve({ maxSessions: 20, authenticate, onSessionEnd })
      const bob = yield* open(url, as("bob"))
      yield* later("1 second")
      const alice1 = yield* open(url, as("alice"))
      yield* later("1 second")
      yield* open(url, as("alice"))
      yield* later("1 second")
      yield* open(url, as("alice"))
      expect(ended).toEqual([alice1])
      expect(yield* ping(url, bob, as("bob"))).toBe(200)
    }))

  it.effect("at its cap with every session busy a principal gets 429 with Retry-After; others still get in", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ maxSessions: 10, maxSessionsPerPrincipal: 2, authenticate })
      for (let i = 0; i < 2; i++) yield* standalone(url, yield* open(url, as("alice")), as("alice"))
      expect(yield* refusedInitialize(url, as("alice"))).toEqual({
        status: 429,
        retryAfter: "30",
        message: "Too many sessions for this principal"
      })
      yield* open(url, as("bob"))
    }))

  it.effect("at the server cap a principal takes idle slots only from principals holding more sessions than it", () =>
    Effect.gen(function*() {
      const { ended, onSessionEnd } = recorder()
      const { url } = yield* serve({ maxSessions: 4, maxSessionsPerPrincipal: "none", authenticate, onSessionEnd })
      const bob = yield* open(url, as("bob"))
      const alice: Array<string> = []
      for (let i = 0; i < 3; i++) {
        yield* later("1 second")
        alice.push(yield* open(url, as("alice")))
      }
      // Carol holds none: bob's one session, the least recently used, may go.
      yield* later("1 second")
      const carol = yield* open(url, as("carol"))
      expect(ended).toEqual([bob])
      // Alice holds the most: she recycles her own, though carol's is idle too.
      yield* later("1 second")
      yield* open(url, as("alice"))
      expect(ended).toEqual([bob, alice[0]])
      // Bob, holding none now, may take from either; alice's is the least recently used.
      yield* later("1 second")
      yield* open(url, as("bob"))
      expect(ended).toEqual([bob, alice[0], alice[1]])
      expect(yield* ping(url, carol, as("carol"))).toBe(200)
    }))
})

describe("official SDK client against a full server", () => {
  it.live("connect and close (no DELETE) more times than maxSessions: every connect succeeds", () => {
    const { ended, onSessionEnd } = recorder()
    return withServer({ maxSessions: 3, onSessionEnd }, async ({ url, transport }) => {
      const runs = 8
      for (let i = 0; i < runs; i++) {
        const client = new Client({ name: "churn", version: "1.0.0" })
        await client.connect(new StreamableHTTPClientTransport(new URL(url)))
        await client.ping()
        await client.close()
      }
      expect(ended.length).toBe(runs - 3)
      expect((await run(transport.sessionIds)).length).toBe(3)
    })
  })
})
