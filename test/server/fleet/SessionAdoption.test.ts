/**
 * Adoption of handshake-era sessions between two instances in one process
 * (each its own HTTP server and Redis connection, one real Redis), seen
 * through plain HTTP: a session is usable through the other instance only
 * by the principal that made it (anyone else gets 404 on both); a local
 * copy left idle is dropped while the session lives on through the other
 * instance, and the next request there adopts it again. With Redis down a
 * request naming a session is answered 503 with `Retry-After` at once, and
 * once Redis is back the same session works on both; `closeSession` on one
 * instance ends it on the other; no key is left once both stop. A cancel
 * sent through one instance ends the request on the other, whether it
 * arrives before that request or while it runs. A session whose client
 * only listens on its GET stream outlives the idle timeout.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import * as RedisFleet from "../../../src/server/RedisFleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"

const PREFIX = "adopt:"
const IDLE_MS = 1500

const server = (name: string) =>
  McpServer.make({ serverInfo: { name: "adoption", version: "1.0.0" }, stateless: false }).pipe(
    McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [{ name: "whoami", inputSchema: { type: "object" } }] })),
    McpServer.method("tools/call", {}, (params, ctx) =>
      (params as { name?: string }).name === "hold"
        ? Effect.never
        : Effect.succeed({ content: [{ type: "text", text: `${name} ${ctx.session.clientInfo.name} ${ctx.session.phase}` }] }))
  )

/** An instance: the caller's `x-user` header is its principal. */
const instance = (name: string, redisUrl: string, idleMs = IDLE_MS) =>
  Effect.map(
    Layer.build(
      McpServer.layerHttp(server(name), {
        port: 0,
        sessionIdleTimeout: `${idleMs} millis`,
        authenticate: (request) => Effect.succeed({ id: request.headers["x-user"] ?? "anonymous" })
      // A long lease: these tests are about sessions, and a worker starved on a loaded machine must not lose it.
      }).pipe(Layer.provide(RedisFleet.layer({ url: redisUrl, prefix: PREFIX, leaseMs: 30_000 })))
    ),
    (context) => {
      const transport = Context.get(context, HttpServerTransport.HttpServerTransport)
      return { transport, url: Option.getOrThrow(transport.url) }
    }
  )

let ids = 0
const post = (url: string, user: string, message: Record<string, unknown>, sessionId?: string) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        "x-user": user,
        ...(sessionId === undefined ? {} : { "mcp-session-id": sessionId })
      },
      body: JSON.stringify({ jsonrpc: "2.0", ...message })
    })
    const text = await response.text()
    return {
      status: response.status,
      sessionId: response.headers.get("mcp-session-id") ?? undefined,
      retryAfter: response.headers.get("retry-after") ?? undefined,
      body: text === "" ? undefined : JSON.parse(text)
    }
  })

const call = (url: string, user: string, sessionId: string) =>
  post(url, user, { id: ++ids, method: "tools/call", params: { name: "whoami", arguments: {} } }, sessionId)

/** Opens a session through `url` as `user` (the client named `client`), finishing the handshake there; its id. */
const handshake = (url: string, user: string, client: string) =>
  Effect.gen(function*() {
    const init = yield* post(url, user, {
      id: ++ids,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: client, version: "1.0.0" } }
    })
    expect(init.status).toBe(200)
    const id = init.sessionId!
    expect((yield* post(url, user, { method: "notifications/initialized" }, id)).status).toBe(202)
    return id
  })

const textOf = (body: any): string => body?.result?.content?.[0]?.text

const until = <A>(probe: Effect.Effect<A>, check: (a: A) => boolean): Effect.Effect<A> =>
  Effect.flatMap(probe, (a) => check(a) ? Effect.succeed(a) : Effect.andThen(Effect.sleep("50 millis"), until(probe, check)))

