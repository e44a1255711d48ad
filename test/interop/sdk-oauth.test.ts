/**
 * The official SDK clients' OAuth flow against our protected server: the v2
 * client (`@modelcontextprotocol/client`, handshake era and pinned to
 * 2026-07-28) and the 1.x client (`@modelcontextprotocol/sdk`), each with
 * an OAuthClientProvider of its own, discover our Protected Resource
 * Metadata, register at oidc-provider, sign in through it (the user's part
 * driven by a cookie-keeping browser), finish the flow, and call a tool on
 * our McpServer, whose handler sees the signed-in user.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  Client,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type OAuthTokens,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type VersionNegotiationMode
} from "@modelcontextprotocol/client"
import { UnauthorizedError as Sdk1UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js"
import { Client as Sdk1Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as Sdk1HttpTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import { makeBrowser, startOidcServer } from "../fixtures/oidc-authorization-server.ts"
import { protectedServer, SCOPE } from "../fixtures/oidc-protected-server.ts"

const REDIRECT = "http://127.0.0.1:1/callback"

/**
 * What an application keeps for the SDK's OAuth flow, in memory; sending
 * the user to the authorization URL runs the browser to the redirect.
 */
class TestOAuthClientProvider implements OAuthClientProvider {
  #browser = makeBrowser(REDIRECT)
  #client: OAuthClientInformationMixed | undefined
  #tokens: OAuthTokens | undefined
  #verifier = ""
  #discovery: OAuthDiscoveryState | undefined
  /** The URL the browser was redirected to, once the user is done. */
  callback: string | undefined
  opened = 0
  get redirectUrl() {
    return REDIRECT
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "sdk-oauth-test",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none"
    }
  }
  clientInformation() {
    return this.#client
  }
  saveClientInformation(client: OAuthClientInformationMixed) {
    this.#client = client
  }
  tokens() {
    return this.#tokens
  }
  saveTokens(tokens: OAuthTokens) {
    this.#tokens = tokens
  }
  async redirectToAuthorization(url: URL) {
    this.opened++
    this.callback = await this.#browser.follow(url.href)
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier
  }
  codeVerifier() {
    return this.#verifier
  }
  // Kept so the v2 client can check the callback comes from the authorization server it started with.
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.#discovery = state
  }
  discoveryState() {
    return this.#discovery
  }
}

const whoamiOf = (result: object) => (result as { structuredContent?: { principal?: string } }).structuredContent?.principal

const setup = Effect.gen(function*() {
  const as = yield* startOidcServer({ scopes: [SCOPE] })
  const server = yield* protectedServer(as)
  return { as, server }
})

describe.each([["legacy", "legacy"], ["2026-07-28", { pin: "2026-07-28" }]] as const)(
  "the SDK v2 client's OAuth flow through oidc-provider to our server (%s)",
  (_name, mode) => {
    it.live("registers, signs in, finishes the flow and calls a tool as the user", () =>
      Effect.gen(function*() {
        const { as, server } = yield* setup
        const provider = new TestOAuthClientProvider()
        const url = new URL(server.url)
        const result = yield* Effect.promise(async () => {
          const negotiation = { versionNegotiation: { mode: mode as VersionNegotiationMode } }
          const first = new StreamableHTTPClientTransport(url, { authProvider: provider })
          const refused = await new Client({ name: "sdk2-oauth", version: "2.4.0" }, negotiation).connect(first)
            .then(() => undefined, (e: unknown) => e)
          expect(refused).toBeInstanceOf(UnauthorizedError)
          await first.finishAuth(new URL(provider.callback!).searchParams)
          const client = new Client({ name: "sdk2-oauth", version: "2.4.0" }, negotiation)
          await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }))
          try {
            return await client.callTool({ name: "whoami", arguments: {} })
          } finally {
            await client.close()
          }
        })
        expect(whoamiOf(result)).toBe("alice")
        expect(provider.opened).toBe(1)
        expect(as.tokenRequests.map((r) => r.grantType)).toEqual(["authorization_code"])
        // The token the SDK got is the provider's JWT for our resource.
        const claims = JSON.parse(Buffer.from(provider.tokens()!.access_token.split(".")[1]!, "base64url").toString())
        expect(claims).toMatchObject({ iss: as.issuer, aud: server.url, sub: "alice" })
      }).pipe(Effect.scoped), 20_000)
  }
)

describe("the SDK 1.x client's OAuth flow through oidc-provider to our server", () => {
  it.live("registers, signs in, finishes the flow and calls a tool as the user", () =>
    Effect.gen(function*() {
      const { as, server } = yield* setup
      const provider = new TestOAuthClientProvider()
      const url = new URL(server.url)
      const result = yield* Effect.promise(async () => {
        const first = new Sdk1HttpTransport(url, { authProvider: provider })
        const refused = await new Sdk1Client({ name: "sdk1-oauth", version: "1.32.2" }).connect(first)
          .then(() => undefined, (e: unknown) => e)
        expect(refused).toBeInstanceOf(Sdk1UnauthorizedError)
        await first.finishAuth(new URL(provider.callback!).searchParams.get("code")!)
        const client = new Sdk1Client({ name: "sdk1-oauth", version: "1.32.2" })
        await client.connect(new Sdk1HttpTransport(url, { authProvider: provider }))
        try {
          return await client.callTool({ name: "whoami", arguments: {} })
        } finally {
          await client.close()
        }
      })
      expect(whoamiOf(result)).toBe("alice")
      expect(provider.opened).toBe(1)
      expect(as.tokenRequests.map((r) => r.grantType)).toEqual(["authorization_code"])
    }).pipe(Effect.scoped), 20_000)
})
