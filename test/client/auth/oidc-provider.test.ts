/**
 * Our OAuth client and our protected resource against a real authorization
 * server nobody here wrote (oidc-provider, test/fixtures/oidc-authorization-server.ts):
 * McpClient over Streamable HTTP with an OAuthProvider, an McpServer behind
 * the HTTP server transport's `authorization` option checking the
 * provider's JWTs with JwtVerifier. Discovery (our metadata, then the
 * provider's RFC 8414 or OpenID discovery document), dynamic registration, the code
 * flow with PKCE, refresh (before use, after the server refused an expired
 * token, single-flight, revoked), and audience binding.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import type { HttpClient } from "effect/http"
import * as OAuthProvider from "../../../src/client/auth/OAuthProvider.ts"
import * as TokenStore from "../../../src/client/auth/TokenStore.ts"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import type * as ProtocolVersion from "../../../src/ProtocolVersion.ts"
import { makeBrowser, startOidcServer } from "../../fixtures/oidc-authorization-server.ts"
import { protectedServer, SCOPE } from "../../fixtures/oidc-protected-server.ts"

const REDIRECT = "http://127.0.0.1:1/callback"

const live = (name: string, body: () => Effect.Effect<void, unknown, Scope.Scope | HttpClient.HttpClient>) =>
  it.live(name, () => Effect.scoped(body()).pipe(Effect.provide(NodeHttpClient.layerUndici)), 20_000)

/** A user with a browser, an OAuthProvider for them, and what it keeps. */
const user = (options: OAuthProvider.Options = {}) =>
  Effect.gen(function*() {
    const browser = makeBrowser(REDIRECT)
    const opened: Array<string> = []
    let pending: Promise<string> | undefined
    const store = yield* TokenStore.makeMemory
    const auth = yield* OAuthProvider.make({
      redirectUrl: REDIRECT,
      interaction: {
        openUrl: (url) =>
          Effect.sync(() => {
            opened.push(url)
            pending = browser.follow(url)
          }),
        receiveRedirect: Effect.promise(() => pending!)
      },
      ...options
    }).pipe(Effect.provideService(TokenStore.TokenStore, store))
    const held = Effect.map(store.load, (c) => ({ tokens: Object.values(c.tokens), clients: Object.values(c.clients) }))
    return { auth, opened, held }
  })

const connect = (url: string, auth: OAuthProvider.OAuthProviderShape, protocol: ProtocolVersion.AnyVersion) =>
  McpClient.connect(StreamableHttp.make({ url, auth, defaultTimeout: "10 seconds" }), {
    clientInfo: { name: "oidc-test", version: "1.0.0" },
    protocol
  })

describe.each(["2025-11-25", "2026-07-28"] as const)("against oidc-provider, protocol %s", (protocol) => {
  live("discovers the provider from our metadata, registers, signs in, and the principal reaches the tool", () =>
    Effect.gen(function*() {
      const as = yield* startOidcServer({ scopes: [SCOPE] })
      const server = yield* protectedServer(as)
      const alice = yield* user()
      const client = yield* connect(server.url, alice.auth, protocol)
      const result = yield* client.callTool({ name: "whoami", arguments: {} })
      expect(result.structuredContent).toEqual({ principal: "alice", subject: "alice", scopes: [SCOPE] })
      expect(alice.opened).toHaveLength(1)
      expect(as.requests.filter((r) => r.includes("/.well-known/"))).toEqual([
        "GET /.well-known/oauth-authorization-server"
      ])
      const asked = new URL(alice.opened[0]!).searchParams
      expect(asked.get("resource")).toBe(server.url)
      expect(asked.get("scope")).toBe(SCOPE)
      expect(asked.get("code_challenge_method")).toBe("S256")
      expect(as.tokenRequests.map((r) => r.grantType)).toEqual(["authorization_code"])
      const held = yield* alice.held
      expect(held.clients).toHaveLength(1)
      expect(as.registrations).toEqual([{ ok: true }])
      // The provider's token is a JWT for our resource, with a refresh token beside it.
      const [token] = held.tokens
      const claims = JSON.parse(Buffer.from(token!.accessToken.split(".")[1]!, "base64url").toString("utf8"))
      expect(claims).toMatchObject({ iss: as.issuer, aud: server.url, sub: "alice", scope: SCOPE })
      expect(token!.refreshToken).toBeDefined()
    }))

  live("a token within the refresh margin is refreshed before it is sent", () =>
    Effect.gen(function*() {
      const as = yield* startOidcServer({ scopes: [SCOPE], accessTokenTtl: 10 })
      const server = yield* protectedServer(as)
      const alice = yield* user()
      const client = yield* connect(server.url, alice.auth, protocol)
      yield* client.callTool({ name: "whoami", arguments: {} })
      // Ten seconds is inside the default 30-second margin: each use refreshes first, the signed-in token is never sent.
      const [first, ...rest] = as.tokenRequests.map((r) => r.grantType)
      expect(first).toBe("authorization_code")
      expect(rest.length).toBeGreaterThan(0)
      expect(rest.every((g) => g === "refresh_token")).toBe(true)
      expect(server.verified).not.toContain(as.tokenRequests[0]!.accessToken)
      expect(server.verified).toContain(as.tokenRequests[1]!.accessToken)
      as.accessTokenTtl = 3600
      const before = as.count("refresh_token")
      yield* client.callTool({ name: "whoami", arguments: {} })
      expect(as.count("refresh_token")).toBe(before + 1)
      yield* client.callTool({ name: "whoami", arguments: {} })
      expect(as.count("refresh_token")).toBe(before + 1)
    }))

  live("50 concurrent requests meeting a token the server finds expired make one refresh", () =>
    Effect.gen(function*() {
      const as = yield* startOidcServer({ scopes: [SCOPE], accessTokenTtl: 60 })
      const server = yield* protectedServer(as)
      const alice = yield* user()
      const client = yield* connect(server.url, alice.auth, protocol)
      yield* client.callTool({ name: "whoami", arguments: {} })
      expect(as.count("refresh_token")).toBe(0)
      // Two minutes pass on the server: the 60-second token is expired there, the next ones live an hour.
      as.accessTokenTtl = 3600
      server.clock.aheadMs = 120_000
      const results = yield* Effect.all(
        Array.from({ length: 50 }, () => client.callTool({ name: "whoami", arguments: {} })),
        { concurrency: "unbounded" }
      )
      expect(results.every((r) => (r.structuredContent as { principal: string }).principal === "alice")).toBe(true)
      expect(as.count("refresh_token")).toBe(1)
      expect(as.tokenRequests.every((r) => r.ok)).toBe(true)
      expect(alice.opened).toHaveLength(1)
    }))

  live("a revoked refresh token fails with InvalidGrant telling the user to sign in again", () =>
    Effect.gen(function*() {
      const as = yield* startOidcServer({ scopes: [SCOPE], accessTokenTtl: 60 })
      const server = yield* protectedServer(as)
      const alice = yield* user()
      const client = yield* connect(server.url, alice.auth, protocol)
      yield* client.callTool({ name: "whoami", arguments: {} })
      const held = yield* alice.held
      yield* Effect.promise(() => as.revoke(held.tokens[0]!.refreshToken!, held.clients[0]!.clientId))
      server.clock.aheadMs = 120_000
      const error = yield* Effect.flip(client.callTool({ name: "whoami", arguments: {} }))
      expect(error).toMatchObject({ _tag: "McpAuthError", reason: { _tag: "InvalidGrant" } })
      expect(error.message).toBe(
        `${as.issuer} refused the refresh_token grant: invalid_grant (grant request is invalid). ` +
          "The stored sign-in has expired or was revoked and was removed: sign in again."
      )
      expect(as.tokenRequests.at(-1)).toMatchObject({ grantType: "refresh_token", ok: false })
      // The refused tokens are gone: the next request signs in afresh (for a token the server's clock finds live).
      expect((yield* alice.held).tokens).toHaveLength(0)
      as.accessTokenTtl = 3600
      const again = yield* client.callTool({ name: "whoami", arguments: {} })
      expect((again.structuredContent as { principal: string }).principal).toBe("alice")
      expect(alice.opened).toHaveLength(2)
    }))
})

