/**
 * The plain `/mcp` surface: plain JSON POST (single or batch,
 * concurrent, nulls filtered), the broadcast stream with per-listener
 * backpressure and replay, and the health check.
 */
import { describe, expect, it } from "@effect/vitest"
import * as http from "node:http"
import { Deferred, Effect } from "effect"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import { testHandler } from "../../fixtures/http-test-server.ts"
import { eventually, initializeBody, isClean, openSse, run, withServer } from "./helpers.ts"

const plainPost = (url: string, body: unknown) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

/** `wait` finishes only once `release` ran: a batch holding both deadlocks unless it runs concurrently. */
const gateHandler = (): Handler => {
  const gate = Deferred.makeUnsafe<void>()
  const base = testHandler()
  return (message, context) => {
    if (message.method === "wait" && "id" in message) {
      return Effect.as(Deferred.await(gate), JsonRpc.success(message.id, { waited: true }))
    }
    if (message.method === "release" && "id" in message) {
      return Effect.as(Deferred.succeed(gate, undefined), JsonRpc.success(message.id, { released: true }))
    }
    return base(message, context)
  }
}

describe("the plain /mcp surface", () => {
  for (const options of [{ mode: "stateless" as const }, { sessionlessPost: "serve" as const }]) {
    it.live(`plain POST /mcp without a session (${JSON.stringify(options)}): single, batch, notifications`, () =>
      withServer(options, async ({ url, transport }) => {
        const single = await plainPost(url, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "add", arguments: { a: 2, b: 2 } } })
        expect(single.status).toBe(200)
        expect(single.headers.get("content-type")).toContain("application/json")
        expect(await single.json()).toEqual({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "4" }] } })

        const batch = await plainPost(url, [
          { jsonrpc: "2.0", id: "a", method: "ping" },
          { jsonrpc: "2.0", method: "notifications/ignored" },
          { jsonrpc: "2.0", id: "b", method: "nope" }
        ])
        expect(batch.status).toBe(200)
        const replies = (await batch.json()) as Array<{ id: string }>
        expect(replies.map((r) => r.id).sort()).toEqual(["a", "b"])
        expect(replies.find((r) => r.id === "b")).toMatchObject({ error: { code: -32601 } })

        const notificationsOnly = await plainPost(url, [{ jsonrpc: "2.0", method: "n/one" }, { jsonrpc: "2.0", method: "n/two" }])
        expect(notificationsOnly.status).toBe(202)
        expect(await notificationsOnly.text()).toBe("")

        // A streaming handler still answers a JSON-only client with JSON.
        const streamed = await plainPost(url, { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "progress", arguments: { steps: 2 } } })
        expect(streamed.headers.get("content-type")).toContain("application/json")
        expect(await streamed.json()).toMatchObject({ id: 3, result: { content: [{ text: "done 2" }] } })

        expect(await eventually(() => isClean(transport))).toBe(true)
      }))
  }

  it.live("a batch runs concurrently", () =>
    withServer({ mode: "stateless" }, async ({ url }) => {
      const res = await plainPost(url, [{ jsonrpc: "2.0", id: 1, method: "wait" }, { jsonrpc: "2.0", id: 2, method: "release" }])
      expect(await res.json()).toEqual(expect.arrayContaining([
        { jsonrpc: "2.0", id: 1, result: { waited: true } },
        { jsonrpc: "2.0", id: 2, result: { released: true } }
      ]))
    }, gateHandler))

  it.live("stateful default: the same plain POST without a session is refused (400), initialize still works", () =>
    withServer(undefined, async ({ url }) => {
      const res = await plainPost(url, { jsonrpc: "2.0", id: 1, method: "ping" })
      expect(res.status).toBe(400)
      await res.text()
      const init = await plainPost(url, initializeBody())
      expect(init.status).toBe(200)
      expect(init.headers.get("mcp-session-id")).not.toBeNull()
      await init.text()
    }))

  it.live("GET /mcp/health", () =>
    withServer(undefined, async ({ base }) => {
      const res = await fetch(`${base}/mcp/health`)
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ status: "ok", transport: "sse" })
    }))

  it.live("GET /mcp/events: broadcast(event, data) reaches every listener as event:/data: frames; Last-Event-ID replays", () =>
    withServer(undefined, async ({ base, transport }) => {
      const a = await openSse(`${base}/mcp/events`, { headers: { accept: "text/event-stream" } })
      const b = await openSse(`${base}/mcp/events`, { headers: { accept: "text/event-stream" } })
      expect(a.response.headers.get("cache-control")).toBe("no-cache, no-transform")
      expect(await eventually(async () => (await run(transport.stats)).broadcastListeners === 2)).toBe(true)
      const first = await run(transport.broadcast("heartbeat", { ts: 1 }))
      await run(transport.broadcast("tool-update", { name: "echo" }))
      for (const s of [a, b]) {
        expect(await s.reader!.until((r) => r.events.filter((e) => e.data !== "").length === 2)).toBe(true)
        const events = s.reader!.events.filter((e) => e.data !== "")
        expect(events.map((e) => [e.event, JSON.parse(e.data)])).toEqual([["heartbeat", { ts: 1 }], ["tool-update", { name: "echo" }]])
        expect(events[0].id).toBe(first)
      }
      expect(a.reader!.raw).toContain("event: heartbeat\ndata: {\"ts\":1}\n")
      a.reader!.close()
      b.reader!.close()
      await run(transport.broadcast("later", 3))
      const resumed = await openSse(`${base}/mcp/events`, { headers: { accept: "text/event-stream", "last-event-id": first } })
      expect(await resumed.reader!.until((r) => r.events.filter((e) => e.data !== "").length === 2)).toBe(true)
      expect(resumed.reader!.events.filter((e) => e.data !== "").map((e) => e.event)).toEqual(["tool-update", "later"])
      resumed.reader!.close()
      const bogus = await fetch(`${base}/mcp/events`, { headers: { accept: "text/event-stream", "last-event-id": "x_1" } })
      expect(bogus.status).toBe(400)
      await bogus.text()
    }))

  it.live("a listener that stops reading is dropped within its bound; the others get everything", () =>
    withServer({ broadcastBuffer: 4 }, async ({ base, port, transport }) => {
      // The slow listener: connected, never reads, so its socket fills and then its buffer.
      const slow = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = http.get({ host: "127.0.0.1", port, path: "/mcp/events", headers: { accept: "text/event-stream" } }, (res) => {
          res.pause()
          resolve(res)
        })
        req.on("error", reject)
      })
      const fast = await openSse(`${base}/mcp/events`, { headers: { accept: "text/event-stream" } })
      expect(await eventually(async () => (await run(transport.stats)).broadcastListeners === 2)).toBe(true)
      const payload = "y".repeat(256 * 1024)
      const total = 120
      for (let i = 0; i < total; i++) {
        await run(transport.broadcast("blob", { i, payload }))
        // Paced by the fast listener, so only the slow one falls behind.
        expect(await fast.reader!.until((r) => r.events.filter((e) => e.data !== "").length === i + 1)).toBe(true)
      }
      const stats = await run(transport.stats)
      expect(stats.broadcastDropped).toBe(1)
      expect(stats.broadcastListeners).toBe(1)
      expect(fast.reader!.events.filter((e) => e.data !== "").map((e) => JSON.parse(e.data).i)).toEqual(
        Array.from({ length: total }, (_, i) => i)
      )
      fast.reader!.close()
      slow.destroy()
    }))
})
