/**
 * The notifications' hub: a publish with no subscriber does nothing, every
 * subscriber (a subscription or a running stream) is counted until it ends,
 * and a subscriber that falls behind loses its oldest messages, never the
 * newest. Then the same at the client's edges: `McpClient`'s typed
 * subscriptions and the transport's own, over a real child process, each
 * with a buffer of 4 while the server logs 10 lines before answering.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as ListenedPubSub from "../../src/internal/ListenedPubSub.ts"
import { openLoggingSession } from "../fixtures/stdio-helpers.ts"

const fixturePath = new URL("../fixtures/router-stdio-server.ts", import.meta.url).pathname
const fixture: StdioClientTransport.StdioClientConfig = {
  command: process.execPath,
  args: [fixturePath],
  notificationBuffer: 4,
  shutdown: { gracePeriod: "300 millis", killAfter: "300 millis" }
}
const logTen = { name: "log", arguments: { level: "info", text: "line", count: 10 } }
const lastFour = ["line 7", "line 8", "line 9", "line 10"]

describe("ListenedPubSub", () => {
  it.effect("publishes nothing without a subscriber, and counts each subscriber until its scope ends", () =>
    Effect.gen(function*() {
      const hub = yield* ListenedPubSub.sliding<number>(8)
      expect(hub.publish(1)).toBe(false)
      const scoped = yield* Effect.scoped(Effect.gen(function*() {
        const stream = yield* hub.subscribe
        expect(hub.publish(2)).toBe(true)
        return yield* Stream.runCollect(Stream.take(stream, 1))
      }))
      expect(scoped).toEqual([2])
      expect(hub.publish(3)).toBe(false)
    }))

  it.effect("counts a running stream, and no longer once it has ended", () =>
    Effect.gen(function*() {
      const hub = yield* ListenedPubSub.sliding<number>(8)
      const reader = yield* Effect.forkChild(Stream.runCollect(Stream.take(hub.stream, 2)))
      while (!hub.publish(1)) yield* Effect.yieldNow
      expect(hub.publish(2)).toBe(true)
      expect(yield* Fiber.join(reader)).toEqual([1, 2])
      expect(hub.publish(3)).toBe(false)
    }))

  it.effect("a subscriber that falls behind loses its oldest messages", () =>
    Effect.scoped(Effect.gen(function*() {
      const hub = yield* ListenedPubSub.sliding<number>(4)
      const stream = yield* hub.subscribe
      for (let n = 1; n <= 10; n++) expect(hub.publish(n)).toBe(true)
      expect(yield* Stream.runCollect(Stream.take(stream, 4))).toEqual([7, 8, 9, 10])
    })))
})

describe("a client's subscriber that falls behind", () => {
  it.live("McpClient's subscription keeps the newest lines", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.connect(StdioClientTransport.make(fixture), {
        protocol: "2025-11-25",
        notificationBuffer: 4
      })
      yield* client.setLoggingLevel("debug")
      const logs = yield* client.subscribeLogging
      yield* client.callTool(logTen)
      const lines = yield* logs.pipe(Stream.map((m) => String(m.data)), Stream.take(4), Stream.runCollect)
      expect(lines).toEqual(lastFour)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)), 30_000)

  it.live("the transport's subscription keeps the newest lines", () =>
    Effect.gen(function*() {
      const transport = yield* StdioClientTransport.make(fixture)
      yield* openLoggingSession(transport)
      const notifications = yield* transport.subscribeNotifications
      yield* transport.request("tools/call", logTen)
      const lines = yield* notifications.pipe(
        Stream.filter((n) => n.method === "notifications/message"),
        Stream.map((n) => String((n.params as { data?: unknown }).data)),
        Stream.take(4),
        Stream.runCollect
      )
      expect(lines).toEqual(lastFour)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)), 30_000)
})
