/**
 * The one-shot call's `auth` option against the library's own server
 * protected by a loopback authorization server: both eras signed in (the
 * stateless request, and the handshake with its DELETE), the era probe of
 * `auto` behind a sign-in, and the failures: a token refused twice, the
 * sign-in failing, no provider.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { HttpClient } from "effect/http"
import * as OAuthProvider from "../../../src/client/auth/OAuthProvider.ts"
import * as OneShot from "../../../src/client/OneShot.ts"
import * as McpErrorGroup from "../../../src/McpErrorGroup.ts"
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

const setup = (eras?: "both" | "legacy", providerOptions: OAuthProvider.Options = {}) =>
  Effect.gen(function*() {
    const world = yield* World.make()
    const server = yield* ProtectedServer.serve(world, eras)
    const sent: Array<Sent> = []
    const client = HttpClient.tapRequest(yield* HttpClient.HttpClient, (request) =>
      Effect.sync(() => void sent.push({ method: request.method, url: request.url, authorization: request.headers.authorization })))
    const user = World.browser()
    const auth = yield* OAuthProvider.make({ redirectUrl: REDIRECT, interaction: user.interaction, ...providerOptions }).pipe(
      Effect.provideService(HttpClient.HttpClient, client)
    )
    const call = (name: string, options: OneShot.Options) =>
      OneShot.callTool(server.mcpUrl, name, {}, { auth, ...options }).pipe(Effect.provideService(HttpClient.HttpClient, client))
    const toServer = () => sent.filter((s) => s.url.startsWith(server.mcpUrl))
    return { world, server, user, call, toServer }
  })

describe("one-shot calls with an OAuth provider", () => {
  live("the stateless revision: the 401 signs in and the request is sent once more", () =>
    Effect.gen(function*() {
      const { call, toServer, user, world } = yield* setup()
      const result = yield* call("whoami", { protocol: "2026-07-28" })
      expect(result.structuredContent).toEqual({ scopes: ["read"] })
      expect(toServer().map((s) => `${s.method} ${s.authorization?.slice(0, 7)}`)).toEqual(["POST undefined", "POST Bearer "])
      expect(user.opened).toHaveLength(1)
      // The next call reuses the provider's token: no sign-in, no 401.
      yield* call("whoami", { protocol: "2026-07-28" })
      expect(toServer().at(-1)!.authorization).toBe(`Bearer ${world.issued[0]}`)
      expect(toServer()).toHaveLength(3)
      expect(user.opened).toHaveLength(1)
    }))

  live("the session era: initialize, initialized, the request and the DELETE all carry the token", () =>
    Effect.gen(function*() {
      const { call, toServer, world } = yield* setup()
      const result = yield* call("whoami", { protocol: "2025-11-25" })
      expect(result.structuredContent).toEqual({ scopes: ["read"] })
      const bearer = `Bearer ${world.issued[0]}`
      expect(toServer().map((s) => [s.method, s.authorization])).toEqual([
        ["POST", undefined],
        ["POST", bearer],
        ["POST", bearer],
        ["POST", bearer],
        ["DELETE", bearer]
      ])
    }))

  live("auto: the stateless request signs in, then the handshake follows on a server of the session era only", () =>
    Effect.gen(function*() {
      OneShot.forgetServers()
      const { call, toServer, user } = yield* setup("legacy")
      const result = yield* call("whoami", {})
      expect(result.structuredContent).toEqual({ scopes: ["read"] })
      expect(user.opened).toHaveLength(1)
      const sent = toServer()
      expect(sent[0]!.authorization).toBeUndefined()
      for (const s of sent.slice(1)) expect(s.authorization?.startsWith("Bearer ")).toBe(true)
      expect(sent.at(-1)!.method).toBe("DELETE")
    }))

  live("403 insufficient_scope steps up with the union of the scopes, in either era", () =>
    Effect.gen(function*() {
      for (const protocol of ["2026-07-28", "2025-11-25"] as const) {
        const { call, user } = yield* setup()
        const result = yield* call("admin", { protocol })
        expect(result.structuredContent, protocol).toEqual({ scopes: ["read", "admin"] })
        expect(user.opened.map((u) => new URL(u).searchParams.get("scope")), protocol).toEqual(["read", "read admin"])
      }
    }))

  live("a fresh token refused again is TokenRejected after one retry, in either era", () =>
    Effect.gen(function*() {
      for (const protocol of ["2026-07-28", "2025-11-25"] as const) {
        const { call, toServer, world } = yield* setup()
        const original = world.accessTokens.set.bind(world.accessTokens)
        world.accessTokens.set = (key, value) => original(key, { ...value, expired: true })
        const error = yield* Effect.flip(call("whoami", { protocol }))
        expect(error, protocol).toMatchObject({ _tag: "McpAuthError", reason: { _tag: "TokenRejected", status: 401 } })
        expect(toServer(), protocol).toHaveLength(2)
      }
    }))

  live("a sign-in that cannot happen is its typed error, and nothing is retried", () =>
    Effect.gen(function*() {
      const { call, toServer, world } = yield* setup("both", { interaction: undefined })
      const error = yield* Effect.flip(call("whoami", { protocol: "2026-07-28" }))
      expect(error).toMatchObject({ _tag: "McpAuthError", reason: { _tag: "InteractionRequired" } })
      expect(toServer()).toHaveLength(1)
      expect(world.count("/token")).toBe(0)
    }))

  live("without a provider the 401 is HttpError with the server's challenge", () =>
    Effect.gen(function*() {
      const { server } = yield* setup()
      const error = yield* Effect.flip(OneShot.callTool(server.mcpUrl, "whoami", {}, { protocol: "2026-07-28" }))
      expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "HttpError", status: 401 } })
      expect((McpErrorGroup.reasonOf(error) as { wwwAuthenticate?: string }).wwwAuthenticate).toContain("resource_metadata=")
    }))
})
