/**
 * The legacy HTTP+SSE client transport's `auth` option against the
 * library's own server protected by a loopback authorization server: the
 * sign-in on the stream's 401, the token on every POST to the endpoint, a
 * refresh on a POST's 401 mid-session, the step-up on a 403, one retry and
 * no more, and no token in a log line or a URL.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, References, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { HttpClient } from "effect/http"
import * as OAuthProvider from "../../../src/client/auth/OAuthProvider.ts"
import * as SseTransport from "../../../src/client/SseClientTransport.ts"
import * as World from "./AuthWorld.ts"
import * as ProtectedServer from "./ProtectedServer.ts"

const REDIRECT = "http://127.0.0.1:1/callback"

const live = (name: string, body: () => Effect.Effect<void, unknown, Scope.Scope | HttpClient.HttpClient>) =>
  it.live(name, () => Effect.scoped(body()).pipe(Effect.provide(NodeHttpClient.layerUndici)), 20_000)

interface Sent {
  readonly method: string
  readonly url: string
  readonly authorization: string | undefined
}

/** An authorization server, the protected server, and a provider and transports whose requests are recorded. */
const setup = (knobs: Partial<World.Knobs> = {}) =>
  Effect.gen(function*() {
    const world = yield* World.make(knobs)
    const server = yield* ProtectedServer.serve(world)
    const sent: Array<Sent> = []
    const client = HttpClient.tapRequest(yield* HttpClient.HttpClient, (request) =>
      Effect.sync(() => void sent.push({ method: request.method, url: request.url, authorization: request.headers.authorization })))
    const user = World.browser()
    const auth = yield* OAuthProvider.make({ redirectUrl: REDIRECT, interaction: user.interaction }).pipe(
      Effect.provideService(HttpClient.HttpClient, client)
    )
    const connect = SseTransport.make({ url: server.sseUrl, auth, defaultTimeout: "10 seconds" }).pipe(
      Effect.provideService(HttpClient.HttpClient, client)
    )
    const toServer = (method: string) => sent.filter((s) => s.method === method && s.url.startsWith(server.mcpUrl))
    return { world, server, sent, user, connect, toServer }
  })

const handshake = (t: SseTransport.SseClientTransport) =>
  Effect.gen(function*() {
    yield* t.request("initialize", {
      protocolVersion: "2024-11-05",
      capabilities: {},
      clientInfo: { name: "sse-auth-test", version: "1.0.0" }
    })
    yield* t.notify("notifications/initialized")
  })

/** Every token the world issues from now on is unknown to the server. */
const refuseEveryToken = (world: World.AuthWorld) => {
  for (const t of world.accessTokens.values()) t.expired = true
  const original = world.accessTokens.set.bind(world.accessTokens)
  world.accessTokens.set = (key, value) => original(key, { ...value, expired: true })
}

