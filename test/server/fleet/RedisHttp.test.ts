/**
 * The HTTP server transport on a real Redis (`RedisFleet.layer`), in one
 * process: a handshake-era session's cut SSE stream resumes with
 * `Last-Event-ID` from the Redis event log, and ending the session leaves
 * no log key behind; a broadcast made on one instance reaches the
 * `/mcp/events` listener of another and resumes on either; and the Bus
 * rules that need no Redis (two servers on one in-memory bus; a fleet bus
 * without request-state keys refused).
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Layer, Option } from "effect"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import * as Bus from "../../../src/server/Bus.ts"
import { DefinitionError } from "../../../src/server/DefinitionError.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import * as RedisFleet from "../../../src/server/RedisFleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"
import { openSession, openSse } from "../http/helpers.ts"

const KEY = "k".repeat(32)
const PREFIX = "h:"
const HANDSHAKE = "2025-11-25"
const MODERN = "2026-07-28"

const server = McpServer.make({
  serverInfo: { name: "fleet-http", version: "1.0.0" },
  capabilities: { tools: {}, resources: { subscribe: true } },
  requestStateKeys: [KEY]
}).pipe(
  McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [], ttlMs: 0, cacheScope: "private" }))
)

/** One instance on the Redis at `url`: its handle, transport and URL. */
const instance = (url: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      McpServer.layerHttp(server, { port: 0 }).pipe(Layer.provide(RedisFleet.layer({ url, prefix: PREFIX })))
    )
    const transport = Context.get(context, HttpServerTransport.HttpServerTransport)
    return { handle: Context.get(context, McpServer.Handle), transport, url: Option.getOrThrow(transport.url) }
  })

const message = (n: number) => ({ level: "info", data: `m${n}` })
const dataOf = (m: { params?: { data?: unknown } }) => m.params?.data

describe.skipIf(!RedisServer.present)("HTTP server transport on Redis", () => {
  it.live("a cut standalone stream resumes from the Redis log with Last-Event-ID; ending the session leaves no log key", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const { handle, url } = yield* instance(redis.url)
      const session = yield* Effect.promise(() => openSession(url, HANDSHAKE))
      const headers = { "mcp-session-id": session, "mcp-protocol-version": HANDSHAKE, accept: "text/event-stream" }
      const first = yield* Effect.promise(() => openSse(url, { method: "GET", headers }))
      expect(first.response.status).toBe(200)
      yield* handle.notifyAll("notifications/message", message(1))
      expect(yield* Effect.promise(() => first.reader!.until((r) => r.messages().length === 1))).toBe(true)
      const seen = first.reader!.lastId()!
      first.reader!.close()
      yield* Effect.promise(() => first.reader!.done)
      // Sent while no one reads: kept in Redis, under the session's stream.
      yield* handle.notifyAll("notifications/message", message(2))
      yield* handle.notifyAll("notifications/message", message(3))
      expect((yield* RedisServer.keysUnder(redis.url, `${PREFIX}log:`)).length).toBeGreaterThan(0)

      const resumed = yield* Effect.promise(() => openSse(url, { method: "GET", headers: { ...headers, "last-event-id": seen } }))
      expect(resumed.response.status).toBe(200)
      expect(yield* Effect.promise(() => resumed.reader!.until((r) => r.messages().length === 2))).toBe(true)
      expect(resumed.reader!.messages().map(dataOf)).toEqual(["m2", "m3"])
      resumed.reader!.close()

      const ended = yield* Effect.promise(() =>
        fetch(url, { method: "DELETE", headers: { "mcp-session-id": session, "mcp-protocol-version": HANDSHAKE } })
      )
      expect(ended.status).toBeLessThan(300)
      expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}log:`)).toEqual([])
      expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}streams:`)).toEqual([])
    }).pipe(Effect.scoped), 60_000)

  it.live("a broadcast made on one instance reaches the events listener of another, and resumes on either", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* instance(redis.url)
      const b = yield* instance(redis.url)
      const events = (url: string) => url.replace(/\/mcp$/, "/mcp/events")
      const onB = yield* Effect.promise(() => openSse(events(b.url), { method: "GET", headers: { accept: "text/event-stream" } }))
      expect(onB.response.status).toBe(200)
      const first = yield* a.transport.broadcast("tick", { n: 1 })
      expect(yield* Effect.promise(() => onB.reader!.until((r) => r.events.some((e) => e.event === "tick")))).toBe(true)
      expect(onB.reader!.events.filter((e) => e.event === "tick").map((e) => [e.id, e.data])).toEqual([[first, `{"n":1}`]])
      onB.reader!.close()
      yield* b.transport.broadcast("tick", { n: 2 })
      yield* a.transport.broadcast("tick", { n: 3 })
      for (const target of [a, b]) {
        const resumed = yield* Effect.promise(() =>
          openSse(events(target.url), { method: "GET", headers: { accept: "text/event-stream", "last-event-id": first } })
        )
        expect(resumed.response.status).toBe(200)
        expect(yield* Effect.promise(() => resumed.reader!.until((r) => r.events.filter((e) => e.event === "tick").length === 2)))
          .toBe(true)
        expect(resumed.reader!.events.filter((e) => e.event === "tick").map((e) => e.data)).toEqual([`{"n":2}`, `{"n":3}`])
        resumed.reader!.close()
      }
    }).pipe(Effect.scoped), 60_000)

  it.live("HttpServerTransport.layerRedis keeps a bare handler's broadcasts in the Redis log under its prefix", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const handle = yield* McpServer.toHandler(server)
      const context = yield* Layer.build(
        HttpServerTransport.layerRedis(handle.handler, { port: 0, redis: { url: redis.url, prefix: "bare:" } })
      )
      const transport = Context.get(context, HttpServerTransport.HttpServerTransport)
      const id = yield* transport.broadcast("tick", { n: 1 })
      expect(id.startsWith("broadcast_")).toBe(true)
      // Beside the log, the instance's lease (its key, the set of instances, the fence) and its inbox.
      const keys = yield* RedisServer.keysUnder(redis.url, "bare:")
      const own = (k: string) => k.startsWith("bare:instance") || k.startsWith("bare:inbox:")
      expect(keys.filter((k) => !own(k))).toEqual(["bare:fence", "bare:log:{_}:broadcast", "bare:streams:{_}"])
      expect(keys.filter((k) => k.startsWith("bare:instance"))).toHaveLength(2)
      expect(keys.filter((k) => k.startsWith("bare:inbox:"))).toHaveLength(1)
    }).pipe(Effect.scoped), 30_000)
})

