/**
 * Clients that stop reading a stream the server writes to them (legacy SSE,
 * the standalone GET stream, a POST's SSE answer, the broadcast stream): the
 * server holds a bounded number of bytes for each, refuses or drops as
 * documented, keeps serving everyone else, and lets go of everything once
 * the client is gone. The clients are raw node:http requests whose response
 * is paused, so the socket fills and stays full.
 */
import * as http from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Stream } from "effect"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import * as EventStore from "../../../src/server/EventStore.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import * as OutStream from "../../../src/server/http/OutStream.ts"
import { testHandler } from "../../fixtures/http-test-server.ts"
import { eventually, isClean, openSession, openSse, post, run, withServer } from "./helpers.ts"

const LIMIT = 256 * 1024
const MESSAGE = 64 * 1024
/**
 * More than the bound plus what the kernel's and Node's socket buffers take
 * before a full socket shows (a few MiB on loopback), in `MESSAGE`s.
 */
const ENOUGH = 400

/** The test server's tools plus `flood {count, bytes}`: that many notifications of that size, then a result. */
const flooding = (probe: Parameters<typeof testHandler>[0]): Handler => (message, context) => {
  const params = (message.params ?? {}) as { name?: string; arguments?: { count?: number; bytes?: number } }
  if (!("id" in message) || message.method !== "tools/call" || params.name !== "flood") {
    return testHandler(probe)(message, context)
  }
  const filler = "f".repeat(params.arguments?.bytes ?? MESSAGE)
  return Effect.as(
    Effect.forEach(
      Array.from({ length: params.arguments?.count ?? ENOUGH }, (_, i) => i),
      (i) => context.notify("notifications/message", { level: "info", data: { i, filler } }),
      { discard: true }
    ),
    JsonRpc.success(message.id, { content: [{ type: "text", text: "flooded" }] })
  )
}

interface Stalled {
  /** What arrived before the client stopped reading. */
  readonly text: string
  /** Reads again and waits (bounded) for the response to end; false if it did not. */
  readonly ends: () => Promise<boolean>
  readonly destroy: () => void
}

/** Sends a request, reads its response until `enough` holds for what arrived, then stops reading. */
const stall = (
  port: number,
  options: { method: string; path: string; headers: Record<string, string>; body?: string },
  enough: (text: string) => boolean
) =>
  new Promise<Stalled>((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, ...options }, (res) => {
      let ended = false
      const waiters: Array<() => void> = []
      const onEnd = () => {
        ended = true
        for (const w of waiters.splice(0)) w()
      }
      res.on("close", onEnd)
      res.on("error", onEnd)
      let text = ""
      const onData = (chunk: Buffer) => {
        text += chunk.toString("utf8")
        if (!enough(text)) return
        res.off("data", onData)
        res.pause()
        resolve({
          text,
          ends: () => {
            res.resume()
            return ended ? Promise.resolve(true) : new Promise<boolean>((done) => {
              const timer = setTimeout(() => done(false), 10_000)
              waiters.push(() => {
                clearTimeout(timer)
                done(true)
              })
            })
          },
          destroy: () => req.destroy()
        })
      }
      res.on("data", onData)
    })
    req.on("error", reject)
    req.end(options.body)
  })

const echo = (id: number, bytes = MESSAGE) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "echo", arguments: { text: "e".repeat(bytes) } }
})

