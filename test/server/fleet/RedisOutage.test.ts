/**
 * An instance on a real Redis that goes away (SIGKILL, then restarted on
 * the same port) or hangs (SIGSTOP, then SIGCONT). During the outage every
 * request that needs Redis is answered 503 with `Retry-After` and the
 * health endpoint says `unavailable`; nothing hangs. Afterwards, with the
 * append-only file, the same session and its stream go on and nothing is
 * lost (events stored before the outage replay after it, notifications
 * flow again); without it, the session's record and log are gone (and the
 * instance's lease with them: the instance takes a new one): the session
 * is 404 at once, and the client initializes again and goes on. A paused Redis fails the commands
 * under way within the command timeout (their requests get the same 503),
 * and the `PING` probe turns the instance unavailable until Redis answers
 * again.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option } from "effect"
import { createClient } from "redis"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import { InstanceLease } from "../../../src/server/InstanceLease.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import * as RedisFleet from "../../../src/server/RedisFleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"
import { openSession, openSse, post } from "../http/helpers.ts"

const KEY = "k".repeat(32)
const PREFIX = "outage:"
const HANDSHAKE = "2025-11-25"

const server = McpServer.make({
  serverInfo: { name: "outage", version: "1.0.0" },
  capabilities: { tools: {} },
  requestStateKeys: [KEY]
}).pipe(
  McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [], ttlMs: 0, cacheScope: "private" }))
)

const instance = (url: string, fleet: Partial<RedisFleet.Options> = {}) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      McpServer.layerHttp(server, { port: 0 }).pipe(
        Layer.provideMerge(RedisFleet.layer({ url, prefix: PREFIX, ...fleet }))
      )
    )
    const transport = Context.get(context, HttpServerTransport.HttpServerTransport)
    const mcp = Option.getOrThrow(transport.url)
    return {
      handle: Context.get(context, McpServer.Handle),
      lease: Context.get(context, InstanceLease),
      transport,
      url: mcp, health: mcp.replace(/\/mcp$/, "/mcp/health") }
  })

interface Answer {
  readonly status: number
  readonly retryAfter: string | null
  readonly body: string
}

/** Sends a request (again each time the effect runs) and reads its answer. */
const answer = (send: () => Promise<Response>): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const r = await send()
    return { status: r.status, retryAfter: r.headers.get("retry-after"), body: await r.text() }
  })

const health = (url: string) => answer(() => fetch(url))

/** Asks again (every 50 ms) until the answer satisfies `check`; the test's own timeout bounds it. */
const until = <A>(probe: Effect.Effect<A>, check: (a: A) => boolean): Effect.Effect<A> =>
  Effect.flatMap(probe, (a) => check(a) ? Effect.succeed(a) : Effect.andThen(Effect.sleep("50 millis"), until(probe, check)))

const headers = (session: string) => ({ "mcp-session-id": session, "mcp-protocol-version": HANDSHAKE })
const list = (url: string, session: string) => answer(() => post(url, { jsonrpc: "2.0", id: 7, method: "tools/list" }, headers(session)))
const message = (data: string) => ({ level: "info", data })
const dataOf = (m: { params?: { data?: unknown } }) => m.params?.data

/** Subscribers Redis counts on the fleet's notification channel. */
const subscribers = (url: string) =>
  Effect.promise(async () => {
    const client = createClient({ url })
    client.on("error", () => {})
    await client.connect()
    try {
      const counts = await client.pubSubNumSub(`${PREFIX}bus:notify`)
      return Number(counts[`${PREFIX}bus:notify`] ?? 0)
    } finally {
      client.destroy()
    }
  })

const expectRefused = (a: Answer) => {
  expect(a.status).toBe(503)
  expect(a.retryAfter).toBe("1")
  expect(JSON.parse(a.body).error.message).toBe("Service unavailable: the shared store cannot be reached")
}

/**
 * A session whose GET stream got `m1`, then went away while `m2` was sent
 * (stored in the log): what is left to resume after an outage.
 */
const sessionWithBacklog = (
  url: string,
  handle: McpServer.HandleShape,
  transport: HttpServerTransport.HttpServerTransportShape
) =>
  Effect.gen(function*() {
    const session = yield* Effect.promise(() => openSession(url, HANDSHAKE))
    const get = { ...headers(session), accept: "text/event-stream" }
    const first = yield* Effect.promise(() => openSse(url, { method: "GET", headers: get }))
    yield* handle.notifyAll("notifications/message", message("m1"))
    expect(yield* Effect.promise(() => first.reader!.until((r) => r.messages().length === 1))).toBe(true)
    const seen = first.reader!.lastId()!
    first.reader!.close()
    yield* Effect.promise(() => first.reader!.done)
    yield* until(transport.stats, (stats) => stats.openStreams === 0)
    yield* handle.notifyAll("notifications/message", message("m2"))
    // Stored: a resume shows it (and is closed again, leaving the event in the log).
    // Resumed once the transport has seen the first connection go (a resume taking over a connection it
    // still counts is another matter).
    yield* until(transport.stats, (stats) => stats.openStreams === 0)
    const check = yield* Effect.promise(() => openSse(url, { method: "GET", headers: { ...get, "last-event-id": seen } }))
    expect(yield* Effect.promise(() => check.reader!.until((r) => r.messages().length === 1))).toBe(true)
    expect(check.reader!.messages().map(dataOf)).toEqual(["m2"])
    check.reader!.close()
    yield* Effect.promise(() => check.reader!.done)
    yield* until(transport.stats, (stats) => stats.openStreams === 0)
    return { session, get, seen }
  })

