/**
 * Running handlers against the stream limits: a request holds its slot of
 * `maxStreams`, `maxStreamsPerSession` and `maxStreamsPerPrincipal` until
 * its handler ends, whether or not its HTTP exchange is still open. So
 * neither the legacy `/messages` endpoint (answered 202 at once) nor
 * post-then-disconnect on Streamable HTTP can pile up handlers.
 *
 * The `hold` tool runs until the test opens the gate; the test learns that a
 * `hold` started from a queue, so nothing here waits on time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Latch, Queue, Ref } from "effect"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import { resolve } from "../../../src/server/http/Config.ts"
import { testHandler } from "../../fixtures/http-test-server.ts"
import { eventually, initializeBody, isClean, openLegacy, openSession, openSse, post, run, type Server, withServer } from "./helpers.ts"

interface Gate {
  /** Ids of `hold` calls, as their handlers start. */
  readonly started: Queue.Queue<JsonRpc.RequestId>
  /** Ids of `hold` calls whose handler was interrupted. */
  readonly interrupted: Ref.Ref<ReadonlyArray<JsonRpc.RequestId>>
  /** Open: every `hold` (running or to come) finishes. */
  readonly open: Latch.Latch
}

const makeGate = (): Gate =>
  Effect.runSync(Effect.gen(function*() {
    return {
      started: yield* Queue.unbounded<JsonRpc.RequestId>(),
      interrupted: yield* Ref.make<ReadonlyArray<JsonRpc.RequestId>>([]),
      open: yield* Latch.make(false)
    }
  }))

/** The fixture's handler plus `hold`. */
const gated = (gate: Gate) => (probe: Parameters<typeof testHandler>[0]): Handler => {
  const base = testHandler(probe)
  return (message, context) => {
    const params = (message.params ?? {}) as { name?: string }
    if (!("id" in message) || message.method !== "tools/call" || params.name !== "hold") return base(message, context)
    const id = message.id
    return Queue.offer(gate.started, id).pipe(
      Effect.andThen(gate.open.await),
      Effect.as(JsonRpc.success(id, { content: [{ type: "text", text: `held ${String(id)}` }] })),
      Effect.onInterrupt(() => Ref.update(gate.interrupted, (ids) => [...ids, id]))
    )
  }
}

const hold = (id: number | string) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "hold" } })
const ping = (id: number | string) => ({ jsonrpc: "2.0", id, method: "ping" })

const started = (gate: Gate) => run(Queue.take(gate.started))
const stats = (server: Server) => run(server.transport.stats)

/** Posts a `hold` call, waits for its handler to start, then goes away without reading the answer. */
const holdThenAbort = async (url: string, gate: Gate, id: number, headers: Record<string, string>) => {
  const controller = new AbortController()
  const pending = post(url, hold(id), headers, { signal: controller.signal }).then((r) => r.text()).catch(() => "aborted")
  expect(await started(gate)).toBe(id)
  controller.abort()
  expect(await pending).toBe("aborted")
}