const postLegacy = (base: string, endpoint: string, body: unknown) =>
  fetch(`${base}${endpoint}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

const openLegacyStalled = async (port: number) => {
  const stalled = await stall(port, { method: "GET", path: "/sse", headers: { accept: "text/event-stream" } }, (text) =>
    /event: endpoint\ndata: .*\n\n/.test(text))
  return { stalled, endpoint: /event: endpoint\ndata: (.*)\n/.exec(stalled.text)![1]! }
}

describe("HTTP server transport: clients that do not read", () => {
  it.live("legacy SSE: POSTs get 503 with Retry-After once the stream is backed up; others are served; all is freed when the client leaves", () =>
    withServer({ maxBufferedBytesPerStream: LIMIT }, async ({ base, port, url, transport }) => {
      const { endpoint, stalled } = await openLegacyStalled(port)
      let refused: Response | undefined
      for (let id = 1; id <= ENOUGH && refused === undefined; id++) {
        const res = await postLegacy(base, endpoint, echo(id))
        if (res.status === 202) await res.text()
        else refused = res
      }
      // Refused within a bounded number of messages, with a JSON-RPC error for the request.
      expect(refused?.status).toBe(503)
      expect(refused!.headers.get("retry-after")).toBe("1")
      const error = (await refused!.json()) as { id: null; error: { code: number; message: string } }
      expect(error.id).toBe(null)
      expect(error.error.code).toBe(JsonRpc.ErrorCode.InvalidRequest)
      expect(error.error.message).toMatch(/not being read/)
      // What the server holds for the client: about half the bound (the rest is in socket buffers).
      expect((await run(transport.stats)).bufferedBytes).toBeLessThanOrEqual(LIMIT / 2 + 2 * MESSAGE)
      // Still refused while nothing is read; a notification adds nothing to the stream and still passes.
      expect((await postLegacy(base, endpoint, echo(ENOUGH + 1))).status).toBe(503)
      const note = await postLegacy(base, endpoint, { jsonrpc: "2.0", method: "notifications/initialized" })
      expect(note.status).toBe(202)
      await note.text()

      // Everyone else is served: another legacy client and a Streamable HTTP client.
      const other = await openSse(`${base}/sse`, { headers: { accept: "text/event-stream" } })
      expect(await other.reader!.until((r) => r.events.some((e) => e.event === "endpoint"))).toBe(true)
      const otherEndpoint = other.reader!.events.find((e) => e.event === "endpoint")!.data
      expect((await postLegacy(base, otherEndpoint, echo(1, 10))).status).toBe(202)
      expect(await other.reader!.until((r) => r.messages().some((m) => m.id === 1))).toBe(true)
      const sessionId = await openSession(url)
      const ping = await post(url, { jsonrpc: "2.0", id: 9, method: "ping" }, { "mcp-session-id": sessionId })
      expect(ping.status).toBe(200)
      await ping.text()

      // The slow client leaves: its session, stream and buffer go.
      stalled.destroy()
      expect(await eventually(async () => (await run(transport.stats)).legacySessions === 1)).toBe(true)
      other.reader!.close()
      await fetch(url, { method: "DELETE", headers: { "mcp-session-id": sessionId } })
      expect(await eventually(() => isClean(transport))).toBe(true)
      expect((await run(transport.stats)).bufferedBytes).toBe(0)
    })
  )

  it.live("legacy SSE: replies already under way that overflow the stream cut its connection and end the session", () =>
    withServer({ maxBufferedBytesPerStream: LIMIT }, async ({ base, port, transport }) => {
      const { endpoint, stalled } = await openLegacyStalled(port)
      const res = await postLegacy(base, endpoint, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "flood" } })
      expect(res.status).toBe(202)
      await res.text()
      expect(await eventually(async () => {
        const stats = await run(transport.stats)
        return stats.streamsDropped === 1 && stats.legacySessions === 0 && stats.openStreams === 0
      })).toBe(true)
      // The client sees its stream end, and the session is gone.
      expect(await stalled.ends()).toBe(true)
      const late = await postLegacy(base, endpoint, echo(2, 10))
      expect(late.status).toBe(404)
      await late.text()
      expect(await eventually(() => isClean(transport))).toBe(true)
      expect((await run(transport.stats)).bufferedBytes).toBe(0)
    }, flooding)
  )

  it.live("standalone GET stream: a reader that falls behind is dropped; the session lives on and the client resumes", () =>
    withServer({
      maxBufferedBytesPerStream: LIMIT,
      // Room for every event of the flood, so a resumption can be checked against all of them.
      eventStore: EventStore.makeMemoryUnsafe({ maxBytes: 64 * 1024 * 1024 })
    }, async ({ port, url, transport }) => {
      const sessionId = await openSession(url)
      const headers = { accept: "text/event-stream", "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
      const stalled = await stall(port, { method: "GET", path: "/mcp", headers }, (text) => /id: .*\n/.test(text) && text.endsWith("\n\n"))
      const primingId = /id: (.*)\n/.exec(stalled.text)![1]!
      const context = Option.getOrThrow(await run(transport.sessionContext(sessionId)))
      const filler = "s".repeat(MESSAGE)
      for (let i = 0; i < ENOUGH; i++) await run(context.notify("notifications/message", { level: "info", data: { i, filler } }))
      expect((await run(transport.stats)).streamsDropped).toBe(1)
      expect(await stalled.ends()).toBe(true)
      // While no GET stream is connected, the session keeps a bounded tail of what it sends.
      expect((await run(transport.stats)).bufferedBytes).toBeLessThanOrEqual(LIMIT + 2 * MESSAGE)
      const ping = await post(url, { jsonrpc: "2.0", id: 2, method: "ping" }, { "mcp-session-id": sessionId })
      expect(ping.status).toBe(200)
      await ping.text()
      // Resumed: in order, no repeats, up to the last message sent.
      const resumed = await openSse(url, { headers: { ...headers, "last-event-id": primingId } })
      expect(await resumed.reader!.until((r) => r.messages().some((m) => m.params.data.i === ENOUGH - 1))).toBe(true)
      const seen = resumed.reader!.messages().map((m) => m.params.data.i as number)
      expect(seen).toEqual([...seen].sort((a, b) => a - b))
      expect(new Set(seen).size).toBe(seen.length)
      resumed.reader!.close()
      await fetch(url, { method: "DELETE", headers: { "mcp-session-id": sessionId } })
      expect(await eventually(() => isClean(transport))).toBe(true)
    })
  )

  it.live("POST answered over SSE: a reader that falls behind is dropped; the handler finishes and the session is still served", () =>
    withServer({ maxBufferedBytesPerStream: LIMIT }, async ({ port, url, transport }) => {
      const sessionId = await openSession(url)
      const stalled = await stall(port, {
        method: "POST",
        path: "/mcp",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": sessionId,
          "mcp-protocol-version": "2025-11-25"
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "flood" } })
      }, (text) => text.includes("\n\n"))
      expect(await eventually(async () => {
        const stats = await run(transport.stats)
        return stats.streamsDropped === 1 && stats.inFlight === 0 && stats.work === 0
      })).toBe(true)
      expect(await stalled.ends()).toBe(true)
      expect((await run(transport.stats)).bufferedBytes).toBeLessThanOrEqual(LIMIT + 2 * MESSAGE)
      const ping = await post(url, { jsonrpc: "2.0", id: 6, method: "ping" }, { "mcp-session-id": sessionId })
      expect(ping.status).toBe(200)
      await ping.text()
      await fetch(url, { method: "DELETE", headers: { "mcp-session-id": sessionId } })
      expect(await eventually(() => isClean(transport))).toBe(true)
    }, flooding)
  )

  it.live("broadcast: a listener that falls behind in bytes is cut off, whatever its event count; the others get everything", () =>
    withServer({ maxBufferedBytesPerStream: LIMIT, broadcastBuffer: 1_000_000 }, async ({ base, port, transport }) => {
      const slow = await stall(port, { method: "GET", path: "/mcp/events", headers: { accept: "text/event-stream" } }, (text) =>
        text.includes("\n\n"))
      const fast = await openSse(`${base}/mcp/events`, { headers: { accept: "text/event-stream" } })
      expect(await eventually(async () => (await run(transport.stats)).broadcastListeners === 2)).toBe(true)
      const payload = "y".repeat(MESSAGE)
      for (let i = 0; i < ENOUGH / 2; i++) {
        await run(transport.broadcast("blob", { i, payload }))
        // Paced by the fast listener, so only the slow one falls behind.
        expect(await fast.reader!.until((r) => r.events.filter((e) => e.data !== "").length === i + 1)).toBe(true)
      }
      const stats = await run(transport.stats)
      expect(stats.broadcastDropped).toBe(1)
      expect(stats.broadcastListeners).toBe(1)
      // Cut, not left to drain into a socket nobody reads: its stream slot is free again.
      expect(await eventually(async () => (await run(transport.stats)).openStreams === 1)).toBe(true)
      expect(await slow.ends()).toBe(true)
      fast.reader!.close()
      expect(await eventually(() => isClean(transport))).toBe(true)
    })
  )
})

describe("OutStream: bytes held without a reader", () => {
  const message = (i: number): JsonRpc.JsonRpcMessage => ({
    jsonrpc: "2.0",
    method: "notifications/message",
    params: { i, filler: "m".repeat(1000) }
  })
  const read = (out: OutStream.OutStream) =>
    out.attach({ priming: false, retryMs: undefined, lastEventId: undefined }).pipe(
      Stream.decodeText,
      Stream.mkString
    )

  it.effect("a stream with a capacity keeps the newest messages within the bound", () =>
    Effect.gen(function*() {
      const out = yield* OutStream.make({ streamId: "s", store: undefined, capacity: 1000, maxBufferedBytes: 10_000 })
      for (let i = 0; i < 100; i++) expect(yield* out.offer(message(i))).toBe(true)
      expect(out.bufferedBytes()).toBeLessThanOrEqual(10_000)
      yield* out.end
      const text = yield* read(out)
      const seen = [...text.matchAll(/"i":(\d+)/g)].map((m) => Number(m[1]))
      expect(seen.length).toBeGreaterThan(5)
      expect(seen).toEqual(Array.from({ length: seen.length }, (_, k) => 100 - seen.length + k))
    }))

  it.effect("a stream whose reader went away ends once more than the bound waits for it", () =>
    Effect.gen(function*() {
      const out = yield* OutStream.make({ streamId: "p", store: EventStore.makeMemoryUnsafe(), maxBufferedBytes: 10_000 })
      // A reader came and went.
      yield* out.attach({ priming: false, retryMs: undefined, lastEventId: undefined }).pipe(Stream.take(1), Stream.runDrain)
      let accepted = 0
      while (accepted < 1000 && (yield* out.offer(message(accepted)))) accepted++
      expect(accepted).toBeGreaterThan(5)
      expect(accepted).toBeLessThanOrEqual(12)
      expect(out.isEnded()).toBe(true)
      expect(out.bufferedBytes()).toBe(0)
    }))

  it.effect("closing frees the frames a connection left unread; messages stay for a JSON answer", () =>
    Effect.gen(function*() {
      const out = yield* OutStream.make({ streamId: "c", store: EventStore.makeMemoryUnsafe(), maxBufferedBytes: 100_000 })
      for (let i = 0; i < 5; i++) yield* out.offer(message(i))
      // A connection takes its opening frame only; the five framed messages come back to the stream.
      yield* out.attach({ priming: true, retryMs: undefined, lastEventId: undefined }).pipe(Stream.take(1), Stream.runDrain)
      const framed = out.bufferedBytes()
      expect(framed).toBeGreaterThan(5000)
      yield* out.offer(message(5))
      yield* out.close
      expect(out.bufferedBytes()).toBeGreaterThan(1000)
      expect(out.bufferedBytes()).toBeLessThan(framed)
      expect((yield* out.takeQueued).map((q) => q.json)).toEqual([JSON.stringify(message(5))])
      expect(out.bufferedBytes()).toBe(0)
    }))

  it.effect("one message larger than the bound is still kept", () =>
    Effect.gen(function*() {
      const out = yield* OutStream.make({ streamId: "b", store: undefined, capacity: 10, maxBufferedBytes: 100 })
      expect(yield* out.offer(message(1))).toBe(true)
      expect(out.bufferedBytes()).toBeGreaterThan(100)
      yield* out.end
      expect(yield* read(out)).toContain("\"i\":1")
    }))
})
