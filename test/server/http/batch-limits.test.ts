/**
 * Batches against the HTTP server's limits: a batch holds at most
 * `maxBatchSize` entries, and each request in it takes a slot of
 * `maxStreams` / `maxStreamsPerSession` as a separate POST would.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Ref } from "effect"
import { eventually, isClean, openSession, openSse, post, run, withServer } from "./helpers.ts"

const call = (id: number | string, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args }
})
const ping = (id: number | string) => ({ jsonrpc: "2.0", id, method: "ping" })
const echoes = (n: number) => Array.from({ length: n }, (_, i) => call(i + 1, "echo", { text: `e${i + 1}` }))

/** A 2025-03-26 session (the revision with batches) and the headers that name it. */
const oldSession = async (url: string) => {
  const id = await openSession(url, "2025-03-26")
  return { "mcp-session-id": id, "mcp-protocol-version": "2025-03-26" }
}

const byId = (replies: ReadonlyArray<any>) => new Map(replies.map((r) => [r.id, r]))

describe("HTTP server transport: batch limits", () => {
  it.live("a batch over maxBatchSize is refused with 413 and a JSON-RPC error, and none of it runs", () =>
    withServer({ maxBatchSize: 3 }, async ({ url, probe, transport }) => {
      const h = await oldSession(url)
      const refused = await post(url, [...echoes(3), { jsonrpc: "2.0", method: "notifications/x" }], h)
      expect(refused.status).toBe(413)
      expect(await refused.json()).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: "Invalid Request: a batch may hold at most 3 entries", data: { limit: 3, size: 4 } }
      })
      const methods = await run(Ref.get(probe.methods))
      expect(methods).not.toContain("tools/call")
      expect(methods).not.toContain("notifications/x")

      const accepted = await post(url, echoes(3), h)
      expect(accepted.status).toBe(200)
      expect(((await accepted.json()) as Array<any>).map((r) => r.result.content[0].text)).toEqual(["e1", "e2", "e3"])
      expect(await eventually(async () => (await run(transport.stats)).openStreams === 0)).toBe(true)
    }))

  it.live("the default maxBatchSize is 100, on the session-less POST surface too", () =>
    withServer({ sessionlessPost: "serve" }, async ({ url, transport }) => {
      const over = await post(url, Array.from({ length: 101 }, (_, i) => ping(i)))
      expect(over.status).toBe(413)
      expect(((await over.json()) as any).error.data).toEqual({ limit: 100, size: 101 })
      expect((await run(transport.stats)).ephemeralSessions).toBe(0)
      const full = await post(url, Array.from({ length: 100 }, (_, i) => ping(i)))
      expect(full.status).toBe(200)
      expect(((await full.json()) as Array<any>).length).toBe(100)
    }))

  it.live("maxBatchSize bounds batches only: with 0 every batch is refused and a single request is served", () =>
    withServer({ maxBatchSize: 0 }, async ({ url }) => {
      const h = await oldSession(url)
      const single = await post(url, ping(1), h)
      expect(await single.json()).toEqual({ jsonrpc: "2.0", id: 1, result: {} })
      const batch = await post(url, [ping(2)], h)
      expect(batch.status).toBe(413)
      await batch.text()
    }))

  it.live("a running batch holds one slot per request: a separate request beyond maxStreamsPerSession gets 429", () =>
    withServer({ maxStreamsPerSession: 3 }, async ({ url, probe, transport }) => {
      const h = await oldSession(url)
      const batch = post(url, [call("s1", "slow"), call("s2", "slow"), call("s3", "slow")], h).then((r) => r.text())
      await run(Deferred.await(probe.slowStarted))
      const refused = await post(url, ping(9), h)
      expect(refused.status).toBe(429)
      expect(((await refused.json()) as any).error.message).toBe("Too many open streams for this session")
      await fetch(url, { method: "DELETE", headers: h })
      await batch
      expect(await eventually(() => isClean(transport))).toBe(true)
    }))

  it.live("requests past maxStreamsPerSession get per-entry errors; the others and the notifications are served", () =>
    withServer({ maxStreamsPerSession: 3 }, async ({ url, probe }) => {
      const h = await oldSession(url)
      const standalone = await openSse(url, { headers: { accept: "text/event-stream", ...h } })
      expect(standalone.response.status).toBe(200)
      const res = await post(url, [
        call(1, "echo", { text: "a" }),
        { jsonrpc: "2.0", method: "notifications/x" },
        call(2, "echo", { text: "b" }),
        call(3, "echo", { text: "c" }),
        ping(4)
      ], h)
      expect(res.status).toBe(200)
      const replies = byId((await res.json()) as Array<any>)
      expect(replies.size).toBe(4)
      expect(replies.get(1).result.content[0].text).toBe("a")
      expect(replies.get(2).result.content[0].text).toBe("b")
      for (const id of [3, 4]) {
        expect(replies.get(id)).toEqual({
          jsonrpc: "2.0",
          id,
          error: { code: -32600, message: "Too many open streams for this session" }
        })
      }
      const methods = await run(Ref.get(probe.methods))
      expect(methods.filter((m) => m === "tools/call").length).toBe(2)
      expect(methods).toContain("notifications/x")
      expect(methods).not.toContain("ping")
      standalone.reader!.close()
    }))

  it.live("stateless mode: requests past maxStreams get the server-wide error per entry", () =>
    withServer({ mode: "stateless", maxStreams: 2 }, async ({ url, transport }) => {
      const res = await post(url, echoes(3))
      expect(res.status).toBe(200)
      const replies = byId((await res.json()) as Array<any>)
      expect(replies.get(1).result.content[0].text).toBe("e1")
      expect(replies.get(2).result.content[0].text).toBe("e2")
      expect(replies.get(3).error).toEqual({ code: -32600, message: "Service unavailable: too many open streams" })
      // The slots came back with the answer.
      expect(await eventually(async () => (await run(transport.stats)).openStreams === 0)).toBe(true)
      const again = await post(url, echoes(2))
      expect(((await again.json()) as Array<any>).every((r) => "result" in r)).toBe(true)
    }))

  it.live("a batch that finds no free slot is refused whole, as a single request is", () =>
    withServer({ maxStreamsPerSession: 1 }, async ({ url, probe }) => {
      const h = await oldSession(url)
      const standalone = await openSse(url, { headers: { accept: "text/event-stream", ...h } })
      const refused = await post(url, echoes(2), h)
      expect(refused.status).toBe(429)
      expect(refused.headers.get("retry-after")).toBe("1")
      await refused.text()
      expect(await run(Ref.get(probe.methods))).not.toContain("tools/call")
      standalone.reader!.close()
    }))
})