describe("HTTP server transport: running handlers hold their slots", () => {
  it.live("legacy /messages: past maxStreamsPerSession a request gets 429 with a JSON-RPC error and Retry-After, and never runs", () => {
    const gate = makeGate()
    return withServer({ maxStreamsPerSession: 3 }, async ({ base }) => {
      // The SSE connection takes one slot, each running request one more.
      const legacy = await openLegacy(base)
      for (const id of [1, 2]) {
        const accepted = await legacy.send(hold(id))
        expect(accepted.status).toBe(202)
        await accepted.text()
        expect(await started(gate)).toBe(id)
      }
      const refused = await legacy.send(hold(3))
      expect(refused.status).toBe(429)
      expect(refused.headers.get("retry-after")).toBe("1")
      expect(await refused.json()).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: "Too many open streams for this session" }
      })
      // Notifications take no slot.
      const note = await legacy.send({ jsonrpc: "2.0", method: "notifications/initialized" })
      expect(note.status).toBe(202)
      await note.text()

      await run(gate.open.open)
      expect(await legacy.reader.until((r) => r.messages().filter((m) => m.id !== undefined).length === 2)).toBe(true)
      expect(legacy.reader.messages().map((m) => m.id)).toEqual([1, 2])
      expect(await run(Queue.size(gate.started))).toBe(0)
      // The handlers ended: their slots are free again.
      const again = await legacy.send(ping(4))
      expect(again.status).toBe(202)
      await again.text()
      expect(await legacy.reader.until((r) => r.messages().some((m) => m.id === 4))).toBe(true)
      legacy.reader.close()
    }, gated(gate))
  })

  it.live("legacy /messages: past maxStreams server-wide a request gets 503", () => {
    const gate = makeGate()
    return withServer({ maxStreams: 3 }, async (server) => {
      const a = await openLegacy(server.base)
      const b = await openLegacy(server.base)
      const accepted = await a.send(hold(1))
      expect(accepted.status).toBe(202)
      await accepted.text()
      expect(await started(gate)).toBe(1)
      const refused = await b.send(ping(2))
      expect(refused.status).toBe(503)
      expect(refused.headers.get("retry-after")).toBe("1")
      expect(((await refused.json()) as any).error).toEqual({ code: -32600, message: "Service unavailable: too many open streams" })
      await run(gate.open.open)
      expect(await eventually(async () => (await stats(server)).slotsInUse === 2)).toBe(true)
      const again = await b.send(ping(3))
      expect(again.status).toBe(202)
      await again.text()
      a.reader.close()
      b.reader.close()
      expect(await eventually(() => isClean(server.transport))).toBe(true)
    }, gated(gate))
  })

  it.live("post then disconnect, past maxStreamsPerSession: the next request gets 429 while the handlers run, and is served once they end", () => {
    const gate = makeGate()
    return withServer({ maxStreamsPerSession: 2 }, async (server) => {
      const h = { "mcp-session-id": await openSession(server.url) }
      await holdThenAbort(server.url, gate, 1, h)
      await holdThenAbort(server.url, gate, 2, h)
      // The exchanges are over; the handlers still run (a disconnect is not a cancellation).
      expect(await eventually(async () => (await stats(server)).openStreams === 0)).toBe(true)
      expect(await run(Ref.get(gate.interrupted))).toEqual([])
      const refused = await post(server.url, ping(3), h)
      expect(refused.status).toBe(429)
      expect(refused.headers.get("retry-after")).toBe("1")
      expect(((await refused.json()) as any).error.message).toBe("Too many open streams for this session")

      await run(gate.open.open)
      expect(await eventually(async () => (await stats(server)).slotsInUse === 0)).toBe(true)
      const served = await post(server.url, ping(4), h)
      expect(await served.json()).toEqual({ jsonrpc: "2.0", id: 4, result: {} })
    }, gated(gate))
  })

  it.live("post then disconnect across sessions, past maxStreams: another session's request gets 503", () => {
    const gate = makeGate()
    return withServer({ maxStreams: 2 }, async (server) => {
      for (const id of [1, 2]) {
        await holdThenAbort(server.url, gate, id, { "mcp-session-id": await openSession(server.url) })
      }
      expect(await eventually(async () => (await stats(server)).openStreams === 0)).toBe(true)
      const other = await openSession(server.url).catch((e: Error) => e.message)
      expect(other).toMatch(/^initialize failed: 503/)
      await run(gate.open.open)
      expect(await eventually(async () => (await stats(server)).slotsInUse === 0)).toBe(true)
      expect(typeof (await openSession(server.url))).toBe("string")
    }, gated(gate))
  })

  it.live("stats: openStreams counts open exchanges and streams; slotsInUse adds the handlers that outlived their exchange", () => {
    const gate = makeGate()
    return withServer(undefined, async (server) => {
      const sessionId = await openSession(server.url)
      const h = { "mcp-session-id": sessionId }
      const standalone = await openSse(server.url, { headers: { accept: "text/event-stream", ...h } })
      await holdThenAbort(server.url, gate, 1, h)
      expect(await eventually(async () => (await stats(server)).openStreams === 1)).toBe(true)
      expect(await stats(server)).toMatchObject({ openStreams: 1, slotsInUse: 2, inFlight: 1 })
      await run(gate.open.open)
      expect(await eventually(async () => (await stats(server)).slotsInUse === 1)).toBe(true)
      expect(await stats(server)).toMatchObject({ openStreams: 1, slotsInUse: 1, inFlight: 0 })
      standalone.reader!.close()
      expect(await eventually(async () => (await stats(server)).slotsInUse === 0)).toBe(true)
      expect(await stats(server)).toMatchObject({ openStreams: 0, slotsInUse: 0 })
    }, gated(gate))
  })

  it.live("DELETE interrupts the handlers a session still runs and frees their slots", () => {
    const gate = makeGate()
    return withServer({ maxStreams: 2 }, async (server) => {
      const h = { "mcp-session-id": await openSession(server.url) }
      await holdThenAbort(server.url, gate, 1, h)
      await holdThenAbort(server.url, gate, 2, h)
      const del = await fetch(server.url, { method: "DELETE", headers: h })
      expect(del.status).toBe(204)
      expect([...(await run(Ref.get(gate.interrupted)))].sort()).toEqual([1, 2])
      expect(await eventually(() => isClean(server.transport))).toBe(true)
      expect((await stats(server)).slotsInUse).toBe(0)
      expect(typeof (await openSession(server.url))).toBe("string")
    }, gated(gate))
  })
})