describe.skipIf(!RedisServer.present)("an instance while its Redis is away", () => {
  it.live("with the append-only file: 503 + Retry-After during the outage, then the same session and stream go on, nothing lost", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const { handle, health: healthUrl, transport, url } = yield* instance(redis.url)
      expect(JSON.parse((yield* health(healthUrl)).body)).toEqual({ status: "ok", store: { kind: "redis", connected: true } })
      const { get, seen, session } = yield* sessionWithBacklog(url, handle, transport)

      yield* redis.kill
      // The client notices the closed socket on its own; from then on every answer is an immediate 503.
      expectRefused(yield* until(list(url, session), (a) => a.status !== 200))
      expectRefused(yield* answer(() => fetch(url, { method: "GET", headers: { ...get, "last-event-id": seen } })))
      const down = yield* health(healthUrl)
      expect(down.status).toBe(503)
      expect(JSON.parse(down.body)).toEqual({ status: "unavailable", store: { kind: "redis", connected: false } })

      yield* redis.start
      yield* until(health(healthUrl), (a) => a.status === 200)
      yield* until(subscribers(redis.url), (n) => n === 1)
      // The same session, and its stream from where the client left it: m2 kept through the restart.
      expect((yield* list(url, session)).status).toBe(200)
      const resumed = yield* Effect.promise(() => openSse(url, { method: "GET", headers: { ...get, "last-event-id": seen } }))
      expect(resumed.response.status).toBe(200)
      yield* handle.notifyAll("notifications/message", message("m3"))
      expect(yield* Effect.promise(() => resumed.reader!.until((r) => r.messages().length === 2))).toBe(true)
      expect(resumed.reader!.messages().map(dataOf)).toEqual(["m2", "m3"])
      resumed.reader!.close()
    }).pipe(Effect.scoped), 90_000)

  it.live("without it: 503 during the outage, then the session is gone: 404 at once, the client initializes again and goes on", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make({ appendOnly: false })
      const { handle, health: healthUrl, lease, transport, url } = yield* instance(redis.url)
      const { get, seen, session } = yield* sessionWithBacklog(url, handle, transport)
      // The instance's lease key goes with the data: the instance finds it lost and takes a new one.
      const lost = yield* Effect.forkChild(lease.awaitLost)

      yield* redis.kill
      expectRefused(yield* until(list(url, session), (a) => a.status !== 200))
      yield* redis.start
      yield* Fiber.join(lost)
      yield* until(health(healthUrl), (a) => a.status === 200)
      yield* until(subscribers(redis.url), (n) => n === 1)

      // The session's record went with the data: the session is unknown here as on any instance.
      expect((yield* list(url, session)).status).toBe(404)
      expect((yield* answer(() => fetch(url, { method: "GET", headers: { ...get, "last-event-id": seen } }))).status).toBe(404)
      // The client initializes again; the new session and its stream work.
      const again = yield* Effect.promise(() => openSession(url, HANDSHAKE))
      expect((yield* list(url, again)).status).toBe(200)
      const fresh = yield* Effect.promise(() => openSse(url, { method: "GET", headers: { ...headers(again), accept: "text/event-stream" } }))
      expect(fresh.response.status).toBe(200)
      yield* handle.notifyAll("notifications/message", message("m3"))
      expect(yield* Effect.promise(() => fresh.reader!.until((r) => r.messages().some((m) => dataOf(m) === "m3")))).toBe(true)
      fresh.reader!.close()
    }).pipe(Effect.scoped), 90_000)

  it.live("a Redis that hangs (SIGSTOP): the request under way ends within the command timeout, then 503 at once until it answers again", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      // Every command of the test's own requests must be answered within the command timeout too:
      // long enough for that on a loaded machine, short enough that the paused Redis's is soon over.
      const { health: healthUrl, url } = yield* instance(redis.url, { commandTimeoutMs: 1000, probeIntervalMs: 100 })
      const session = yield* Effect.promise(() => openSession(url, HANDSHAKE))
      // Answered over SSE, so its reply goes through the Redis log.
      const sse = { ...headers(session), accept: "text/event-stream" }

      yield* redis.pause
      // Its reply's append goes unanswered: given up on after the command timeout, answered 503.
      expectRefused(yield* answer(() => post(url, { jsonrpc: "2.0", id: 8, method: "tools/list" }, sse)))
      const down = yield* until(health(healthUrl), (a) => a.status === 503)
      expect(JSON.parse(down.body)).toEqual({ status: "unavailable", store: { kind: "redis", connected: false } })
      expectRefused(yield* list(url, session))

      yield* redis.resume
      yield* until(health(healthUrl), (a) => a.status === 200)
      expect((yield* list(url, session)).status).toBe(200)
      const again = yield* answer(() => post(url, { jsonrpc: "2.0", id: 9, method: "tools/list" }, sse))
      expect(again.status).toBe(200)
      expect(again.body).toContain(`"tools"`)
    }).pipe(Effect.scoped), 90_000)
})
