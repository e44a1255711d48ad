/**
 * The OAuth client's proof and grant mechanisms against a loopback
 * authorization server (AuthWorld): DPoP-bound tokens and their nonces,
 * private_key_jwt client assertions, the JWT bearer grant of workload
 * identity, and enterprise-managed authorization (token exchange at the
 * identity provider, then JWT bearer). Every proof and assertion is checked
 * by its signature with node:crypto.
 */
import { createHash, generateKeyPairSync, type KeyObject, sign } from "node:crypto"
import { writeFileSync } from "node:fs"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import type { HttpClient } from "effect/http"
import * as JwtBearer from "../../../src/client/auth/JwtBearer.ts"
import * as OAuthProvider from "../../../src/client/auth/OAuthProvider.ts"
import * as TokenStore from "../../../src/client/auth/TokenStore.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as World from "./AuthWorld.ts"
import { tempFiles } from "../../fixtures/temp-files.ts"

const tempFile = tempFiles("wif-")

const live = (name: string, body: () => Effect.Effect<void, unknown, Scope.Scope | HttpClient.HttpClient>) =>
  it.live(name, () => Effect.scoped(body()).pipe(Effect.provide(NodeHttpClient.layerUndici)), 20_000)

const connect = (world: World.AuthWorld, options: OAuthProvider.Options) =>
  Effect.gen(function*() {
    const auth = yield* OAuthProvider.make(options)
    return yield* StreamableHttp.make({ url: world.mcpUrl, auth, protocolVersion: "2026-07-28", defaultTimeout: "10 seconds" })
  })

const SERVICE = { clientId: "svc", clientSecret: "svc-secret" } as const

const ec = () => generateKeyPairSync("ec", { namedCurve: "P-256" })
const pem = (key: KeyObject) => key.export({ format: "pem", type: "pkcs8" }).toString()

/** A workload JWT as a platform would issue it, signed ES256. */
const workloadJwt = (key: KeyObject, claims: Record<string, unknown>) => {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url")
  const input = `${part({ alg: "ES256", typ: "JWT" })}.${part(claims)}`
  return `${input}.${sign("sha256", Buffer.from(input), { key, dsaEncoding: "ieee-p1363" }).toString("base64url")}`
}

const proofs = (world: World.AuthWorld, path: string) =>
  world.seen.filter((s) => s.path === path && typeof s.headers.dpop === "string").map((s) => World.checkJwt(s.headers.dpop as string))