describe("HTTP server transport: streams per principal", () => {
  // The principal is whoever the `x-user` header names.
  const authenticate: HttpServerTransport.Authenticate = (request) =>
    Effect.succeed({ id: request.headers["x-user"] ?? "nobody" })
  const as = (user: string) => ({ "x-user": user })

  it.live("past maxStreamsPerPrincipal a principal gets 429 on any of its sessions; another principal is served", () =>
    withServer({ authenticate, maxStreamsPerPrincipal: 2 }, async ({ url, base }) => {
      const first = await openSession(url, "2025-11-25", as("a"))
      const second = await openSession(url, "2025-11-25", as("a"))
      const streams = await Promise.all([first, second].map((id) =>
        openSse(url, { headers: { accept: "text/event-stream", "mcp-session-id": id, ...as("a") } })
      ))
      expect(streams.map((s) => s.response.status)).toEqual([200, 200])
      const refused = await post(url, ping(1), { "mcp-session-id": second, ...as("a") })
      expect(refused.status).toBe(429)
      expect(refused.headers.get("retry-after")).toBe("1")
      expect(((await refused.json()) as any).error.message).toBe("Too many open streams for this principal")
      // The broadcast stream counts for its principal too.
      const events = await fetch(`${base}/mcp/events`, { headers: { accept: "text/event-stream", ...as("a") } })
      expect(events.status).toBe(429)
      await events.text()
      const other = await openSession(url, "2025-11-25", as("b"))
      const served = await post(url, ping(2), { "mcp-session-id": other, ...as("b") })
      expect(await served.json()).toEqual({ jsonrpc: "2.0", id: 2, result: {} })
      streams[0].reader!.close()
      expect(await eventually(async () => {
        const res = await post(url, ping(3), { "mcp-session-id": second, ...as("a") })
        await res.text()
        return res.status === 200
      })).toBe(true)
      streams[1].reader!.close()
    }))

  it("maxStreamsPerPrincipal defaults to a quarter of maxStreams with authenticate, none without", () => {
    expect(resolve({ authenticate }, true).maxStreamsPerPrincipal).toBe(250)
    expect(resolve({ authenticate, maxStreams: 10 }, true).maxStreamsPerPrincipal).toBe(3)
    expect(resolve({ authenticate, maxStreamsPerPrincipal: "none" }, true).maxStreamsPerPrincipal).toBeUndefined()
    expect(resolve({ authenticate, maxStreamsPerPrincipal: 7 }, true).maxStreamsPerPrincipal).toBe(7)
    expect(resolve(undefined, true).maxStreamsPerPrincipal).toBeUndefined()
    expect(resolve({ maxStreamsPerPrincipal: 7 }, true).maxStreamsPerPrincipal).toBe(7)
  })
})

describe("HTTP server transport: refusals in browsers", () => {
  it.live("a browser can read Retry-After: it is among the exposed headers", () =>
    withServer({ maxStreams: 0 }, async ({ url, port }) => {
      const refused = await post(url, initializeBody(), { origin: `http://localhost:${port}` })
      expect(refused.status).toBe(503)
      expect(refused.headers.get("retry-after")).toBe("1")
      await refused.text()
      const exposed = (refused.headers.get("access-control-expose-headers") ?? "").split(/,\s*/)
      expect(exposed).toContain("Retry-After")
    }))
})