/** An `initialize` POST carrying `token`, outside any client. */
const rawInitialize = (url: string, token: string) =>
  Effect.promise(() =>
    fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
      })
    })
  )

describe("against oidc-provider: discovery and registration", () => {
  live("a provider serving only OpenID discovery is found there after the RFC 8414 location", () =>
    Effect.gen(function*() {
      const as = yield* startOidcServer({ scopes: [SCOPE], openIdDiscoveryOnly: true })
      const server = yield* protectedServer(as)
      const alice = yield* user()
      const client = yield* connect(server.url, alice.auth, "2025-11-25")
      const result = yield* client.callTool({ name: "whoami", arguments: {} })
      expect((result.structuredContent as { principal: string }).principal).toBe("alice")
      expect(as.requests.filter((r) => r.includes("/.well-known/"))).toEqual([
        "GET /.well-known/oauth-authorization-server",
        "GET /.well-known/openid-configuration"
      ])
    }))

  live("a server knowing the resource's scopes only per resource refuses them at registration: registered without", () =>
    Effect.gen(function*() {
      // oidc-provider's own idiom: the resource server's scopes come with the resource, not the server's scope list.
      const as = yield* startOidcServer()
      const server = yield* protectedServer(as)
      const alice = yield* user()
      const client = yield* connect(server.url, alice.auth, "2025-11-25")
      const result = yield* client.callTool({ name: "whoami", arguments: {} })
      expect(result.structuredContent).toEqual({ principal: "alice", subject: "alice", scopes: [SCOPE] })
      expect(new URL(alice.opened[0]!).searchParams.get("scope")).toBe(SCOPE)
      expect(as.registrations).toEqual([{ ok: false }, { ok: true }])
    }))
})

describe("against oidc-provider: audience", () => {
  live("a token the provider issued for another resource is refused by our server", () =>
    Effect.gen(function*() {
      const as = yield* startOidcServer({ scopes: [SCOPE] })
      const ours = yield* protectedServer(as)
      const other = yield* protectedServer(as)
      const alice = yield* user()
      const client = yield* connect(other.url, alice.auth, "2025-11-25")
      yield* client.callTool({ name: "whoami", arguments: {} })
      const token = (yield* alice.held).tokens[0]!.accessToken
      const res = yield* rawInitialize(ours.url, token)
      expect(res.status).toBe(401)
      expect(res.headers.get("www-authenticate")).toContain(`error="invalid_token"`)
      expect(res.headers.get("www-authenticate")).toContain("aud")
      // Sent to the server it was issued for, the same token works.
      const right = yield* rawInitialize(other.url, token)
      expect(right.status).toBe(200)
      yield* Effect.promise(() => right.text())
    }))
})