describe("OAuth: DPoP-bound tokens", () => {
  live("proofs on the token request and on every MCP request verify, carry htm, htu, iat, a fresh jti, and ath", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ dpop: true })
      const t = yield* connect(world, SERVICE)
      yield* t.request("tools/list", {})
      yield* t.request("tools/list", {})
      const [tokenProof] = proofs(world, "/token")
      expect(tokenProof).toMatchObject({ valid: true, header: { typ: "dpop+jwt", alg: "ES256" }, claims: { htm: "POST", htu: `${world.origin}/token` } })
      expect(tokenProof!.header.jwk.d).toBeUndefined()
      expect(tokenProof!.claims.ath).toBeUndefined()
      const token = [...world.accessTokens.keys()][0]!
      expect(world.accessTokens.get(token)!.jkt).toBe(World.thumbprint(tokenProof!.header.jwk))
      const authorized = world.seen.filter((s) => s.path === "/mcp" && s.headers.authorization !== undefined)
      expect(authorized.map((s) => s.headers.authorization)).toEqual([`DPoP ${token}`, `DPoP ${token}`])
      const mcp = proofs(world, "/mcp")
      expect(mcp).toHaveLength(2)
      const now = Math.floor(Date.now() / 1000)
      for (const p of mcp) {
        expect(p.valid).toBe(true)
        expect(p.claims).toMatchObject({ htm: "POST", htu: world.mcpUrl, ath: createHash("sha256").update(token).digest("base64url") })
        expect(Math.abs(p.claims.iat - now)).toBeLessThan(60)
        expect(World.thumbprint(p.header.jwk)).toBe(World.thumbprint(tokenProof!.header.jwk))
      }
      expect(new Set([tokenProof!.claims.jti, ...mcp.map((p) => p.claims.jti)]).size).toBe(3)
    }))

  live("dpop: false keeps Bearer tokens even where the authorization server offers DPoP", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ dpop: true })
      const t = yield* connect(world, { ...SERVICE, dpop: false })
      yield* t.request("tools/list", {})
      expect(proofs(world, "/token")).toEqual([])
      expect(proofs(world, "/mcp")).toEqual([])
      const token = [...world.accessTokens.keys()][0]!
      expect(world.seen.filter((s) => s.path === "/mcp").map((s) => s.headers.authorization)).toEqual([undefined, `Bearer ${token}`])
    }))

  live("auto keeps Bearer tokens where the authorization server offers DPoP but the MCP server's challenge is Bearer only", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ dpop: true, rsScheme: "Bearer" })
      const t = yield* connect(world, SERVICE)
      yield* t.request("tools/list", {})
      expect(proofs(world, "/token")).toEqual([])
      expect(proofs(world, "/mcp")).toEqual([])
      const token = [...world.accessTokens.keys()][0]!
      expect(world.seen.filter((s) => s.path === "/mcp").map((s) => s.headers.authorization)).toEqual([undefined, `Bearer ${token}`])
    }))

  live("a bound token stored by another provider (another key) is not sent: this one gets its own", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ dpop: true })
      const store = yield* TokenStore.makeMemory
      const withStore = (options: OAuthProvider.Options) =>
        Effect.gen(function*() {
          const auth = yield* OAuthProvider.make(options).pipe(Effect.provideService(TokenStore.TokenStore, store))
          return yield* StreamableHttp.make({ url: world.mcpUrl, auth, protocolVersion: "2026-07-28", defaultTimeout: "10 seconds" })
        })
      yield* (yield* withStore(SERVICE)).request("tools/list", {})
      yield* (yield* withStore(SERVICE)).request("tools/list", {})
      expect(world.count("/token")).toBe(2)
      const sent = world.seen.filter((s) => s.path === "/mcp").map((s) => s.headers.authorization)
      const [first, second] = [...world.accessTokens.keys()]
      // The second provider's first request goes out bare: the stored token is bound to the first one's key.
      expect(sent).toEqual([undefined, `DPoP ${first}`, undefined, `DPoP ${second}`])
    }))

  live("each server's use_dpop_nonce is answered once, with a new proof carrying its nonce", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ dpop: true, asNonce: "required", rsNonce: "required" })
      const t = yield* connect(world, SERVICE)
      yield* t.request("tools/list", {})
      const token = proofs(world, "/token")
      expect(token.map((p) => p.claims.nonce)).toEqual([undefined, World.AS_NONCE])
      // One origin serves both here, and a nonce is kept per origin: the first MCP proof carries the latest one.
      const mcp = proofs(world, "/mcp")
      expect(mcp.map((p) => p.claims.nonce)).toEqual([World.AS_NONCE, World.RS_NONCE])
      expect(mcp[0]!.claims.jti).not.toBe(mcp[1]!.claims.jti)
      // The nonce is kept for the origin: the next request carries it from the start.
      yield* t.request("tools/list", {})
      expect(proofs(world, "/mcp").map((p) => p.claims.nonce)).toEqual([World.AS_NONCE, World.RS_NONCE, World.RS_NONCE])
    }))

  live("a second use_dpop_nonce from the MCP server is DpopNonceRejected, not a loop", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ dpop: true, rsNonce: "refused" })
      const t = yield* connect(world, SERVICE)
      const e = yield* Effect.flip(t.request("tools/list", {}))
      expect(e).toMatchObject({ _tag: "DpopNonceRejected", by: "resource-server", nonceSent: true })
      expect(proofs(world, "/mcp").map((p) => p.claims.nonce)).toEqual([undefined, World.RS_NONCE])
    }))

  live("an authorization server that never gives a usable nonce is DpopNonceRejected", () =>
    Effect.gen(function*() {
      const always = yield* World.make({ dpop: true, asNonce: "refused" })
      const e1 = yield* Effect.flip((yield* connect(always, SERVICE)).request("tools/list", {}))
      expect(e1).toMatchObject({ _tag: "DpopNonceRejected", by: "authorization-server", nonceSent: true })
      expect(always.count("/token")).toBe(2)
      const bare = yield* World.make({ dpop: true, asNonce: "bare" })
      const e2 = yield* Effect.flip((yield* connect(bare, SERVICE)).request("tools/list", {}))
      expect(e2).toMatchObject({ _tag: "DpopNonceRejected", by: "authorization-server", nonceSent: false })
      expect(bare.count("/token")).toBe(1)
    }))
})

describe("OAuth: private_key_jwt client authentication", () => {
  live("client credentials with an ES256 or RS256 assertion for the issuer, verified with the client's public key", () =>
    Effect.gen(function*() {
      for (const pair of [ec(), generateKeyPairSync("rsa", { modulusLength: 2048 })]) {
        const world = yield* World.make({ clientKey: pair.publicKey })
        const t = yield* connect(world, { clientId: "svc", clientKey: { privateKey: pem(pair.privateKey), keyId: "k1" } })
        yield* t.request("tools/list", {})
        const form = world.seen.find((s) => s.path === "/token")!.form
        expect(form.get("grant_type")).toBe("client_credentials")
        expect(form.get("client_id")).toBe("svc")
        expect(form.get("client_secret")).toBeNull()
        const checked = World.checkJwt(form.get("client_assertion")!, pair.publicKey)
        expect(checked.valid).toBe(true)
        expect(checked.header).toMatchObject({ kid: "k1", alg: pair.publicKey.asymmetricKeyType === "ec" ? "ES256" : "RS256" })
        expect(checked.claims).toMatchObject({ iss: "svc", sub: "svc", aud: world.issuer })
        expect(checked.claims.exp - checked.claims.iat).toBeLessThanOrEqual(60)
        expect(typeof checked.claims.jti).toBe("string")
      }
    }))

  live("a rejected assertion is InvalidGrant; a key that cannot sign is AssertionUnavailable before any request", () =>
    Effect.gen(function*() {
      const world = yield* World.make({ clientKey: ec().publicKey })
      const rejected = yield* Effect.flip(
        (yield* connect(world, { clientId: "svc", clientKey: { privateKey: pem(ec().privateKey) } })).request("tools/list", {})
      )
      expect(rejected).toMatchObject({ _tag: "InvalidGrant", grant: "client_credentials", error: "invalid_client" })
      const before = world.count("/token")
      const broken = yield* Effect.flip(
        (yield* connect(world, { clientId: "svc", clientKey: { privateKey: "not a key" } })).request("tools/list", {})
      )
      expect(broken).toMatchObject({ _tag: "AssertionUnavailable", kind: "client-assertion" })
      const mismatch = yield* Effect.flip(
        (yield* connect(world, { clientId: "svc", clientKey: { privateKey: pem(ec().privateKey), algorithm: "RS256" } }))
          .request("tools/list", {})
      )
      expect(mismatch).toMatchObject({ _tag: "AssertionUnavailable", kind: "client-assertion" })
      expect(world.count("/token")).toBe(before)
    }))
})