describe("Bus without Redis", () => {
  const meta = () => RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: {} })
  const listenBody = { jsonrpc: "2.0", id: 1, method: "subscriptions/listen", params: { notifications: { resourceSubscriptions: ["file:///x"] }, _meta: meta() } }

  it.live("two servers on one in-memory bus: notifyAll on one reaches a listen held by the other, once", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(Bus.layerMemory)
      const serve = Effect.gen(function*() {
        const built = yield* Layer.build(McpServer.layerHttp(server, { port: 0 }))
        return {
          handle: Context.get(built, McpServer.Handle),
          url: Option.getOrThrow(Context.get(built, HttpServerTransport.HttpServerTransport).url)
        }
      }).pipe(Effect.provideContext(context))
      const one = yield* serve
      const two = yield* serve
      const listen = yield* Effect.promise(() =>
        openSse(two.url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            ...RequestMeta.standardHeaders(MODERN, "subscriptions/listen", listenBody.params)
          },
          body: JSON.stringify(listenBody)
        })
      )
      expect(listen.response.status).toBe(200)
      const reader = listen.reader!
      yield* Effect.promise(() => reader.until((r) => r.messages().some((m) => m.method === "notifications/subscriptions/acknowledged")))
      yield* one.handle.notifyAll("notifications/resources/updated", { uri: "file:///x" })
      yield* one.handle.notifyAll("notifications/resources/updated", { uri: "file:///x", marker: true })
      yield* Effect.promise(() => reader.until((r) => r.messages().some((m) => m.params?.marker === true)))
      expect(reader.messages().filter((m) => m.method === "notifications/resources/updated").length).toBe(2)
      reader.close()
    }).pipe(Effect.scoped), 30_000)

  it.effect("a server of the stateless era on a fleet bus without requestStateKeys is refused", () =>
    Effect.gen(function*() {
      const fleetBus = Layer.succeed(Bus.Bus, { ...Bus.makeMemoryUnsafe(), fleet: true })
      const randomKey = McpServer.make({ serverInfo: { name: "no-keys", version: "1.0.0" } })
      const exit = yield* Effect.exit(Effect.scoped(McpServer.toHandler(randomKey).pipe(Effect.provide(fleetBus))))
      expect(Exit.isFailure(exit)).toBe(true)
      const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      expect(defect).toBeInstanceOf(DefinitionError)
      expect((defect as DefinitionError).name).toBe("requestStateKeys")
      // The same server with keys, or on an in-process bus, is fine.
      yield* Effect.scoped(McpServer.toHandler(McpServer.make({ serverInfo: { name: "keys", version: "1.0.0" }, requestStateKey: KEY }))
        .pipe(Effect.provide(fleetBus)))
      yield* Effect.scoped(McpServer.toHandler(randomKey).pipe(Effect.provide(Bus.layerMemory)))
      // A handshake-only server issues no requestState.
      yield* Effect.scoped(McpServer.toHandler(McpServer.make({ serverInfo: { name: "legacy", version: "1.0.0" }, stateless: false }))
        .pipe(Effect.provide(fleetBus)))
    }))
})

