/**
 * OAuth 2.1 against a loopback authorization server and the MCP server it
 * protects (AuthWorld): discovery and its fallbacks, client identity,
 * the code flow with PKCE, client credentials, refresh (single-flight,
 * rotation, revocation), step-up, and the faults, each a typed error.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, References, type Scope, Tracer } from "effect"
import type { HttpClient } from "effect/http"
import * as OAuthProvider from "../../../src/client/auth/OAuthProvider.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as World from "./AuthWorld.ts"
import { recordingTracer } from "../../fixtures/RecordingTracer.ts"

const REDIRECT = "http://127.0.0.1:1/callback"

const live = (name: string, body: () => Effect.Effect<void, unknown, Scope.Scope | HttpClient.HttpClient>) =>
  it.live(name, () => Effect.scoped(body()).pipe(Effect.provide(NodeHttpClient.layerUndici)), 20_000)

const connect = (
  world: World.AuthWorld,
  options: OAuthProvider.Options,
  protocolVersion: string = "2025-11-25"
) =>
  Effect.gen(function*() {
    const auth = yield* OAuthProvider.make({ redirectUrl: REDIRECT, ...options })
    return yield* StreamableHttp.make({ url: world.mcpUrl, auth, protocolVersion, defaultTimeout: "10 seconds" })
  })

const signedIn = (world: World.AuthWorld, options: OAuthProvider.Options = {}, protocolVersion?: string) =>
  Effect.gen(function*() {
    const user = World.browser()
    const transport = yield* connect(world, { interaction: user.interaction, ...options }, protocolVersion)
    return { transport, user }
  })

describe("OAuth: the authorization code flow", () => {
  live("discovers, registers, signs in with PKCE and the resource indicator, and retries the request", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      const { transport, user } = yield* signedIn(world)
      const result = yield* transport.request("tools/list", {})
      expect(result).toEqual({ scopes: ["read", "write"] })
      // The first request went out bare, got 401, and went again with the token.
      const mcp = world.seen.filter((s) => s.path === "/mcp")
      expect(mcp.map((s) => s.headers.authorization?.slice(0, 7))).toEqual([undefined, "Bearer "])
      expect(world.count("/register")).toBe(1)
      expect(world.seen.find((s) => s.path === "/register")!.json).toMatchObject({
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"]
      })
      const authorize = new URL(user.opened[0]!).searchParams
      expect(authorize.get("code_challenge_method")).toBe("S256")
      expect(authorize.get("resource")).toBe(world.mcpUrl)
      expect(authorize.get("scope")).toBe("read write")
      const token = world.seen.find((s) => s.path === "/token")!.form
      expect(token.get("grant_type")).toBe("authorization_code")
      expect(token.get("resource")).toBe(world.mcpUrl)
      // No token ever in a URL.
      for (const s of world.seen) for (const t of world.issued) expect(s.query.toString()).not.toContain(t)
    }))

  live("serves both eras: the stateless revision carries the token on every POST too", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      const { transport } = yield* signedIn(world, {}, "2026-07-28")
      yield* transport.request("tools/list", {})
      yield* transport.request("tools/list", {})
      const mcp = world.seen.filter((s) => s.path === "/mcp")
      expect(mcp.map((s) => s.headers.authorization !== undefined)).toEqual([false, true, true])
      expect(mcp[2]!.headers["mcp-protocol-version"]).toBe("2026-07-28")
    }))

  live("concurrent first requests sign in once", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      const { transport, user } = yield* signedIn(world)
      yield* Effect.all(Array.from({ length: 5 }, () => transport.request("tools/list", {})), { concurrency: "unbounded" })
      expect(user.opened).toHaveLength(1)
      expect(world.count("/token")).toBe(1)
    }))

  live("the scope from the challenge wins over the metadata's scopes_supported", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ challengeScope: "read" })
      const { transport, user } = yield* signedIn(world)
      yield* transport.request("tools/list", {})
      expect(new URL(user.opened[0]!).searchParams.get("scope")).toBe("read")
    }))

  live("a pre-registered client id is used before registration, and a metadata document URL before registration", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ cimd: true })
      const a = yield* signedIn(world, { clientId: "known-client" })
      yield* a.transport.request("tools/list", {})
      expect(new URL(a.user.opened[0]!).searchParams.get("client_id")).toBe("known-client")
      const b = yield* signedIn(world, { clientMetadataUrl: "https://client.example/metadata.json" })
      yield* b.transport.request("tools/list", {})
      expect(new URL(b.user.opened[0]!).searchParams.get("client_id")).toBe("https://client.example/metadata.json")
      expect(world.count("/register")).toBe(0)
    }))

  live("the user denying access is UserDenied; a redirect with another state is StateMismatch", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      const denied = World.browser((u) => {
        const back = new URL(u)
        back.searchParams.delete("code")
        back.searchParams.set("error", "access_denied")
        return back
      })
      const t1 = yield* connect(world, { interaction: denied.interaction })
      const e1 = yield* Effect.flip(t1.request("tools/list", {}))
      expect(e1._tag).toBe("UserDenied")
      expect(e1.message).toContain("approve")
      const forged = World.browser((u) => {
        const back = new URL(u)
        back.searchParams.set("state", "forged")
        return back
      })
      const t2 = yield* connect(world, { interaction: forged.interaction })
      const e2 = yield* Effect.flip(t2.request("tools/list", {}))
      expect(e2).toMatchObject({ _tag: "StateMismatch", parameter: "state" })
      // The forged redirect's code was never exchanged.
      expect(world.count("/token")).toBe(0)
    }))

  live("without an interactive handler the code flow is InteractionRequired, before any registration", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      const t = yield* connect(world, {})
      const e = yield* Effect.flip(t.request("tools/list", {}))
      expect(e._tag).toBe("InteractionRequired")
      expect(world.count("/register")).toBe(0)
    }))
})

describe("OAuth: discovery", () => {
  live("protected resource metadata: the challenge's resource_metadata, then path-aware, then root", () =>
    Effect.gen(function*() {
      for (const [prm, expected] of [
        ["hint", ["/custom/prm.json"]],
        ["path", ["/.well-known/oauth-protected-resource/mcp"]],
        ["root", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]]
      ] as const) {
        const world = yield* World.make({ prm })
        const { transport } = yield* signedIn(world)
        yield* transport.request("tools/list", {})
        const asked = world.seen.filter((s) => s.path.includes("prm") || s.path.includes("protected-resource"))
        expect(asked.map((s) => s.path), prm).toEqual(expected)
      }
    }))

  live("authorization server metadata: OAuth then OpenID, path-aware for an issuer with a path", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ asMetadata: "openid", issuerPath: "/tenant1" })
      const { transport } = yield* signedIn(world)
      yield* transport.request("tools/list", {})
      expect(world.seen.filter((s) => s.path.includes("well-known") && !s.path.includes("protected")).map((s) => s.path))
        .toEqual([
          "/.well-known/oauth-authorization-server/tenant1",
          "/.well-known/openid-configuration/tenant1",
          "/tenant1/.well-known/openid-configuration"
        ])
    }))

  live("missing, malformed, oversized or foreign metadata is DiscoveryFailed, and nothing is retried", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [Partial<World.Knobs>, string]> = [
        [{ prm: "hint-missing" }, "no metadata found"],
        [{ prmBody: "{not json" }, "is not JSON"],
        [{ prmBody: JSON.stringify({ resource: "x" }) }, "is not protected resource metadata"],
        [{ prmBody: JSON.stringify({ resource: "x", authorization_servers: ["y"], pad: "z".repeat(70_000) }) }, "larger than"],
        [{ prmBody: JSON.stringify({ resource: "http://127.0.0.1:1/mcp", authorization_servers: ["y"] }) }, "describes the resource"],
        [{ asMetadata: "none" }, "no metadata found for"],
        [{ prm: "hint", hintOrigin: "http://localhost:1" }, "on another origin"]
      ]
      for (const [knobs, reason] of cases) {
        const world = yield* World.make(knobs)
        const { transport } = yield* signedIn(world)
        const error = yield* Effect.flip(transport.request("tools/list", {}))
        expect(error, reason).toMatchObject({ _tag: "DiscoveryFailed" })
        expect((error as { reason: string }).reason, JSON.stringify(knobs).slice(0, 80)).toContain(reason)
        expect(world.count("/mcp")).toBe(1)
        expect(world.count("/token")).toBe(0)
      }
    }))
})

describe("OAuth: tokens over time", () => {
  live("with a tracer installed, the sign-in and the refresh are spans of their own, with the server and the issuer", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      const world = yield* World.make({ expiresIn: 0 })
      yield* Effect.gen(function*() {
        const { transport } = yield* signedIn(world)
        yield* transport.request("tools/list", {})
        yield* transport.request("tools/list", {})
      }).pipe(Effect.provideService(Tracer.Tracer, tracer))
      const signIn = spans.filter((s) => s.name === "auth sign-in")
      const refresh = spans.filter((s) => s.name === "auth token refresh")
      expect(signIn).toHaveLength(1)
      expect(refresh.length).toBeGreaterThanOrEqual(1)
      expect(Object.fromEntries(signIn[0]!.attributes)).toEqual({
        "mcp.auth.server": world.mcpUrl,
        "mcp.auth.issuer": world.issuer,
        "mcp.auth.grant": "authorization_code"
      })
      expect(Object.fromEntries(refresh[0]!.attributes)).toMatchObject({ "mcp.auth.grant": "refresh_token" })
      for (const span of [...signIn, ...refresh]) expect(span.status._tag).toBe("Ended")
    }))

  live("50 concurrent requests on an expired token make exactly one refresh, and the refresh token rotates", () =>
    Effect.gen(function*() {
      // Tokens that expire at once: the request after the sign-in already refreshes once.
      const world = yield* World.make({ expiresIn: 0 })
      const { transport } = yield* signedIn(world)
      yield* transport.request("tools/list", {})
      const before = world.count("/token", "refresh_token")
      const held = [...world.refreshTokens]
      expect(held).toHaveLength(1)
      world.knobs.expiresIn = 3600
      yield* Effect.all(Array.from({ length: 50 }, () => transport.request("tools/list", {})), { concurrency: "unbounded" })
      expect(world.count("/token", "refresh_token") - before).toBe(1)
      const refreshes = () => world.seen.filter((s) => s.form.get("grant_type") === "refresh_token")
      expect(refreshes().at(-1)!.form.get("refresh_token")).toBe(held[0])
      // Rotated: the old refresh token is dead, the new one is what the next refresh sends.
      expect(world.refreshTokens.has(held[0]!)).toBe(false)
      const rotated = [...world.refreshTokens][0]!
      // The server revokes the access token: the 401 refreshes with the rotated refresh token.
      world.accessTokens.clear()
      yield* transport.request("tools/list", {})
      expect(refreshes().at(-1)!.form.get("refresh_token")).toBe(rotated)
      expect(world.count("/authorize")).toBe(1)
    }))

  live("a revoked refresh token is InvalidGrant telling the user to sign in again; the next call signs in", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      const { transport, user } = yield* signedIn(world)
      yield* transport.request("tools/list", {})
      world.refreshTokens.clear()
      world.accessTokens.clear()
      const error = yield* Effect.flip(transport.request("tools/list", {}))
      expect(error).toMatchObject({ _tag: "InvalidGrant", grant: "refresh_token", error: "invalid_grant" })
      expect(error.message).toContain("sign in again")
      expect(world.count("/token", "refresh_token")).toBe(1)
      yield* transport.request("tools/list", {})
      expect(user.opened).toHaveLength(2)
    }))

  live("403 insufficient_scope steps up with the union of scopes, once", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ challengeScope: "read" })
      const { transport, user } = yield* signedIn(world)
      const result = yield* transport.request("tools/call", { name: "admin" })
      expect(result).toEqual({ scopes: ["read", "admin"] })
      expect(user.opened.map((u) => new URL(u).searchParams.get("scope"))).toEqual(["read", "read admin"])
    }))

  live("a server refusing a fresh token is TokenRejected after one retry", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      const { transport } = yield* signedIn(world)
      // Every token the server sees is unknown to it.
      world.knobs.expiresIn = undefined
      const original = world.accessTokens.set.bind(world.accessTokens)
      world.accessTokens.set = (key, value) => original(key, { ...value, expired: true })
      const error = yield* Effect.flip(transport.request("tools/list", {}))
      expect(error).toMatchObject({ _tag: "TokenRejected", status: 401 })
      expect(world.count("/mcp")).toBe(2)
    }))
})

describe("OAuth: client credentials and the token endpoint", () => {
  for (const method of ["client_secret_basic", "client_secret_post"] as const) {
    live(`client credentials with ${method}`, () =>
      Effect.gen(function*() {
        const world = yield* World.make({ authMethods: [method] })
        const t = yield* connect(world, { clientId: "svc", clientSecret: "svc-secret" })
        yield* t.request("tools/list", {})
        const token = world.seen.find((s) => s.path === "/token")!
        expect(token.form.get("grant_type")).toBe("client_credentials")
        expect(token.form.get("resource")).toBe(world.mcpUrl)
        if (method === "client_secret_basic") {
          expect(token.headers.authorization).toMatch(/^Basic /)
          expect(token.form.get("client_secret")).toBeNull()
        } else {
          expect(token.headers.authorization).toBeUndefined()
          expect(token.form.get("client_secret")).toBe("svc-secret")
        }
      }))
  }

  live("a wrong client secret is InvalidGrant", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      const t = yield* connect(world, { clientId: "svc", clientSecret: "wrong" })
      const error = yield* Effect.flip(t.request("tools/list", {}))
      expect(error).toMatchObject({ _tag: "InvalidGrant", grant: "client_credentials", error: "invalid_client" })
    }))

  live("a token endpoint answering 500, or not at all, is TokenEndpointFailed within the timeout", () =>
    Effect.gen(function*() {
      const broken = yield* World.make({ token: "500" })
      const e1 = yield* Effect.flip((yield* signedIn(broken)).transport.request("tools/list", {}))
      expect(e1).toMatchObject({ _tag: "TokenEndpointFailed", status: 500 })
      expect(broken.count("/token")).toBe(1)
      const hanging = yield* World.make({ token: "hang" })
      const e2 = yield* Effect.flip((yield* signedIn(hanging, { timeout: "300 millis" })).transport.request("tools/list", {}))
      expect(e2).toMatchObject({ _tag: "TokenEndpointFailed" })
      expect(e2.message).toContain("no answer within")
      expect(hanging.count("/token")).toBe(1)
    }))
})

describe("OAuth: logs", () => {
  live("no token or secret is ever logged, at any level", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make((o) => void lines.push(JSON.stringify([o.message, o.fiber.getRef(References.CurrentLogAnnotations)])))
      const world = yield* World.make({ expiresIn: 0 })
      yield* Effect.gen(function*() {
        const { transport } = yield* signedIn(world)
        yield* transport.request("tools/list", {})
        for (const t of world.accessTokens.values()) t.expired = true
        yield* transport.request("tools/list", {})
        world.refreshTokens.clear()
        yield* Effect.flip(transport.request("tools/list", {}))
      }).pipe(
        Effect.scoped,
        Effect.provide(Logger.layer([capture])),
        Effect.provideService(References.MinimumLogLevel, "All")
      )
      expect(lines.length).toBeGreaterThan(0)
      expect(world.issued.length).toBeGreaterThan(1)
      const text = lines.join("\n")
      for (const secret of [...world.issued, "svc-secret"]) expect(text).not.toContain(secret)
    }))
})
