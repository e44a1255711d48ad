/**
 * Configured credentials belong to one authorization server: a client id
 * and secret, a workload's JWT, an enterprise identity assertion. When the
 * MCP server's metadata names another one (it was taken over, or lies),
 * nothing is sent there: `IssuerMismatch`, with the second authorization
 * server (a loopback AuthWorld of its own) seeing no token request at all.
 */
import { generateKeyPairSync, type KeyObject, sign } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import type { HttpClient } from "effect/http"
import * as FileTokenStore from "../../../src/client/auth/FileTokenStore.ts"
import * as OAuthProvider from "../../../src/client/auth/OAuthProvider.ts"
import * as TokenStore from "../../../src/client/auth/TokenStore.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as World from "./AuthWorld.ts"

const live = (name: string, body: () => Effect.Effect<void, unknown, Scope.Scope | HttpClient.HttpClient>) =>
  it.live(name, () => Effect.scoped(body()).pipe(Effect.provide(NodeHttpClient.layerUndici)), 20_000)

const SERVICE = { clientId: "svc", clientSecret: "svc-secret" } as const

const connect = (world: World.AuthWorld, options: OAuthProvider.Options, store?: TokenStore.TokenStoreShape) =>
  Effect.gen(function*() {
    const make = OAuthProvider.make(options)
    const auth = yield* (store === undefined ? make : make.pipe(Effect.provideService(TokenStore.TokenStore, store)))
    return yield* StreamableHttp.make({ url: world.mcpUrl, auth, protocolVersion: "2026-07-28", defaultTimeout: "10 seconds" })
  })

/** The MCP server of `world` now names `other`'s authorization server, and takes the tokens it issues. */
const moveTo = (world: World.AuthWorld, other: World.AuthWorld) => {
  world.knobs.prmBody = JSON.stringify({ resource: world.mcpUrl, authorization_servers: [other.issuer], scopes_supported: ["read"] })
  const own = world.accessTokens.get.bind(world.accessTokens)
  world.accessTokens.get = (token) => own(token) ?? other.accessTokens.get(token)
  // Its earlier tokens are no longer taken: the next request meets a 401.
  world.accessTokens.clear()
}

const tempFile = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "issuer-binding-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => path.join(dir, "tokens.json")))

const workloadJwt = (key: KeyObject, claims: Record<string, unknown>) => {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url")
  const input = `${part({ alg: "ES256", typ: "JWT" })}.${part(claims)}`
  return `${input}.${sign("sha256", Buffer.from(input), { key, dsaEncoding: "ieee-p1363" }).toString("base64url")}`
}

/** Every request `world` saw that carried a credential: an Authorization header, a secret or an assertion. */
const credentialsSeen = (world: World.AuthWorld) =>
  world.seen.filter((s) =>
    s.headers.authorization !== undefined || s.form.has("client_secret") || s.form.has("assertion") ||
    s.form.has("client_assertion")
  )

