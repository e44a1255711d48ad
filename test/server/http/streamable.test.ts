/**
 * Streamable HTTP over raw loopback HTTP: JSON or SSE answers, the
 * standalone GET stream, resumption with Last-Event-ID, server-to-client
 * requests, cancellation from another POST, and teardown.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Option, Ref } from "effect"
import { WHOLE_BODY_LIMIT } from "../../../src/server/http/OutStream.ts"
import { FINISHED_STREAMS_KEPT } from "../../../src/server/http/Sessions.ts"
import { eventually, isClean, openSession, openSse, post, run, withServer } from "./helpers.ts"

const call = (id: number | string, name: string, args: Record<string, unknown> = {}, meta?: Record<string, unknown>) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: meta === undefined ? { name, arguments: args } : { name, arguments: args, _meta: meta }
})

/** POSTs `body` on a session, accepting JSON or SSE, and reads the answer as SSE. */
const postSse = (url: string, headers: Record<string, string>, body: unknown) =>
  openSse(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body)
  })

describe("Streamable HTTP server", () => {
  it.live("a plain request gets JSON; a request whose handler streams gets SSE with ids, priming and retry", () =>
    withServer(undefined, async ({ url }) => {
      const sessionId = await openSession(url)
      const h = { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
      const plain = await post(url, call(2, "echo", { text: "hi" }), h)
      expect(plain.headers.get("content-type")).toContain("application/json")
      expect(plain.headers.get("mcp-session-id")).toBe(sessionId)
      expect(await plain.json()).toEqual({ jsonrpc: "2.0", id: 2, result: { content: [{ type: "text", text: "hi" }] } })

      const { response, reader } = await openSse(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...h },
        body: JSON.stringify(call(3, "progress", { steps: 2 }, { progressToken: "p1" }))
      })
      expect(response.headers.get("content-type")).toBe("text/event-stream")
      expect(response.headers.get("cache-control")).toBe("no-cache, no-transform")
      expect(response.headers.get("x-accel-buffering")).toBe("no")
      await reader!.done
      const first = reader!.events[0]
      expect(first.data).toBe("")
      expect(first.id).toBeDefined()
      expect(reader!.events.some((e) => e.retry === 1000)).toBe(true)
      const messages = reader!.messages()
      expect(messages.map((m) => m.method ?? "result")).toEqual([
        "notifications/progress",
        "notifications/message",
        "notifications/progress",
        "notifications/message",
        "result"
      ])
      expect(messages[0].params).toEqual({ progressToken: "p1", progress: 1, total: 2 })
      expect(messages[4]).toEqual({ jsonrpc: "2.0", id: 3, result: { content: [{ type: "text", text: "done 2" }] } })
      const ids = reader!.events.filter((e) => e.id !== undefined).map((e) => e.id)
      expect(new Set(ids).size).toBe(ids.length)
    }))

  it.live("a JSON-only client gets JSON whatever its handler sends on the way: notifications go to the standalone stream, a cut stream changes nothing", () =>
    withServer(undefined, async ({ url }) => {
      const sessionId = await openSession(url)
      const h = { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
      const standalone = await openSse(url, { headers: { ...h, accept: "text/event-stream" } })
      expect(standalone.response.status).toBe(200)
      const jsonOnly = { ...h, accept: "application/json" }

      const progress = await post(url, call(2, "progress", { steps: 2 }, { progressToken: "p2" }), jsonOnly)
      expect(progress.headers.get("content-type")).toContain("application/json")
      expect(await progress.json()).toEqual({ jsonrpc: "2.0", id: 2, result: { content: [{ type: "text", text: "done 2" }] } })
      expect(await standalone.reader!.until((r) => r.messages().length === 4)).toBe(true)
      expect(standalone.reader!.messages().map((m) => m.method)).toEqual([
        "notifications/progress",
        "notifications/message",
        "notifications/progress",
        "notifications/message"
      ])

      // The handler closes its request's stream before the answer: there is none to close on a JSON exchange.
      const cut = await post(url, call(3, "reconnect"), jsonOnly)
      expect(cut.status).toBe(200)
      expect(cut.headers.get("content-type")).toContain("application/json")
      expect(await cut.json()).toEqual({ jsonrpc: "2.0", id: 3, result: { content: [{ type: "text", text: "reconnected" }] } })
      standalone.reader!.close()
    }))

  it.live("no priming event for clients of revisions before 2025-11-25", () =>
    withServer(undefined, async ({ url }) => {
      const sessionId = await openSession(url, "2025-06-18")
      const { reader } = await openSse(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" },
        body: JSON.stringify(call(2, "progress", { steps: 1 }))
      })
      await reader!.done
      expect(reader!.events.filter((e) => e.id !== undefined && e.data === "")).toEqual([])
      expect(reader!.messages().at(-1)).toMatchObject({ id: 2 })
    }))

  it.live("responseMode sse: every request is answered with a stream; a client accepting only JSON still gets JSON", () =>
    withServer({ responseMode: "sse" }, async ({ url }) => {
      const sessionId = await openSession(url)
      const { response, reader } = await openSse(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sessionId },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "ping" })
      })
      expect(response.headers.get("content-type")).toBe("text/event-stream")
      await reader!.done
      expect(reader!.messages()).toEqual([{ jsonrpc: "2.0", id: 7, result: {} }])
      const jsonOnly = await post(url, { jsonrpc: "2.0", id: 8, method: "ping" }, { "mcp-session-id": sessionId, accept: "application/json" })
      expect(jsonOnly.headers.get("content-type")).toContain("application/json")
      expect(await jsonOnly.json()).toEqual({ jsonrpc: "2.0", id: 8, result: {} })
    }))

  it.live("responseMode sse: an answer ready at once is one whole SSE body (length known), stored and resumable like a stream", () =>
    withServer({ responseMode: "sse" }, async ({ url }) => {
      const sessionId = await openSession(url)
      const h = { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
      const { response, reader } = await postSse(url, h, { jsonrpc: "2.0", id: 9, method: "ping" })
      expect(response.headers.get("content-type")).toBe("text/event-stream")
      expect(response.headers.get("cache-control")).toBe("no-cache, no-transform")
      expect(Number(response.headers.get("content-length"))).toBeGreaterThan(0)
      await reader!.done
      // The priming event (an id, empty data, the retry field) first, then the response with its own id.
      const priming = reader!.events[0]
      expect(priming).toMatchObject({ data: "" })
      expect(priming.id).toBeDefined()
      expect(reader!.events.some((e) => e.retry === 1000)).toBe(true)
      const answers = reader!.events.filter((e) => e.data !== "")
      expect(answers).toHaveLength(1)
      expect(answers[0].id).toBeDefined()
      expect(reader!.messages()).toEqual([{ jsonrpc: "2.0", id: 9, result: {} }])
      const replay = await openSse(url, { headers: { accept: "text/event-stream", ...h, "last-event-id": priming.id! } })
      await replay.reader!.done
      expect(replay.reader!.messages()).toEqual([{ jsonrpc: "2.0", id: 9, result: {} }])
    }))

  it.live("responseMode sse: an answer over WHOLE_BODY_LIMIT is streamed, not sent whole, and arrives intact", () =>
    withServer({ responseMode: "sse" }, async ({ url }) => {
      const sessionId = await openSession(url)
      const text = "x".repeat(WHOLE_BODY_LIMIT + 1)
      const { response, reader } = await postSse(url, { "mcp-session-id": sessionId }, call(11, "echo", { text }))
      expect(response.headers.get("content-length")).toBeNull()
      await reader!.done
      expect(reader!.messages()).toEqual([{ jsonrpc: "2.0", id: 11, result: { content: [{ type: "text", text }] } }])
    }))

  it.live("responseMode sse: a handler that sends progress before its answer is streamed, one message per write", () =>
    withServer({ responseMode: "sse" }, async ({ url }) => {
      const sessionId = await openSession(url)
      const h = { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
      const { response, reader } = await postSse(url, h, call(10, "progress", { steps: 2 }))
      expect(response.headers.get("content-length")).toBeNull()
      await reader!.done
      expect(reader!.messages().at(-1)).toMatchObject({ id: 10 })
      expect(reader!.messages().length).toBe(3)
    }))

  it.live("GET opens one standalone stream per session; server-initiated messages travel on it", () =>
    withServer(undefined, async ({ url, transport }) => {
      const sessionId = await openSession(url)
      const h = { accept: "text/event-stream", "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
      const first = await openSse(url, { headers: h })
      expect(first.response.status).toBe(200)
      expect(first.response.headers.get("x-accel-buffering")).toBe("no")
      expect(await first.reader!.until((r) => r.events.length >= 1)).toBe(true)
      expect(first.reader!.events[0].data).toBe("")
      const second = await fetch(url, { headers: h })
      expect(second.status).toBe(409)
      await second.text()
      const context = Option.getOrThrow(await run(transport.sessionContext(sessionId)))
      await run(context.notify("notifications/resources/list_changed"))
      expect(await first.reader!.until((r) => r.messages().length === 1)).toBe(true)
      expect(first.reader!.messages()[0]).toEqual({ jsonrpc: "2.0", method: "notifications/resources/list_changed" })
      first.reader!.close()
      // Once the first connection is gone, a new one may open.
      expect(await eventually(async () => {
        const again = await openSse(url, { headers: h })
        if (again.response.status !== 200) {
          await again.response.text()
          return false
        }
        again.reader!.close()
        return true
      })).toBe(true)
    }))

  it.live("GET with Last-Event-ID resumes the standalone stream: missed messages once, in order", () =>
    withServer(undefined, async ({ url, transport }) => {
      const sessionId = await openSession(url)
      const h = { accept: "text/event-stream", "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
      const context = Option.getOrThrow(await run(transport.sessionContext(sessionId)))
      const first = await openSse(url, { headers: h })
      await run(context.notify("n/one"))
      expect(await first.reader!.until((r) => r.messages().length === 1)).toBe(true)
      const lastId = first.reader!.lastId()!
      first.reader!.close()
      await run(context.notify("n/two"))
      await run(context.notify("n/three"))
      const resumed = await openSse(url, { headers: { ...h, "last-event-id": lastId } })
      expect(resumed.response.status).toBe(200)
      expect(await resumed.reader!.until((r) => r.messages().length >= 2)).toBe(true)
      await run(context.notify("n/four"))
      expect(await resumed.reader!.until((r) => r.messages().length >= 3)).toBe(true)
      expect(resumed.reader!.messages().map((m) => m.method)).toEqual(["n/two", "n/three", "n/four"])
      resumed.reader!.close()
      const bogus = await fetch(url, { headers: { ...h, "last-event-id": "nope_1" } })
      expect(bogus.status).toBe(400)
      await bogus.text()
    }))

  it.live("SSE polling: the handler closes its connection mid-call; the client resumes with Last-Event-ID and gets the rest", () =>
    withServer(undefined, async ({ url }) => {
      const sessionId = await openSession(url)
      const h = { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
      const { reader } = await openSse(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...h },
        body: JSON.stringify(call(5, "reconnect"))
      })
      await reader!.done
      // Closed by the server before the response, after an id and a retry field.
      expect(reader!.messages().some((m) => m.id === 5)).toBe(false)
      expect(reader!.events.some((e) => e.retry !== undefined)).toBe(true)
      const lastId = reader!.lastId()!
      const resumed = await openSse(url, { headers: { accept: "text/event-stream", ...h, "last-event-id": lastId } })
      expect(resumed.response.status).toBe(200)
      await resumed.reader!.done
      const all = [...reader!.messages(), ...resumed.reader!.messages()]
      expect(all.map((m) => m.params?.data ?? m.result?.content?.[0]?.text)).toEqual(["before close", "while away", "reconnected"])
    }))

  it.live("a finished stream can still be replayed from a Last-Event-ID in the middle", () =>
    withServer(undefined, async ({ url }) => {
      const sessionId = await openSession(url)
      const h = { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
      const { reader } = await openSse(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...h },
        body: JSON.stringify(call(6, "progress", { steps: 3 }))
      })
      await reader!.done
      const withData = reader!.events.filter((e) => e.data !== "")
      const from = withData[1].id!
      const replay = await openSse(url, { headers: { accept: "text/event-stream", ...h, "last-event-id": from } })
      await replay.reader!.done
      expect(replay.reader!.events.map((e) => e.id)).toEqual(withData.slice(2).map((e) => e.id))
    }))

  it.live("a long session answering over SSE keeps a bounded number of finished streams resumable", () =>
    withServer({ responseMode: "sse" }, async ({ url, transport }) => {
      const sessionId = await openSession(url)
      const h = { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
      const firstIds: Array<string> = []
      const calls = FINISHED_STREAMS_KEPT + 40
      for (let i = 0; i < calls; i++) {
        const { reader } = await openSse(url, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...h },
          body: JSON.stringify(call(100 + i, "echo", { text: "x" }))
        })
        await reader!.done
        if (i === 0) firstIds.push(...reader!.events.map((e) => e.id!).filter((id) => id !== undefined))
      }
      // Two events per call (priming and answer): the store holds the kept streams' events only.
      const stored = (await run(transport.stats)).storedEvents
      expect(stored).toBeLessThanOrEqual(2 * FINISHED_STREAMS_KEPT + 2)
      const forgotten = await fetch(url, { headers: { accept: "text/event-stream", ...h, "last-event-id": firstIds[0] } })
      expect(forgotten.status).toBe(400)
      await forgotten.body?.cancel()
    }))

  it.live("keep-alive comments on long streams", () =>
    withServer({ keepAliveInterval: "30 millis" }, async ({ url }) => {
      const sessionId = await openSession(url)
      const s = await openSse(url, { headers: { accept: "text/event-stream", "mcp-session-id": sessionId } })
      expect(await s.reader!.until((r) => r.raw.includes(": keepalive\n\n"))).toBe(true)
      s.reader!.close()
    }))

  it.live("notifications/cancelled on another POST interrupts the running handler; its reply is dropped", () =>
    withServer(undefined, async ({ url, probe, transport }) => {
      const sessionId = await openSession(url)
      const h = { "mcp-session-id": sessionId }
      const pending = post(url, call("slow-1", "slow"), h)
      const id = await run(Deferred.await(probe.slowStarted))
      expect(id).toBe("slow-1")
      const cancel = await post(url, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "slow-1", reason: "user" } }, h)
      expect(cancel.status).toBe(202)
      expect(await run(Ref.get(probe.cancelled))).toEqual(["slow-1"])
      const res = await pending
      expect(res.status).toBe(202)
      expect(await res.text()).toBe("")
      expect(await eventually(async () => (await run(transport.stats)).inFlight === 0)).toBe(true)
    }))

  it.live("a disconnect is not a cancellation; DELETE interrupts what the session still runs", () =>
    withServer(undefined, async ({ url, probe, transport }) => {
      const sessionId = await openSession(url)
      const controller = new AbortController()
      const pending = post(url, call(11, "slow"), { "mcp-session-id": sessionId }, { signal: controller.signal }).catch(() => "aborted")
      await run(Deferred.await(probe.slowStarted))
      controller.abort()
      expect(await pending).toBe("aborted")
      expect(await eventually(async () => (await run(transport.stats)).openStreams === 0)).toBe(true)
      expect((await run(transport.stats)).inFlight).toBe(1)
      expect(await run(Ref.get(probe.cancelled))).toEqual([])
      const del = await fetch(url, { method: "DELETE", headers: { "mcp-session-id": sessionId } })
      expect(del.status).toBe(204)
      expect(await run(Ref.get(probe.cancelled))).toEqual([11])
      expect(await eventually(() => isClean(transport))).toBe(true)
    }))

  it.live("the handler's request to the client travels on the POST stream; the answer arrives by POST", () =>
    withServer(undefined, async ({ url }) => {
      const sessionId = await openSession(url)
      const h = { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" }
      const { reader } = await openSse(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...h },
        body: JSON.stringify(call(12, "roots"))
      })
      expect(await reader!.until((r) => r.messages().some((m) => m.method === "roots/list"))).toBe(true)
      const request = reader!.messages().find((m) => m.method === "roots/list")
      const answer = await post(url, { jsonrpc: "2.0", id: request.id, result: { roots: [{ uri: "file:///a" }, { uri: "file:///b" }] } }, h)
      expect(answer.status).toBe(202)
      await reader!.done
      expect(reader!.messages().at(-1)).toEqual({ jsonrpc: "2.0", id: 12, result: { content: [{ type: "text", text: "file:///a,file:///b" }] } })
    }))

  it.live("DELETE fails the handler's pending request to the client and releases everything", () =>
    withServer(undefined, async ({ url, transport }) => {
      const sessionId = await openSession(url)
      const h = { "mcp-session-id": sessionId }
      const standalone = await openSse(url, { headers: { accept: "text/event-stream", ...h } })
      const { reader } = await openSse(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...h },
        body: JSON.stringify(call(13, "roots"))
      })
      expect(await reader!.until((r) => r.messages().some((m) => m.method === "roots/list"))).toBe(true)
      expect((await run(transport.stats)).inFlight).toBe(1)
      const del = await fetch(url, { method: "DELETE", headers: h })
      expect(del.status).toBe(204)
      await reader!.done
      await standalone.reader!.done
      expect(standalone.reader!.ended).toBe(true)
      expect(await eventually(() => isClean(transport))).toBe(true)
      expect((await run(transport.stats)).storedEvents).toBe(0)
    }))

  it.live("session ids are random UUIDs, one per initialize", () =>
    withServer(undefined, async ({ url }) => {
      const a = await openSession(url)
      const b = await openSession(url)
      expect(a).not.toBe(b)
      expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    }))

  it.live("a second request with an id still running is refused with -32600", () =>
    withServer(undefined, async ({ url, probe }) => {
      const sessionId = await openSession(url)
      const h = { "mcp-session-id": sessionId }
      const first = post(url, call(20, "slow"), h)
      await run(Deferred.await(probe.slowStarted))
      const dup = await post(url, call(20, "echo", { text: "x" }), h)
      expect(await dup.json()).toMatchObject({ id: 20, error: { code: -32600 } })
      await post(url, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 20 } }, h)
      expect((await first).status).toBe(202)
    }))

  it.live("a batch with two requests of one id: the later one is refused with -32600, the others run", () =>
    withServer(undefined, async ({ url, probe }) => {
      const sessionId = await openSession(url, "2025-03-26")
      const h = { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-03-26" }
      const answer = post(url, [call(30, "slow"), call(30, "echo", { text: "x" }), call(31, "echo", { text: "y" })], h)
      expect(await run(Deferred.await(probe.slowStarted))).toBe(30)
      await post(url, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 30 } }, h)
      // The cancelled request gets nothing; its namesake is refused rather than dropped unanswered.
      expect(await (await answer).json()).toEqual([
        { jsonrpc: "2.0", id: 30, error: expect.objectContaining({ code: -32600, data: "another request of this batch has this id" }) },
        { jsonrpc: "2.0", id: 31, result: expect.objectContaining({ content: [{ type: "text", text: "y" }] }) }
      ])
    }))
})
