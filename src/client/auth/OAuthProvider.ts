/**
 * OAuth 2.1 for MCP clients (the MCP authorization spec): the service an HTTP
 * client transport asks for the `Authorization` header of each request, and
 * tells about the 401s and 403s it gets.
 *
 * On a 401 it discovers the server's authorization server, gets a client
 * identity (configured, client ID metadata document, or dynamic
 * registration, in that order), and obtains tokens: the authorization code
 * grant with PKCE S256 through an interactive handler, client credentials
 * (with a secret or a `private_key_jwt` assertion), a JWT bearer grant
 * (workload identity), or an enterprise identity assertion (token exchange
 * at the identity provider, then JWT bearer). Every grant names the
 * resource (RFC 8707). Where the authorization server offers DPoP, tokens
 * are bound to a key the provider holds and each request carries a proof. Tokens are
 * refreshed when they expire, one refresh per server however many requests
 * wait for it, and a 403 `insufficient_scope` re-authorizes with the union
 * of the scopes held and asked for. The library itself never opens a
 * browser nor listens for a redirect: the `interaction` handler does.
 * Nor does it let a server's metadata send its requests to loopback,
 * private or link-local addresses unless the MCP server is on one of that
 * kind, or `allowPrivateNetworks` says so (`AddressPolicy`).
 *
 * Configured credentials (client id and secret or key, JWT bearer source,
 * enterprise identity assertion) are bound to one authorization server, the
 * `issuer` option's or else the first one used (kept in the token store):
 * metadata naming another fails with `IssuerMismatch` before anything is
 * sent to it.
 *
 * This module is the service: which tokens a request carries, and what a
 * 401 or 403 leads to, one at a time per server. Its parts are in
 * `internal/`: the client's identity (`ClientIdentity`), the grants
 * (`SignIn`), storing and refreshing tokens (`Tokens`), what they share
 * (`ProviderContext`), and the options (`ProviderOptions`).
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Semaphore from "effect/Semaphore"
import type * as HttpClient from "effect/http/HttpClient"
import type { AuthError } from "../../AuthError.ts"
import type * as TokenStore from "./TokenStore.ts"
import * as WwwAuthenticate from "./WwwAuthenticate.ts"
import * as ClientIdentity from "./internal/ClientIdentity.ts"
import * as ProviderContext from "./internal/ProviderContext.ts"
import type { Options } from "./internal/ProviderOptions.ts"
import * as SignIn from "./internal/SignIn.ts"
import * as Tokens from "./internal/Tokens.ts"

export type { Interaction, Options } from "./internal/ProviderOptions.ts"

/**
 * The request auth headers are made for: a DPoP proof is bound to its
 * method and URL.
 *
 * @since 0.1.0
 * @category models
 */
export interface AuthRequest {
  /** The HTTP method, upper-case. */
  readonly method: string
  /** The URL requested (query and fragment are left out of a proof). */
  readonly url: string
}

/**
 * What a transport asks of the provider.
 *
 * @since 0.1.0
 * @category models
 */
export interface OAuthProviderShape {
  /**
   * The auth headers for `request` to the MCP server `serverUrl`
   * (refreshing an expired token first), lower-case names: `authorization`
   * (`Bearer …` or `DPoP …`) and, with a DPoP-bound token, a fresh `dpop`
   * proof. Empty while there is no token.
   */
  readonly headers: (serverUrl: string, request: AuthRequest) => Effect.Effect<Readonly<Record<string, string>>, AuthError>
  /**
   * A server at `url` handed out a DPoP nonce (`DPoP-Nonce`): proofs for
   * its origin carry the latest one from now on.
   */
  readonly nonce: (url: string, nonce: string) => Effect.Effect<void>
  /**
   * The server answered 401 to a request sent with the `authorization`
   * value `sent`: refresh, or
   * authorize from scratch. Does nothing when the token was replaced since.
   */
  readonly unauthorized: (
    serverUrl: string,
    wwwAuthenticate: string | undefined,
    sent: string | undefined
  ) => Effect.Effect<void, AuthError>
  /**
   * The server answered 403: on `insufficient_scope`, re-authorizes with the
   * scopes held plus those asked for, and says `true` (a retry makes sense).
   */
  readonly forbidden: (
    serverUrl: string,
    wwwAuthenticate: string | undefined,
    sent: string | undefined
  ) => Effect.Effect<boolean, AuthError>
}

/**
 * The OAuth provider service.
 *
 * @since 0.1.0
 * @category services
 */
export class OAuthProvider extends Context.Service<OAuthProvider, OAuthProviderShape>()(
  "effect-mcp-transport/client/auth/OAuthProvider"
) {}

/** The `Authorization` value of the tokens: `Bearer …`, or `DPoP …` for a bound token. */
const bearer = (tokens: TokenStore.Tokens | undefined): string | undefined =>
  tokens === undefined ? undefined : `${tokens.tokenType === "DPoP" ? "DPoP" : "Bearer"} ${tokens.accessToken}`