describe("OAuth: configured credentials are bound to one authorization server", () => {
  live("client credentials used at one issuer are not sent to another the metadata names later (same provider)", () =>
    Effect.gen(function*() {
      // `hint`: every 401 names the metadata document, so the provider reads it again.
      const first = yield* World.make({ prm: "hint" })
      const second = yield* World.make()
      const t = yield* connect(first, SERVICE)
      yield* t.request("tools/list", {})
      expect(first.count("/token", "client_credentials")).toBe(1)
      moveTo(first, second)
      const e = yield* Effect.flip(t.request("tools/list", {}))
      expect(e).toMatchObject({ _tag: "IssuerMismatch", bound: first.issuer, issuer: second.issuer, boundBy: "first-use" })
      expect(e.message).toContain(first.issuer)
      expect(e.message).toContain(`--issuer ${second.issuer}`)
      expect(second.count("/token")).toBe(0)
      expect(credentialsSeen(second)).toEqual([])
    }))

  live("the binding is kept in the token store: a later run refuses the other issuer, and the issuer option moves it", () =>
    Effect.gen(function*() {
      const file = yield* tempFile
      const first = yield* World.make()
      const second = yield* World.make()
      const run = (options: OAuthProvider.Options) =>
        Effect.gen(function*() {
          const t = yield* connect(first, options, yield* FileTokenStore.make(file))
          return yield* t.request("tools/list", {})
        }).pipe(Effect.scoped)
      yield* run(SERVICE)
      expect((yield* (yield* FileTokenStore.make(file)).load).issuers).toEqual({ "client_id svc": first.issuer })
      moveTo(first, second)
      const e = yield* Effect.flip(run(SERVICE))
      expect(e).toMatchObject({ _tag: "IssuerMismatch", bound: first.issuer, issuer: second.issuer, boundBy: "first-use" })
      expect(credentialsSeen(second)).toEqual([])
      // Allowed by name: the grant goes to the new issuer, and the binding moves with it.
      yield* run({ ...SERVICE, issuer: second.issuer })
      expect(second.count("/token", "client_credentials")).toBe(1)
      expect((yield* (yield* FileTokenStore.make(file)).load).issuers).toEqual({ "client_id svc": second.issuer })
      yield* run(SERVICE)
      expect(first.count("/token")).toBe(1)
    }))

  live("with the issuer option, another issuer is refused on first contact and nothing is sent", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      const e = yield* Effect.flip((yield* connect(world, { ...SERVICE, issuer: "https://as.example.com" })).request("tools/list", {}))
      expect(e).toMatchObject({ _tag: "IssuerMismatch", bound: "https://as.example.com", issuer: world.issuer, boundBy: "option" })
      expect(e.message).toContain("issuer option")
      expect(world.count("/token")).toBe(0)
      // Its own issuer, with or without a trailing slash, is let through.
      yield* (yield* connect(world, { ...SERVICE, issuer: `${world.issuer}/` })).request("tools/list", {})
      expect(world.count("/token", "client_credentials")).toBe(1)
    }))

  live("a workload's JWT is not presented to another issuer, where it could be replayed", () =>
    Effect.gen(function*() {
      const key = generateKeyPairSync("ec", { namedCurve: "P-256" })
      const first = yield* World.make({ prm: "hint", assertionKey: key.publicKey })
      const second = yield* World.make({ assertionKey: key.publicKey })
      const jwt = workloadJwt(key.privateKey, { sub: "workload", aud: first.issuer })
      const t = yield* connect(first, { jwtBearer: Effect.succeed(jwt) })
      yield* t.request("tools/list", {})
      moveTo(first, second)
      const e = yield* Effect.flip(t.request("tools/list", {}))
      expect(e).toMatchObject({ _tag: "IssuerMismatch", bound: first.issuer, issuer: second.issuer })
      expect(second.count("/token")).toBe(0)
      expect(credentialsSeen(second)).toEqual([])
    }))

  live("an enterprise identity assertion is not asked for another issuer, nor presented there", () =>
    Effect.gen(function*() {
      const first = yield* World.make({ prm: "hint" })
      const second = yield* World.make()
      const t = yield* connect(first, {
        ...SERVICE,
        enterprise: { tokenEndpoint: `${first.origin}/idp/token`, clientId: "idp-app", idToken: Effect.succeed("id.token.ok") }
      })
      yield* t.request("tools/list", {})
      expect(first.count("/idp/token")).toBe(1)
      moveTo(first, second)
      const e = yield* Effect.flip(t.request("tools/list", {}))
      expect(e).toMatchObject({ _tag: "IssuerMismatch", bound: first.issuer, issuer: second.issuer })
      expect(first.count("/idp/token")).toBe(1)
      expect(second.count("/token")).toBe(0)
      expect(credentialsSeen(second)).toEqual([])
    }))

  live("a dynamically registered client is not bound: a new issuer gets a registration of its own", () =>
    Effect.gen(function*() {
      const first = yield* World.make({ prm: "hint" })
      const second = yield* World.make()
      const user = World.browser()
      const t = yield* connect(first, { redirectUrl: "http://127.0.0.1:1/cb", interaction: user.interaction })
      yield* t.request("tools/list", {})
      moveTo(first, second)
      yield* t.request("tools/list", {})
      expect([first.count("/register"), second.count("/register")]).toEqual([1, 1])
      expect(second.count("/token", "authorization_code")).toBe(1)
    }))
})