describe("legacy HTTP+SSE with an OAuth provider", () => {
  live("the stream's 401 signs in and the stream is opened once more; every POST carries the token", () =>
    Effect.gen(function*() {
      const { connect, server, toServer, user, world } = yield* setup()
      const t = yield* connect
      expect(t.endpoint.startsWith(`${server.mcpUrl}/messages`)).toBe(true)
      yield* handshake(t)
      const result = yield* t.request("tools/call", { name: "whoami" })
      expect(result).toMatchObject({ structuredContent: { scopes: ["read"] } })
      expect(toServer("GET").map((s) => s.authorization?.slice(0, 7))).toEqual([undefined, "Bearer "])
      const posts = toServer("POST")
      expect(posts.length).toBe(3)
      for (const post of posts) {
        expect(post.url.startsWith(t.endpoint)).toBe(true)
        expect(post.authorization).toBe(`Bearer ${world.issued[0]}`)
      }
      // Discovery and tokens are the SSE URL's: the resource its metadata names covers it.
      expect(user.opened).toHaveLength(1)
      expect(new URL(user.opened[0]!).searchParams.get("resource")).toBe(server.mcpUrl)
    }))

  live("a POST refused with 401 mid-session refreshes the token and is sent once more", () =>
    Effect.gen(function*() {
      const { connect, toServer, user, world } = yield* setup()
      const t = yield* connect
      yield* handshake(t)
      // The server forgets every token it knew: the next POST is refused.
      world.accessTokens.clear()
      yield* t.request("tools/list", {})
      expect(world.count("/token", "refresh_token")).toBe(1)
      expect(user.opened).toHaveLength(1)
      const [refused, retried] = toServer("POST").slice(-2)
      expect(refused!.authorization).toBe(`Bearer ${world.issued[0]}`)
      expect(retried!.authorization).toBe(`Bearer ${world.issued[1]}`)
    }))

  live("a 403 insufficient_scope steps up with the union of the scopes, once", () =>
    Effect.gen(function*() {
      const { connect, user } = yield* setup()
      const t = yield* connect
      yield* handshake(t)
      const result = yield* t.request("tools/call", { name: "admin" })
      expect(result).toMatchObject({ structuredContent: { scopes: ["read", "admin"] } })
      expect(user.opened.map((u) => new URL(u).searchParams.get("scope"))).toEqual(["read", "read admin"])
    }))

  live("a fresh token refused on the stream is TokenRejected after one more GET", () =>
    Effect.gen(function*() {
      const { connect, toServer, world } = yield* setup()
      refuseEveryToken(world)
      const error = yield* Effect.flip(connect)
      expect(error).toMatchObject({ _tag: "TokenRejected", status: 401 })
      expect(toServer("GET")).toHaveLength(2)
    }))

  live("a POST refused again after the refresh is TokenRejected, with no loop", () =>
    Effect.gen(function*() {
      const { connect, toServer, world } = yield* setup()
      const t = yield* connect
      yield* handshake(t)
      const before = toServer("POST").length
      refuseEveryToken(world)
      const error = yield* Effect.flip(t.request("tools/list", {}))
      expect(error).toMatchObject({ _tag: "TokenRejected", status: 401 })
      expect(toServer("POST").length - before).toBe(2)
      expect(world.count("/token", "refresh_token")).toBe(1)
    }))

  live("without a provider the stream's 401 is HttpError with the server's challenge", () =>
    Effect.gen(function*() {
      const { server } = yield* setup()
      const error = yield* Effect.flip(SseTransport.make({ url: server.sseUrl }))
      expect(error).toMatchObject({ _tag: "HttpError", status: 401 })
      expect((error as { wwwAuthenticate?: string }).wwwAuthenticate).toContain("resource_metadata=")
    }))

  it.effect("a sign-in on the stream's 401 is not counted in connectTimeout", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      const server = yield* ProtectedServer.serve(world)
      const user = World.browser()
      // The user takes longer than the whole connect timeout to sign in.
      const slowUser = {
        openUrl: user.interaction.openUrl,
        receiveRedirect: Effect.andThen(TestClock.adjust("1 second"), user.interaction.receiveRedirect)
      }
      const auth = yield* OAuthProvider.make({ redirectUrl: REDIRECT, interaction: slowUser })
      const t = yield* SseTransport.make({ url: server.sseUrl, auth, connectTimeout: "300 millis" })
      yield* handshake(t)
      expect(user.opened).toHaveLength(1)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)), 20_000)

  live("no token is in a log line, at any level, nor in any URL", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make((o) => void lines.push(JSON.stringify([o.message, o.fiber.getRef(References.CurrentLogAnnotations)])))
      const { connect, sent, world } = yield* setup({ expiresIn: 0 })
      yield* Effect.gen(function*() {
        const t = yield* connect
        yield* handshake(t)
        // Expired at once: each request refreshes first.
        yield* t.request("tools/list", {})
        yield* t.request("tools/call", { name: "admin" })
        refuseEveryToken(world)
        yield* Effect.flip(t.request("tools/list", {}))
      }).pipe(
        Effect.scoped,
        Effect.provide(Logger.layer([capture])),
        Effect.provideService(References.MinimumLogLevel, "All")
      )
      expect(lines.length).toBeGreaterThan(0)
      expect(world.issued.length).toBeGreaterThan(2)
      const text = lines.join("\n")
      for (const token of [...world.issued, ...world.refreshTokens]) {
        expect(text).not.toContain(token)
        for (const s of sent) expect(s.url).not.toContain(token)
      }
    }))
})