const scopeUnion = (...scopes: ReadonlyArray<string | undefined>): string | undefined => {
  const all = new Set<string>()
  for (const scope of scopes) for (const s of (scope ?? "").split(" ")) if (s !== "") all.add(s)
  return all.size === 0 ? undefined : [...all].join(" ")
}

/** What choosing a request's tokens takes of the provider: its tokens, and its lock per server. */
interface Access {
  readonly tokens: Tokens.Tokens
  readonly lockOf: (serverUrl: string) => Semaphore.Semaphore
}

// One generator function for every request, and one for every refresh (docs/design.md, "Per-request code and the old generation").

/** The tokens a request to the server carries: the stored ones, refreshed first once they expire. */
const authorizationOf = Effect.fnUntraced(function*(
  access: Access,
  serverUrl: string
): Effect.fn.Return<TokenStore.Tokens | undefined, AuthError> {
  const tokens = yield* access.tokens.current(serverUrl)
  if (tokens === undefined) return undefined
  if (tokens.refreshToken === undefined || !access.tokens.expired(tokens, yield* Clock.currentTimeMillis)) return tokens
  return yield* access.lockOf(serverUrl).withPermit(refreshLocked(access.tokens, serverUrl))
})

/** Refreshes the server's tokens, with its lock held. */
const refreshLocked = Effect.fnUntraced(function*(
  tokens: Tokens.Tokens,
  serverUrl: string
): Effect.fn.Return<TokenStore.Tokens | undefined, AuthError> {
  // Whoever held the lock before may have refreshed already.
  const latest = yield* tokens.current(serverUrl)
  if (latest === undefined) return undefined
  if (latest.refreshToken === undefined || !tokens.expired(latest, yield* Clock.currentTimeMillis)) return latest
  const found = yield* tokens.discover(serverUrl, {})
  if (found.server.issuer !== latest.issuer) return undefined
  return yield* tokens.refresh(found, latest)
})

/**
 * Makes a provider. It sends its own requests with the `HttpClient` in
 * context, and keeps tokens in the `TokenStore` in context, or in memory
 * when there is none.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(options: Options = {}) {
  const context = yield* ProviderContext.make(options)
  const { offersDpop, signer } = context
  const identity = ClientIdentity.make(context)
  const stored = Tokens.make(context, identity)
  const { current, discover, refresh, save } = stored
  const obtain = SignIn.make(context, identity, save)

  /** Per server: one lock that serializes its refreshes and grants. */
  const locks = new Map<string, Semaphore.Semaphore>()
  const lockOf = (serverUrl: string) => {
    let lock = locks.get(serverUrl)
    if (lock === undefined) locks.set(serverUrl, lock = Semaphore.makeUnsafe(1))
    return lock
  }

  const access: Access = { tokens: stored, lockOf }
  const authorization = (serverUrl: string) => authorizationOf(access, serverUrl)

  const unauthorized: OAuthProviderShape["unauthorized"] = (serverUrl, header, sent) =>
    lockOf(serverUrl).withPermit(Effect.gen(function*() {
      // Another request signed in or refreshed while this one waited for the lock (sent nothing, or an older token).
      if (bearer(yield* current(serverUrl)) !== sent) return
      const challenge = WwwAuthenticate.parse(header)
      if (challenge.dpop === true) offersDpop.add(serverUrl)
      const found = yield* discover(serverUrl, challenge)
      const tokens = yield* current(serverUrl)
      if (tokens !== undefined && sent !== undefined && tokens.refreshToken !== undefined && bearer(tokens) === sent) {
        if ((yield* refresh(found, tokens)) !== undefined) return
      }
      const scope = challenge.scope ?? found.resource.scopes_supported?.join(" ") ?? options.scope
      yield* obtain(found, scope)
    }))

  const forbidden: OAuthProviderShape["forbidden"] = (serverUrl, header, sent) => {
    const challenge = WwwAuthenticate.parse(header)
    if (challenge.error !== "insufficient_scope") return Effect.succeed(false)
    return lockOf(serverUrl).withPermit(Effect.gen(function*() {
      const tokens = yield* current(serverUrl)
      if (bearer(tokens) !== sent) return true
      const found = yield* discover(serverUrl, challenge.resourceMetadata === undefined ? {} : challenge)
      yield* obtain(found, scopeUnion(tokens?.scope, challenge.scope))
      return true
    }))
  }

  const headers: OAuthProviderShape["headers"] = (serverUrl, request) =>
    Effect.map(authorization(serverUrl), (tokens): Readonly<Record<string, string>> => {
      if (tokens === undefined) return {}
      if (tokens.tokenType !== "DPoP") return { authorization: bearer(tokens)! }
      return {
        authorization: bearer(tokens)!,
        dpop: signer.proof(request.method, request.url, tokens.accessToken)
      }
    })

  const nonce: OAuthProviderShape["nonce"] = (url, value) => Effect.sync(() => signer.remember(url, value))

  return OAuthProvider.of({ headers, nonce, unauthorized, forbidden })
})

/**
 * Provides an `OAuthProvider`; needs an `HttpClient`, and uses the
 * `TokenStore` in context (in memory when there is none).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<OAuthProvider, never, HttpClient.HttpClient> =>
  Layer.effect(OAuthProvider, make(options))