describe.skipIf(!RedisServer.present)("Handshake-era session adoption", () => {
  it.live("only the principal that made a session uses it elsewhere; an idle local copy goes alone", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const scope = yield* Scope.make()
      const a = yield* instance("A", redis.url).pipe(Scope.provide(scope))
      const b = yield* instance("B", redis.url).pipe(Scope.provide(scope))

      const init = yield* post(a.url, "alice", {
        id: ++ids,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "probe", version: "1.0.0" } }
      })
      expect(init.status).toBe(200)
      const id = init.sessionId!
      // The handshake finishes through B; A learns it at its next request.
      expect((yield* post(b.url, "alice", { method: "notifications/initialized" }, id)).status).toBe(202)
      expect(textOf((yield* call(a.url, "alice", id)).body)).toBe("A probe ready")
      expect(textOf((yield* call(b.url, "alice", id)).body)).toBe("B probe ready")

      // Another principal: 404 on the instance that made it and on the one that adopted it.
      expect((yield* call(a.url, "bob", id)).status).toBe(404)
      expect((yield* call(b.url, "bob", id)).status).toBe(404)

      // Used through B only, A's copy goes idle and is dropped; the session lives on.
      yield* until(
        Effect.andThen(call(b.url, "alice", id), a.transport.sessionIds),
        (held) => !held.includes(id)
      )
      expect(yield* b.transport.sessionIds).toContain(id)
      expect(textOf((yield* call(a.url, "alice", id)).body)).toBe("A probe ready")
      expect(yield* a.transport.sessionIds).toContain(id)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("Redis down: 503 with Retry-After at once, the same session afterwards; closeSession ends it everywhere; no key left", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const scope = yield* Scope.make()
      // Idle timeouts longer than the outage: the record outlives it.
      const a = yield* instance("A", redis.url, 600_000).pipe(Scope.provide(scope))
      const b = yield* instance("B", redis.url, 600_000).pipe(Scope.provide(scope))
      const id = yield* handshake(a.url, "alice", "probe")
      expect(textOf((yield* call(b.url, "alice", id)).body)).toBe("B probe ready")

      // Redis down: answered at once with 503 and Retry-After, on both.
      yield* redis.kill
      const down = yield* until(call(b.url, "alice", id), (r) => r.status === 503)
      expect(down.retryAfter).toBe("1")
      expect((yield* call(a.url, "alice", id)).status).toBe(503)
      yield* redis.start
      yield* until(call(b.url, "alice", id), (r) => r.status === 200)
      expect(textOf((yield* until(call(a.url, "alice", id), (r) => r.status === 200)).body)).toBe("A probe ready")

      // Ended through A's service: 404 on B too.
      expect(yield* a.transport.closeSession(id)).toBe(true)
      expect((yield* call(b.url, "alice", id)).status).toBe(404)
      expect(yield* b.transport.sessionIds).not.toContain(id)

      yield* Scope.close(scope, Exit.void)
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual([])
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("a cancel sent through one instance ends the request running on the other, whichever comes first", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const scope = yield* Scope.make()
      const a = yield* instance("A", redis.url, 600_000).pipe(Scope.provide(scope))
      const b = yield* instance("B", redis.url, 600_000).pipe(Scope.provide(scope))
      const id = yield* handshake(a.url, "alice", "probe")
      expect((yield* call(b.url, "alice", id)).status).toBe(200)
      // The cancel (through A) and the request (to B) race: cancelled before it arrives or while it
      // runs, the request is never answered, and its POST ends with 202.
      const [held, cancelled] = yield* Effect.all([
        post(b.url, "alice", { id: "held-1", method: "tools/call", params: { name: "hold", arguments: {} } }, id),
        post(a.url, "alice", { method: "notifications/cancelled", params: { requestId: "held-1", reason: "enough" } }, id)
      ], { concurrency: "unbounded" })
      expect(cancelled.status).toBe(202)
      expect(held.status).toBe(202)
      expect(held.body).toBeUndefined()
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("a session whose client only listens on its GET stream outlives the idle timeout", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const scope = yield* Scope.make()
      const a = yield* instance("A", redis.url).pipe(Scope.provide(scope))
      const b = yield* instance("B", redis.url).pipe(Scope.provide(scope))
      const id = yield* handshake(b.url, "alice", "listener")
      const abort = new AbortController()
      const listening = yield* Effect.promise(() =>
        fetch(a.url, {
          headers: { accept: "text/event-stream", "mcp-session-id": id, "mcp-protocol-version": "2025-11-25", "x-user": "alice" },
          signal: abort.signal
        })
      )
      expect(listening.status).toBe(200)
      // Three idle timeouts with no request: only the open stream on A keeps the session.
      yield* Effect.sleep(`${3 * IDLE_MS} millis`)
      expect(textOf((yield* call(b.url, "alice", id)).body)).toBe("B listener ready")
      abort.abort()
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped), { timeout: 60_000 })
})
