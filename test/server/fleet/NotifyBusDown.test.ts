/**
 * `notifyAll` when the fleet's bus refuses the publication: the sessions of
 * the instance that called it still get the notification, once, with a
 * warning that the other instances did not; with the bus back, a
 * notification reaches every instance again, once each.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Logger, Option } from "effect"
import * as Bus from "../../../src/server/Bus.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import { openSession, openSse } from "../http/helpers.ts"

const HANDSHAKE = "2025-11-25"

const server = McpServer.make({ serverInfo: { name: "bus-down", version: "1.0.0" }, capabilities: { logging: {} } })

/** An in-memory bus whose publications fail while `down` is set. */
const flakyBus = () => {
  const inner = Bus.makeMemoryUnsafe()
  const state = { down: false }
  const bus: Bus.BusShape = {
    ...inner,
    publish: (topic, message) =>
      state.down
        ? Effect.fail(new Bus.BusUnavailable({ topic, cause: new Error("connection refused") }))
        : inner.publish(topic, message)
  }
  return { bus, state }
}

const message = (n: number) => ({ level: "info", data: `m${n}` })

describe("notifyAll with the bus down", () => {
  it.live("the calling instance's sessions still get it, once; another instance's do not; with the bus back, both do", () =>
    Effect.gen(function*() {
      const { bus, state } = flakyBus()
      const logged: Array<string> = []
      const capture = Logger.layer([Logger.make((o) => void logged.push(JSON.stringify(o.message)))])
      const serve = Effect.gen(function*() {
        const built = yield* Layer.build(McpServer.layerHttp(server, { port: 0 }))
        return {
          handle: Context.get(built, McpServer.Handle),
          url: Option.getOrThrow(Context.get(built, HttpServerTransport.HttpServerTransport).url)
        }
      }).pipe(Effect.provide(Layer.succeed(Bus.Bus, bus)))
      const one = yield* serve
      const two = yield* serve
      const stream = (url: string) =>
        Effect.promise(async () => {
          const session = await openSession(url, HANDSHAKE)
          const opened = await openSse(url, {
            method: "GET",
            headers: { "mcp-session-id": session, "mcp-protocol-version": HANDSHAKE, accept: "text/event-stream" }
          })
          expect(opened.response.status).toBe(200)
          return opened.reader!
        })
      const onOne = yield* stream(one.url)
      const onTwo = yield* stream(two.url)
      const data = (reader: typeof onOne) =>
        reader.messages().filter((m) => m.method === "notifications/message").map((m) => m.params?.data)

      state.down = true
      yield* one.handle.notifyAll("notifications/message", message(1)).pipe(Effect.provide(capture))
      expect(yield* Effect.promise(() => onOne.until((r) => data(r).length === 1))).toBe(true)
      expect(logged.some((l) => l.includes("notifyAll notifications/message: the bus is unavailable"))).toBe(true)

      state.down = false
      yield* one.handle.notifyAll("notifications/message", message(2))
      expect(yield* Effect.promise(() => onOne.until((r) => data(r).length === 2))).toBe(true)
      expect(yield* Effect.promise(() => onTwo.until((r) => data(r).length === 1))).toBe(true)
      // Once each, in order: the first never reached the other instance.
      expect(data(onOne)).toEqual(["m1", "m2"])
      expect(data(onTwo)).toEqual(["m2"])
      onOne.close()
      onTwo.close()
    }).pipe(Effect.scoped), 30_000)
})