describe("OAuth: JWT bearer grant (workload identity)", () => {
  live("trades the workload's JWT, read from a file for each grant, with the resource and no client", () =>
    Effect.gen(function*() {
      const key = ec()
      const world = yield* World.make({ assertionKey: key.publicKey })
      const file = tempFile("token")
      const jwt = workloadJwt(key.privateKey, { iss: "https://platform.test", sub: "workload", aud: world.issuer })
      writeFileSync(file, `${jwt}\n`)
      const t = yield* connect(world, { jwtBearer: JwtBearer.fromFile(file) })
      yield* t.request("tools/list", {})
      const form = world.seen.find((s) => s.path === "/token")!.form
      expect(Object.fromEntries(form)).toEqual({
        grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
        assertion: jwt,
        resource: world.mcpUrl,
        scope: "read write"
      })
    }))

  live("a rejected assertion is InvalidGrant of jwt_bearer, asked once; a failing source is AssertionUnavailable", () =>
    Effect.gen(function*() {
      const key = ec()
      const world = yield* World.make({ assertionKey: key.publicKey })
      const wrongAudience = workloadJwt(key.privateKey, { sub: "workload", aud: "https://elsewhere.test" })
      const e = yield* Effect.flip((yield* connect(world, { jwtBearer: Effect.succeed(wrongAudience) })).request("tools/list", {}))
      expect(e).toMatchObject({ _tag: "InvalidGrant", grant: "jwt_bearer", error: "invalid_grant" })
      expect(world.count("/token")).toBe(1)
      const missing = yield* Effect.flip(
        (yield* connect(world, { jwtBearer: JwtBearer.fromFile("/nonexistent/token") })).request("tools/list", {})
      )
      expect(missing).toMatchObject({ _tag: "AssertionUnavailable", kind: "jwt-bearer" })
      const notJwt = yield* Effect.flip((yield* connect(world, { jwtBearer: Effect.succeed("hello") })).request("tools/list", {}))
      expect(notJwt).toMatchObject({ _tag: "AssertionUnavailable", kind: "jwt-bearer" })
      expect(world.count("/token")).toBe(1)
    }))
})

describe("OAuth: enterprise-managed authorization", () => {
  live("exchanges the identity token for an ID-JAG at the identity provider, then presents it as a JWT bearer grant", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      const t = yield* connect(world, {
        ...SERVICE,
        enterprise: { tokenEndpoint: `${world.origin}/idp/token`, clientId: "idp-app", idToken: Effect.succeed("id.token.ok") }
      })
      yield* t.request("tools/list", {})
      const exchange = world.seen.find((s) => s.path === "/idp/token")!.form
      expect(Object.fromEntries(exchange)).toEqual({
        grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
        requested_token_type: "urn:ietf:params:oauth:token-type:id-jag",
        subject_token: "id.token.ok",
        subject_token_type: "urn:ietf:params:oauth:token-type:id_token",
        audience: world.issuer,
        resource: world.mcpUrl,
        scope: "read write",
        client_id: "idp-app"
      })
      const grant = world.seen.find((s) => s.path === "/token")!
      expect(grant.form.get("grant_type")).toBe("urn:ietf:params:oauth:grant-type:jwt-bearer")
      expect(grant.form.get("assertion")!.split(".")).toHaveLength(3)
      expect(grant.headers.authorization).toBe(`Basic ${btoa("svc:svc-secret")}`)
    }))

  live("an identity token the identity provider refuses is InvalidGrant of token_exchange, and nothing reaches the MCP authorization server", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      const t = yield* connect(world, {
        ...SERVICE,
        enterprise: { tokenEndpoint: `${world.origin}/idp/token`, clientId: "idp-app", idToken: Effect.succeed("id.token.bad") }
      })
      const e = yield* Effect.flip(t.request("tools/list", {}))
      expect(e).toMatchObject({ _tag: "InvalidGrant", grant: "token_exchange", error: "invalid_grant" })
      expect(world.count("/token")).toBe(0)
    }))
})
