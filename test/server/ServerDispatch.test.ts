/**
 * The dispatch lane shared by the stdio server and the in-memory pair: a
 * request reaches the handler only after the notifications sent before it
 * were handled, however long their handling takes, and however the frames
 * were cut into chunks or grouped into a batch.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as JsonRpc from "../../src/JsonRpc.ts"
import type { Handler } from "../../src/server/Handler.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as StdioInMemory from "../fixtures/stdio-in-memory.ts"

const line = (m: unknown) => JSON.stringify(m) + "\n"

type Slowness = "sleep" | "yields"

/** Requests answer how many notifications were fully handled; notifications take a while. */
const counting = (slowness: Slowness): Handler => {
  let handled = 0
  const slow = slowness === "sleep"
    ? Effect.sleep(5)
    : Effect.forEach(Array.from({ length: 25 }), () => Effect.yieldNow, { discard: true })
  return (m) =>
    "id" in m
      ? Effect.sync(() => JsonRpc.success(m.id, { handled }))
      : slow.pipe(Effect.andThen(Effect.sync(() => void handled++)), Effect.as(null))
}

/** A stdio server over test stdin/stdout: `write` sends one chunk, `next` takes one reply line. */
const stdioServer = (handler: Handler) => StdioInMemory.serve(handler)

describe("ServerDispatch ordering", () => {
  for (const slowness of ["sleep", "yields"] as const) {
    it.live(`stdio, one chunk: the request sees the slow notification before it (${slowness})`, () =>
      Effect.gen(function*() {
        const s = yield* stdioServer(counting(slowness))
        yield* s.write(line(JsonRpc.notification("notifications/initialized")) + line(JsonRpc.request(1, "tools/list")))
        expect(yield* s.next).toEqual({ jsonrpc: "2.0", id: 1, result: { handled: 1 } })
        yield* s.finish
      }))

    it.live(`stdio, separate chunks: every request sees all notifications sent before it (${slowness})`, () =>
      Effect.gen(function*() {
        const s = yield* stdioServer(counting(slowness))
        const expected = new Map<number, number>()
        let sent = 0
        for (let i = 0; i < 12; i++) {
          if (i % 3 === 2) {
            expected.set(i, sent)
            yield* s.write(line(JsonRpc.request(i, "tools/list")))
          } else {
            sent++
            yield* s.write(line(JsonRpc.notification(`n${i}`)))
          }
          yield* Effect.yieldNow
        }
        for (let k = 0; k < expected.size; k++) {
          const reply = yield* s.next
          expect(reply.result.handled).toBeGreaterThanOrEqual(expected.get(reply.id)!)
        }
        yield* s.finish
        expect(yield* Queue.size(s.replies)).toBe(0)
      }))

    it.live(`stdio, batches: a batch's notifications are handled before its requests and before later frames (${slowness})`, () =>
      Effect.gen(function*() {
        const s = yield* stdioServer(counting(slowness))
        // A batch of one notification, then a single request right behind it.
        yield* s.write(line([JsonRpc.notification("a")]) + line(JsonRpc.request(1, "x")))
        expect(yield* s.next).toEqual({ jsonrpc: "2.0", id: 1, result: { handled: 1 } })
        // Inside one batch: notifications before a request are handled first.
        yield* s.write(line([JsonRpc.notification("b"), JsonRpc.notification("c"), JsonRpc.request(2, "y")]))
        expect(yield* s.next).toEqual([{ jsonrpc: "2.0", id: 2, result: { handled: 3 } }])
        yield* s.finish
      }))

    it.live(`in-memory: each request sees the notifications sent before it (${slowness})`, () =>
      Effect.gen(function*() {
        const t = yield* InMemoryTransport.make(counting(slowness))
        yield* t.notify("notifications/initialized")
        expect(yield* t.request("tools/list")).toEqual({ handled: 1 })
        yield* t.notify("a")
        yield* t.notify("b")
        expect(yield* t.request("tools/list")).toEqual({ handled: 3 })
      }))
  }

  it.live("McpServer over stdio: tools/list right behind notifications/initialized is served, with no grace period", () =>
    Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(
        McpServer.make({ serverInfo: { name: "order", version: "1" } }).pipe(
          McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [] })),
          // A slow notification handler must not let the request overtake it either.
          McpServer.notification("notifications/initialized", {}, () => Effect.sleep(5))
        )
      )
      const s = yield* stdioServer(handle.handler)
      yield* s.write(line(JsonRpc.request(0, "initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "t", version: "1" }
      })))
      expect(yield* s.next).toMatchObject({ id: 0, result: { protocolVersion: "2025-06-18" } })
      yield* s.write(line(JsonRpc.notification("notifications/initialized")) + line(JsonRpc.request(1, "tools/list")))
      expect(yield* s.next).toEqual({ jsonrpc: "2.0", id: 1, result: { tools: [] } })
      yield* s.finish
    }))

  it.effect("McpServer over stdio: a request before notifications/initialized is rejected at once (no 1 s hold)", () =>
    Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(
        McpServer.make({ serverInfo: { name: "order", version: "1" } }).pipe(
          McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [] }))
        )
      )
      const s = yield* stdioServer(handle.handler)
      yield* s.write(line(JsonRpc.request(0, "initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "t", version: "1" }
      })))
      yield* s.next
      yield* s.write(line(JsonRpc.request(1, "tools/list")))
      // The TestClock never moves here: a reply held for a grace period would never come.
      expect((yield* s.next).error).toMatchObject({ code: -32002 })
      yield* s.finish
    }))
})
