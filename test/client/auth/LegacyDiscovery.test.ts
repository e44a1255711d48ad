/**
 * Discovery for servers of the 2025-03-26 revision, which publish no
 * protected resource metadata: the authorization server metadata at the MCP
 * server's origin, then the default endpoints. And where that fallback must
 * not apply: resource metadata that is there (usable or not), a challenge
 * that names its location, metadata that cannot be read right now.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import type { HttpClient } from "effect/http"
import * as OAuthProvider from "../../../src/client/auth/OAuthProvider.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as World from "./AuthWorld.ts"

const REDIRECT = "http://127.0.0.1:1/callback"

const live = (name: string, body: () => Effect.Effect<void, unknown, Scope.Scope | HttpClient.HttpClient>) =>
  it.live(name, () => Effect.scoped(body()).pipe(Effect.provide(NodeHttpClient.layerUndici)), 20_000)

const signedIn = (world: World.AuthWorld) =>
  Effect.gen(function*() {
    const user = World.browser()
    const auth = yield* OAuthProvider.make({ redirectUrl: REDIRECT, interaction: user.interaction })
    const transport = yield* StreamableHttp.make({
      url: world.mcpUrl,
      auth,
      protocolVersion: "2025-03-26",
      defaultTimeout: "10 seconds"
    })
    return { transport, user }
  })

const wellKnown = (world: World.AuthWorld) => world.seen.filter((s) => s.path.startsWith("/.well-known/")).map((s) => s.path)

describe("OAuth discovery: the 2025-03-26 fallback", () => {
  live("no resource metadata: the authorization server metadata at the server's origin", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ prm: "none" })
      const { transport, user } = yield* signedIn(world)
      expect(yield* transport.request("tools/list", {})).toEqual({ scopes: [] })
      expect(wellKnown(world)).toEqual([
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server"
      ])
      expect(world.count("/register")).toBe(1)
      const authorize = new URL(user.opened[0]!)
      expect(authorize.pathname).toBe("/authorize")
      expect(authorize.searchParams.get("code_challenge_method")).toBe("S256")
      // Still bound to the server: the resource indicator names it.
      expect(authorize.searchParams.get("resource")).toBe(world.mcpUrl)
      expect(world.seen.find((s) => s.path === "/token")!.form.get("resource")).toBe(world.mcpUrl)
    }))

  live("no metadata at all: the default endpoints /register, /authorize and /token at the origin", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ prm: "none", asMetadata: "none" })
      const { transport, user } = yield* signedIn(world)
      yield* transport.request("tools/list", {})
      expect(wellKnown(world)).toEqual([
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server"
      ])
      expect(world.count("/register")).toBe(1)
      expect(new URL(user.opened[0]!).origin + new URL(user.opened[0]!).pathname).toBe(`${world.origin}/authorize`)
      expect(world.count("/token", "authorization_code")).toBe(1)
      // The token from the default endpoint is what the server then sees.
      expect(world.seen.filter((s) => s.path === "/mcp").at(-1)!.headers.authorization).toBe(`Bearer ${world.issued[0]}`)
    }))

  live("the tokens it got are refreshed at the default token endpoint too", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ prm: "none", asMetadata: "none" })
      const { transport, user } = yield* signedIn(world)
      yield* transport.request("tools/list", {})
      world.accessTokens.clear()
      yield* transport.request("tools/list", {})
      expect(world.count("/token", "refresh_token")).toBe(1)
      expect(user.opened).toHaveLength(1)
    }))
})

describe("OAuth discovery: no fallback where the server publishes resource metadata", () => {
  live("resource metadata naming an authorization server without metadata is DiscoveryFailed, not the defaults", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ asMetadata: "none", issuerPath: "/tenant1" })
      const { transport, user } = yield* signedIn(world)
      const error = yield* Effect.flip(transport.request("tools/list", {}))
      expect(error).toMatchObject({ _tag: "DiscoveryFailed", step: "authorization-server" })
      expect((error as { reason: string }).reason).toContain(`no metadata found for ${world.issuer}`)
      // Neither the origin's metadata nor its default endpoints were tried.
      expect(wellKnown(world)).not.toContain("/.well-known/oauth-authorization-server")
      expect(world.count("/register") + world.count("/token")).toBe(0)
      expect(user.opened).toHaveLength(0)
    }))

  live("unusable resource metadata, a challenge naming a missing document, or metadata answering 5xx: DiscoveryFailed", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [Partial<World.Knobs>, string]> = [
        [{ prmBody: "{not json" }, "is not JSON"],
        [{ prmBody: JSON.stringify({ resource: "http://127.0.0.1:1/mcp", authorization_servers: ["y"] }) }, "describes the resource"],
        [{ prm: "hint-missing" }, "no metadata found"],
        [{ prm: "error" }, "HTTP 500"]
      ]
      for (const [knobs, reason] of cases) {
        const world = yield* World.make(knobs)
        const { transport } = yield* signedIn(world)
        const error = yield* Effect.flip(transport.request("tools/list", {}))
        expect(error, reason).toMatchObject({ _tag: "DiscoveryFailed", step: "protected-resource" })
        expect((error as { reason: string }).reason, reason).toContain(reason)
        expect(wellKnown(world), reason).not.toContain("/.well-known/oauth-authorization-server")
        expect(world.count("/register") + world.count("/authorize") + world.count("/token"), reason).toBe(0)
      }
    }))

  live("origin metadata that is there but unusable is DiscoveryFailed, not the defaults", () =>
    Effect.gen(function*() {
      const world = yield* World.make({
        prm: "none",
        asBody: JSON.stringify({ issuer: "https://as.example", token_endpoint: "https://as.example/token" })
      })
      const { transport } = yield* signedIn(world)
      const error = yield* Effect.flip(transport.request("tools/list", {}))
      expect(error).toMatchObject({ _tag: "DiscoveryFailed", step: "authorization-server" })
      expect((error as { reason: string }).reason).toContain("names the issuer https://as.example")
      expect(world.count("/register") + world.count("/token")).toBe(0)
    }))
})
