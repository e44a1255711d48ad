/**
 * Properties of the HTTP server transport.
 *
 * 1. Replay: the event store gives back exactly the events of a stream after
 *    a given id; an SSE stream read through any sequence of disconnects,
 *    takeovers and server-closed connections, each resumed with the last id
 *    seen, delivers every message exactly once and in order.
 * 2. Teardown: random sequences of POST / GET / DELETE with random client
 *    disconnects, over real loopback HTTP, leave no session, running handler,
 *    session fiber or open stream behind once every session is deleted, or
 *    once the server shuts down.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Deferred, Effect, Fiber, Option, Schema, Stream } from "effect"
import * as JsonRpc from "../../src/JsonRpc.ts"
import * as EventStore from "../../src/server/EventStore.ts"
import * as OutStream from "../../src/server/http/OutStream.ts"
import { initializeBody, isClean, openSse, post, serve } from "../server/http/helpers.ts"

const int = (minimum: number, maximum: number) =>
  Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum }))).pipe(Arbitrary.map((n) => n + 0))

// ---------------------------------------------------------------------------
// 1. Replay

const storeOp = Arbitrary.all({
  kind: Arbitrary.schema(Schema.Literals(["append", "append", "append", "priming", "replay", "remove"])),
  stream: int(0, 2),
  pick: int(0, 1000)
})

describe("event store and resumable streams", () => {
  it.effect.prop("replayAfter returns exactly the stream's later events (a model check)", {
    ops: Arbitrary.array(storeOp, { maxLength: 60 }),
    maxEvents: int(3, 50)
  }, ({ maxEvents, ops }) =>
    Effect.gen(function*() {
      const store = EventStore.makeMemoryUnsafe({ maxEvents })
      // Model: every event ever appended, with whether it is still held.
      const model: Array<{ stream: string; id: string; data: string; evicted: boolean; removed: boolean }> = []
      let n = 0
      for (const op of ops) {
        const stream = `s_${op.stream}`
        if (op.kind === "append" || op.kind === "priming") {
          const data = op.kind === "priming" ? "" : `m${++n}`
          const id = yield* store.append(stream, data)
          model.push({ stream, id, data, evicted: false, removed: false })
          const held = model.filter((e) => !e.evicted && !e.removed)
          if (held.length > maxEvents) held[0].evicted = true
        } else if (op.kind === "remove") {
          yield* store.removeStream(stream)
          for (const e of model) if (e.stream === stream) e.removed = true
        } else if (model.length > 0) {
          const target = model[op.pick % model.length]
          const replay = yield* store.replayAfter(target.id)
          // Removed (even if a stream of the same name started again since).
          if (target.removed) {
            expect(Option.isNone(replay)).toBe(true)
          } else {
            const at = model.indexOf(target)
            const expected = model.slice(at + 1).filter((e) =>
              e.stream === target.stream && !e.evicted && !e.removed && e.data !== ""
            )
            expect(Option.getOrThrow(replay).events.map((e) => e.id)).toEqual(expected.map((e) => e.id))
          }
        }
      }
      expect(yield* store.size).toBe(model.filter((e) => !e.evicted && !e.removed).length)
      expect(Option.isNone(yield* store.replayAfter("garbage"))).toBe(true)
    }), { arbitrary: { runs: 200 } })

  const streamOp = Arbitrary.schema(Schema.Literals([
    "offer",
    "offer",
    "offer",
    "connect",
    "disconnect",
    "yield",
    "yield",
    "close-connection"
  ]))

  // The client side follows the protocol: a connection counts as open once
  // its first bytes (the priming event and its id) arrived; the client only
  // abandons open connections, and always resumes from the last id it saw.
  // (A connection abandoned before its first byte could take messages the
  // client never learns about; that is what priming events are for.)
  it.effect.prop("a stream read across disconnects and resumptions delivers each message once, in order", {
    ops: Arbitrary.array(streamOp, { maxLength: 50 })
  }, ({ ops }) =>
    Effect.gen(function*() {
      const store = EventStore.makeMemoryUnsafe()
      const out = yield* OutStream.make({ streamId: "prop", store })
      const received: Array<number> = []
      let lastSeen: string | undefined
      let reader: { readonly fiber: Fiber.Fiber<void>; readonly open: Deferred.Deferred<void> } | undefined
      let offered = 0
      const decoder = new TextDecoder()
      // Listens to one connection at a time: once it reconnects, whatever the
      // old connection still carries (the server has not noticed yet) is unseen.
      let connection = 0
      const connect = (open: Deferred.Deferred<void>) => {
        const mine = ++connection
        return out.attach({ priming: true, retryMs: undefined, lastEventId: lastSeen }).pipe(
          Stream.runForEach((chunk) =>
            Effect.sync(() => {
              if (mine !== connection) return
              for (const block of decoder.decode(chunk).split("\n\n")) {
                let id: string | undefined
                let data: string | undefined
                for (const line of block.split("\n")) {
                  if (line.startsWith("id: ")) id = line.slice(4)
                  if (line.startsWith("data: ")) data = line.slice(6)
                }
                if (data !== undefined && data !== "") received.push((JSON.parse(data) as { params: { n: number } }).params.n)
                if (id !== undefined) lastSeen = id
              }
              Deferred.doneUnsafe(open, Effect.void)
            })
          ),
          Effect.ensuring(Deferred.succeed(open, undefined))
        )
      }
      const start = Effect.gen(function*() {
        const open = yield* Deferred.make<void>()
        const fiber = yield* Effect.forkChild(connect(open))
        return { fiber, open }
      })
      for (const op of ops) {
        switch (op) {
          case "offer":
            yield* out.offer(JsonRpc.notification("n", { n: offered++ }))
            break
          case "connect":
            // The old connection is left running: the server takes the stream over from it.
            if (reader !== undefined) yield* Deferred.await(reader.open)
            reader = yield* start
            break
          case "disconnect":
            if (reader !== undefined) {
              yield* Deferred.await(reader.open)
              yield* Fiber.interrupt(reader.fiber)
            }
            reader = undefined
            break
          case "yield":
            for (let i = 0; i < 3; i++) yield* Effect.yieldNow
            break
          case "close-connection":
            yield* out.closeConnection
            break
        }
      }
      yield* out.end
      if (reader !== undefined) {
        yield* Deferred.await(reader.open)
        yield* Fiber.interrupt(reader.fiber)
      }
      // Resume until the stream has nothing more (a server-closed connection ends early).
      for (let attempt = 0; attempt < ops.length + 2 && received.length < offered; attempt++) {
        yield* connect(yield* Deferred.make<void>())
      }
      expect(received).toEqual(Array.from({ length: offered }, (_, i) => i))
    }), { arbitrary: { runs: 300 } })
})

// ---------------------------------------------------------------------------
// 2. Teardown over real HTTP

const httpOp = Arbitrary.all({
  kind: Arbitrary.schema(Schema.Literals(["init", "call", "stream-call", "slow", "get", "disconnect", "delete", "cancel", "events"])),
  session: int(0, 2),
  pick: int(0, 100)
})

describe("HTTP server transport teardown", () => {
  it.live.prop("nothing outlives DELETE or shutdown, whatever the clients did", {
    ops: Arbitrary.array(httpOp, { minLength: 6, maxLength: 18 }),
    end: Arbitrary.schema(Schema.Literals(["delete-all", "shutdown"]))
  }, ({ end, ops }) =>
    Effect.gen(function*() {
      const stats = yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* serve({ keepAliveInterval: "20 millis" })
        const { url, base, transport } = server
        yield* Effect.promise(async () => {
          const sessions: Array<string | undefined> = [undefined, undefined, undefined]
          // Every session ever opened, including ones whose slot was reused (abandoned, not deleted).
          const created = new Set<string>()
          const open: Array<{ controller: AbortController; done: Promise<unknown> }> = []
          let nextId = 100
          const h = (s: string) => ({ "mcp-session-id": s, "mcp-protocol-version": "2025-11-25" })
          const track = (controller: AbortController, done: Promise<unknown>) =>
            open.push({ controller, done: done.catch(() => undefined) })
          // Every run starts with one session, so the rest has something to work on.
          for (const op of [{ kind: "init" as const, session: 0, pick: 0 }, ...ops]) {
            const sid = sessions[op.session]
            switch (op.kind) {
              case "init": {
                const res = await post(url, initializeBody())
                await res.text()
                sessions[op.session] = res.headers.get("mcp-session-id") ?? undefined
                if (sessions[op.session] !== undefined) created.add(sessions[op.session]!)
                break
              }
              case "call":
              case "stream-call":
              case "slow": {
                if (sid === undefined) break
                const controller = new AbortController()
                const name = op.kind === "call" ? "echo" : op.kind === "slow" ? "slow" : "progress"
                const done = post(url, { jsonrpc: "2.0", id: nextId++, method: "tools/call", params: { name, arguments: { text: "x", steps: 2 } } }, h(sid), {
                  signal: controller.signal
                }).then((r) => r.text())
                track(controller, done)
                if (op.kind !== "slow") await done.catch(() => undefined)
                break
              }
              case "get": {
                if (sid === undefined) break
                const s = await openSse(url, { headers: { accept: "text/event-stream", ...h(sid) } })
                if (s.reader === undefined) await s.response.text().catch(() => undefined)
                else track(s.controller, s.reader.done)
                break
              }
              case "events": {
                const s = await openSse(`${base}/mcp/events`, { headers: { accept: "text/event-stream" } })
                if (s.reader !== undefined) track(s.controller, s.reader.done)
                break
              }
              case "disconnect": {
                if (open.length > 0) open[op.pick % open.length].controller.abort()
                break
              }
              case "cancel": {
                if (sid === undefined) break
                const res = await post(url, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 100 + (op.pick % Math.max(1, nextId - 100)) } }, h(sid))
                await res.text()
                break
              }
              case "delete": {
                if (sid === undefined) break
                const res = await fetch(url, { method: "DELETE", headers: h(sid) })
                await res.text()
                sessions[op.session] = undefined
                break
              }
            }
          }
          if (end === "delete-all") {
            for (const sid of created) await (await fetch(url, { method: "DELETE", headers: h(sid) })).text()
            // Broadcast listeners are not sessions: their clients go away.
            for (const o of open) o.controller.abort()
            await Promise.all(open.map((o) => o.done))
            const deadline = Date.now() + 5_000
            while (!(await isClean(transport)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
          }
          // With "shutdown", connections are left as they are for the server to end.
        })
        if (end === "delete-all") {
          const s = yield* transport.stats
          expect(s).toMatchObject({ sessions: 0, legacySessions: 0, ephemeralSessions: 0, openStreams: 0, slotsInUse: 0, inFlight: 0, work: 0, broadcastListeners: 0, storedEvents: 0 })
        }
        return transport
      }))
      // After shutdown (the scope closed) nothing may remain either way.
      const after = yield* stats.stats
      expect(after).toMatchObject({ sessions: 0, legacySessions: 0, ephemeralSessions: 0, openStreams: 0, slotsInUse: 0, inFlight: 0, work: 0, broadcastListeners: 0 })
    }), { timeout: 120_000, arbitrary: { runs: 40 } })
})

