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
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Semaphore from "effect/Semaphore"
import * as HttpClient from "effect/http/HttpClient"
import {
  type AuthError,
  AuthorizationRefused,
  DiscoveryFailed,
  InteractionRequired,
  type InvalidGrant,
  RegistrationRefused,
  StateMismatch,
  type TokenStoreFailed,
  UserDenied
} from "../../AuthError.ts"
import type * as AddressPolicy from "./AddressPolicy.ts"
import type * as ClientAssertion from "./ClientAssertion.ts"
import * as Discovery from "./Discovery.ts"
import * as Dpop from "./Dpop.ts"
import * as IdentityAssertion from "./IdentityAssertion.ts"
import * as IssuerBinding from "./IssuerBinding.ts"
import * as JwtBearer from "./JwtBearer.ts"
import * as Pkce from "./Pkce.ts"
import * as TokenEndpoint from "./TokenEndpoint.ts"
import * as TokenStore from "./TokenStore.ts"
import * as WwwAuthenticate from "./WwwAuthenticate.ts"
import * as McpSpan from "../../internal/McpSpan.ts"

/**
 * The user's part of the authorization code flow, supplied by the
 * application: show the authorization URL, then hand back the URL the
 * browser was redirected to.
 *
 * @since 0.1.0
 * @category models
 */
export interface Interaction {
  /** Shows the authorization URL to the user (opens a browser, prints it…). */
  readonly openUrl: (url: string) => Effect.Effect<void>
  /** The full redirect URL (with `code` and `state`, or `error`) once the user is done. */
  readonly receiveRedirect: Effect.Effect<string>
}

/**
 * How the provider gets tokens.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** A pre-registered client id, used in preference to any other identity. Default none. */
  readonly clientId?: string | undefined
  /** The pre-registered client's secret; makes it a confidential client. Default none (a public client). */
  readonly clientSecret?: string | undefined
  /**
   * The authorization server (its issuer identifier) the configured
   * credentials belong to: `clientId` with its secret or `clientKey`,
   * `jwtBearer`, `enterprise`. They are sent to no other: a server whose
   * metadata names another fails with `IssuerMismatch`. Default: the first
   * one they are used with, kept in the token store; setting it moves that
   * binding.
   */
  readonly issuer?: string | undefined
  /**
   * An https URL of this client's metadata document, used as its `client_id`
   * where the authorization server supports client ID metadata documents.
   * Default none.
   */
  readonly clientMetadataUrl?: string | undefined
  /** The `client_name` sent with dynamic registration. Default "effect-mcp-transport". */
  readonly clientName?: string | undefined
  /** The redirect URI of the authorization code flow (where `receiveRedirect` listens). Required for that flow. */
  readonly redirectUrl?: string | undefined
  /** Shows the authorization URL and returns the redirect. Without it only client credentials can be used. */
  readonly interaction?: Interaction | undefined
  /**
   * The pre-registered client's private key: it authenticates with a signed
   * assertion (`private_key_jwt`, RFC 7523) instead of a secret. Default none.
   */
  readonly clientKey?: ClientAssertion.SigningKey | undefined
  /**
   * The JWT of the JWT bearer grant (RFC 7523, workload identity), run for
   * each token request: e.g. `JwtBearer.fromFile(path)`. Default none.
   */
  readonly jwtBearer?: JwtBearer.Source | undefined
  /**
   * Enterprise-managed authorization: the identity provider and the user's
   * identity token to exchange there for an ID-JAG. Default none.
   */
  readonly enterprise?: IdentityAssertion.Options | undefined
  /**
   * The grant: `authorization_code` (a user signs in), `client_credentials`
   * (a confidential client acts for itself), `jwt_bearer` (a workload's
   * JWT) or `identity_assertion` (enterprise-managed). Default:
   * `identity_assertion` with `enterprise`, else `jwt_bearer` with
   * `jwtBearer`, else `client_credentials` when a secret or key is given and
   * no `interaction`, else `authorization_code`.
   */
  readonly grant?: "authorization_code" | "client_credentials" | "jwt_bearer" | "identity_assertion" | undefined
  /**
   * DPoP-bound tokens (RFC 9449): `"auto"` binds them when the authorization
   * server advertises ES256 in `dpop_signing_alg_values_supported` and the
   * MCP server accepts them (its 401 offers the `DPoP` scheme, or its
   * resource metadata names DPoP algorithms); `true` always sends proofs,
   * `false` never. Default `"auto"`.
   */
  readonly dpop?: boolean | "auto" | undefined
  /** Scopes to ask for when neither the server's challenge nor its metadata name any. Default none (no `scope`). */
  readonly scope?: string | undefined
  /** Bound on each request to the authorization server (metadata, registration, token). Default 30 seconds. */
  readonly timeout?: Duration.Input | undefined
  /** Bound on the user's part of the code flow (`receiveRedirect`). Default 5 minutes. */
  readonly interactionTimeout?: Duration.Input | undefined
  /** Largest metadata document read. Default 64 KiB. */
  readonly maxMetadataBytes?: number | undefined
  /** A token this close to its expiry is refreshed before use. Default 30 seconds. */
  readonly refreshMargin?: Duration.Input | undefined
  /**
   * Internal addresses the server's metadata may send discovery,
   * registration and token requests to. By default a URL whose host is, or
   * resolves to, a loopback, private, link-local, carrier-grade NAT or
   * unspecified address is refused with `ForbiddenAddress`, unless the MCP
   * server's own host has an address of the same kind. `true` allows every
   * address; a list allows those host names and addresses or CIDR ranges
   * (`["auth.corp.internal", "10.20.0.0/16"]`). Default none.
   */
  readonly allowPrivateNetworks?: AddressPolicy.Allowance | undefined
}

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

const DEFAULT_TIMEOUT = Duration.seconds(30)
const DEFAULT_INTERACTION_TIMEOUT = Duration.minutes(5)
const DEFAULT_REFRESH_MARGIN = Duration.seconds(30)

/** The `Authorization` value of the tokens: `Bearer …`, or `DPoP …` for a bound token. */
/**
 * A sign-in or a refresh in a span of its own (kind INTERNAL), a child of
 * the request that needed it, with the server and the authorization
 * server's issuer. Nothing when tracing is off.
 */
const authSpan = (name: string, found: Discovery.Discovered, grant: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.withFiber((fiber) =>
    McpSpan.enabled(fiber)
      ? Effect.withSpan(effect, name, {
        kind: "internal",
        attributes: { "mcp.auth.server": found.serverUrl, "mcp.auth.issuer": found.server.issuer, "mcp.auth.grant": grant }
      })
      : effect
  )

const bearer = (tokens: TokenStore.Tokens | undefined): string | undefined =>
  tokens === undefined ? undefined : `${tokens.tokenType === "DPoP" ? "DPoP" : "Bearer"} ${tokens.accessToken}`

const scopeUnion = (...scopes: ReadonlyArray<string | undefined>): string | undefined => {
  const all = new Set<string>()
  for (const scope of scopes) for (const s of (scope ?? "").split(" ")) if (s !== "") all.add(s)
  return all.size === 0 ? undefined : [...all].join(" ")
}

/**
 * Makes a provider. It sends its own requests with the `HttpClient` in
 * context, and keeps tokens in the `TokenStore` in context, or in memory
 * when there is none.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(options: Options = {}) {
  const http = yield* HttpClient.HttpClient
  const store = Option.getOrUndefined(yield* Effect.serviceOption(TokenStore.TokenStore)) ??
    (yield* TokenStore.makeMemory)
  const timeout = options.timeout ?? DEFAULT_TIMEOUT
  const limits: Discovery.Limits = {
    maxBytes: options.maxMetadataBytes,
    timeout,
    allowPrivateNetworks: options.allowPrivateNetworks
  }
  const addresses = (found: Discovery.Discovered): TokenEndpoint.AddressGuard => ({
    serverUrl: found.serverUrl,
    allowPrivateNetworks: options.allowPrivateNetworks
  })
  const marginMs = Duration.toMillis(Duration.fromInputUnsafe(options.refreshMargin ?? DEFAULT_REFRESH_MARGIN))
  const grant = options.grant ??
    (options.enterprise !== undefined
      ? "identity_assertion"
      : options.jwtBearer !== undefined
      ? "jwt_bearer"
      : (options.clientSecret !== undefined || options.clientKey !== undefined) && options.interaction === undefined
      ? "client_credentials"
      : "authorization_code")
  // One key for the provider's life: a bound token is only ever used with it (see `current`).
  const signer = Dpop.make()
  // Servers whose challenge offered the DPoP scheme: a server that only knows Bearer would refuse a bound token.
  const offersDpop = new Set<string>()
  const dpopFor = (found: Discovery.Discovered): Dpop.Signer | undefined => {
    if (options.dpop === false) return undefined
    if (options.dpop === true) return signer
    const algs = found.server.dpop_signing_alg_values_supported
    const resource = found.resource as { dpop_signing_alg_values_supported?: unknown; dpop_bound_access_tokens_required?: unknown }
    const accepted = offersDpop.has(found.serverUrl) || Array.isArray(resource.dpop_signing_alg_values_supported) ||
      resource.dpop_bound_access_tokens_required === true
    return accepted && Array.isArray(algs) && algs.includes("ES256") ? signer : undefined
  }

  /** Per server: what discovery found, and one lock that serializes its refreshes and grants. */
  const discovered = new Map<string, Discovery.Discovered>()
  const locks = new Map<string, Semaphore.Semaphore>()
  const lockOf = (serverUrl: string) => {
    let lock = locks.get(serverUrl)
    if (lock === undefined) locks.set(serverUrl, lock = Semaphore.makeUnsafe(1))
    return lock
  }

  const credential = IssuerBinding.credentialOf(options)
  const bind = (found: Discovery.Discovered) => IssuerBinding.check(store, credential, options.issuer, found)

  /** A DPoP token bound to another key (stored by an earlier run) cannot be proven: it is as good as none. */
  const usable = (tokens: TokenStore.Tokens | undefined) =>
    tokens !== undefined && tokens.tokenType === "DPoP" && tokens.jkt !== signer.thumbprint ? undefined : tokens

  /** The tokens for the server: those of its discovered issuer and resource, or the one stored set covering it. */
  const current = (serverUrl: string): Effect.Effect<TokenStore.Tokens | undefined, TokenStoreFailed> =>
    Effect.map(store.load, (contents) => {
      const found = discovered.get(serverUrl)
      if (found !== undefined) {
        return usable(contents.tokens[TokenStore.bindingKey(found.server.issuer, found.resource.resource)])
      }
      const covering = Object.values(contents.tokens).filter((t) => Discovery.resourceCovers(t.resource, serverUrl))
      return covering.length === 1 ? usable(covering[0]) : undefined
    })

  const discover = (serverUrl: string, challenge: WwwAuthenticate.BearerChallenge) =>
    Effect.suspend(() => {
      const known = discovered.get(serverUrl)
      if (known !== undefined && challenge.resourceMetadata === undefined) return Effect.succeed(known)
      return Effect.tap(
        Discovery.discover(http, serverUrl, challenge, limits),
        (found) => Effect.sync(() => discovered.set(serverUrl, found))
      )
    })

  const tokensOf = (
    found: Discovery.Discovered,
    response: TokenEndpoint.TokenResponse,
    previous?: TokenStore.Tokens,
    requestedScope?: string
  ) =>
    Effect.map(Clock.currentTimeMillis, (now): TokenStore.Tokens => ({
      issuer: found.server.issuer,
      resource: found.resource.resource,
      accessToken: response.accessToken,
      tokenType: response.tokenType,
      jkt: response.tokenType === "DPoP" ? signer.thumbprint : undefined,
      // A refresh answer without a refresh token keeps the old one (RFC 6749 §6); with one, it rotates.
      refreshToken: response.refreshToken ?? previous?.refreshToken,
      expiresAt: response.expiresIn === undefined ? undefined : now + response.expiresIn * 1000,
      scope: response.scope ?? requestedScope ?? previous?.scope
    }))

  const save = (found: Discovery.Discovered, response: TokenEndpoint.TokenResponse, requestedScope?: string) =>
    Effect.tap(tokensOf(found, response, undefined, requestedScope), (tokens) =>
      store.update((contents) => TokenStore.withTokens(contents, tokens)))

  /** Stores without a lock of their own (`modify`) are serialized within this process. */
  const storeLock = Semaphore.makeUnsafe(1)

  /**
   * Runs `step` on the latest contents with the store locked (across
   * processes, where the store can), and applies the change it gives.
   */
  const locked = <A, E>(
    step: (contents: TokenStore.Contents) => Effect.Effect<readonly [A, ((contents: TokenStore.Contents) => TokenStore.Contents) | undefined], E>
  ): Effect.Effect<A, E | TokenStoreFailed> =>
    store.modify !== undefined
      ? store.modify((contents) =>
        Effect.map(step(contents), ([result, change]) => [result, change === undefined ? contents : change(contents)] as const)
      )
      : storeLock.withPermit(Effect.flatMap(store.load, (contents) =>
        Effect.flatMap(step(contents), ([result, change]) =>
          change === undefined ? Effect.succeed(result) : Effect.as(store.update(change), result))))

  // ---------------------------------------------------------------------------
  // Client identity: configured, client ID metadata document, stored registration, dynamic registration

  const identity = (found: Discovery.Discovered, scope: string | undefined) =>
    Effect.gen(function*() {
      const server = found.server
      const issuer = server.issuer
      if (options.clientId !== undefined) {
        const methods = server.token_endpoint_auth_methods_supported ?? ["client_secret_basic"]
        const client: TokenStore.RegisteredClient = {
          issuer,
          clientId: options.clientId,
          clientSecret: options.clientSecret,
          authMethod: options.clientKey !== undefined
            ? "private_key_jwt"
            : options.clientSecret === undefined
            ? "none"
            : methods.includes("client_secret_basic") || !methods.includes("client_secret_post")
            ? "client_secret_basic"
            : "client_secret_post"
        }
        return client
      }
      if (options.clientMetadataUrl !== undefined && server.client_id_metadata_document_supported === true) {
        if (!options.clientMetadataUrl.startsWith("https://")) {
          return yield* new RegistrationRefused({
            issuer,
            reason: `the client metadata URL ${options.clientMetadataUrl} is not an https URL`
          })
        }
        const client: TokenStore.RegisteredClient = { issuer, clientId: options.clientMetadataUrl, authMethod: "none" }
        return client
      }
      const stored = (yield* store.load).clients[issuer]
      if (stored !== undefined && stored.redirectUri === options.redirectUrl) return stored
      if (server.registration_endpoint === undefined) {
        return yield* new RegistrationRefused({
          issuer,
          reason: "it offers neither dynamic client registration nor client ID metadata documents"
        })
      }
      if (options.redirectUrl === undefined) {
        return yield* new RegistrationRefused({ issuer, reason: "registration needs a redirectUrl, and none is configured" })
      }
      const registered = yield* TokenEndpoint.register(http, {
        issuer,
        registrationEndpoint: server.registration_endpoint,
        clientName: options.clientName ?? "effect-mcp-transport",
        redirectUri: options.redirectUrl,
        scope,
        timeout,
        addresses: addresses(found)
      })
      yield* store.update((contents) => TokenStore.withClient(contents, registered))
      return registered
    })

  // ---------------------------------------------------------------------------
  // Grants

  const authorizationCode = (found: Discovery.Discovered, scope: string | undefined) =>
    Effect.gen(function*() {
      const server = found.server
      const issuer = server.issuer
      const interaction = options.interaction
      if (interaction === undefined) {
        return yield* new InteractionRequired({ serverUrl: found.serverUrl, reason: "no interactive handler is configured" })
      }
      if (options.redirectUrl === undefined) {
        return yield* new InteractionRequired({ serverUrl: found.serverUrl, reason: "no redirectUrl is configured" })
      }
      if (server.authorization_endpoint === undefined) {
        return yield* new DiscoveryFailed({
          serverUrl: found.serverUrl,
          step: "authorization-server",
          reason: `${issuer} has no authorization_endpoint`
        })
      }
      // Without S256 in the metadata the spec forbids going on: the code would travel unprotected.
      if (!(server.code_challenge_methods_supported ?? []).includes("S256")) {
        return yield* new DiscoveryFailed({
          serverUrl: found.serverUrl,
          step: "authorization-server",
          reason: `${issuer} does not advertise PKCE with S256 (code_challenge_methods_supported)`
        })
      }
      const client = yield* identity(found, scope)
      const pkce = yield* Pkce.make
      const state = Pkce.randomToken()
      const url = new URL(server.authorization_endpoint)
      url.searchParams.set("response_type", "code")
      url.searchParams.set("client_id", client.clientId)
      url.searchParams.set("redirect_uri", options.redirectUrl)
      url.searchParams.set("code_challenge", pkce.challenge)
      url.searchParams.set("code_challenge_method", "S256")
      url.searchParams.set("state", state)
      url.searchParams.set("resource", found.resource.resource)
      if (scope !== undefined) url.searchParams.set("scope", scope)
      yield* Effect.logDebug("MCP auth: waiting for the user to authorize", { issuer })
      yield* interaction.openUrl(url.href)
      const redirect = yield* interaction.receiveRedirect.pipe(
        Effect.timeoutOrElse({
          duration: options.interactionTimeout ?? DEFAULT_INTERACTION_TIMEOUT,
          orElse: () =>
            Effect.fail(new AuthorizationRefused({ issuer, error: "timeout", description: "no redirect came back in time" }))
        })
      )
      let answer: URL
      try {
        answer = new URL(redirect)
      } catch {
        return yield* new AuthorizationRefused({ issuer, error: "invalid_redirect", description: "the redirect is not a URL" })
      }
      const query = answer.searchParams
      if (query.get("state") !== state) return yield* new StateMismatch({ issuer, parameter: "state" })
      // RFC 9207: when the server sends its identity in the redirect, it must be the one we asked.
      const iss = query.get("iss")
      if (
        (iss !== null || server.authorization_response_iss_parameter_supported === true) &&
        iss !== server.issuer
      ) {
        return yield* new StateMismatch({ issuer, parameter: "iss" })
      }
      const error = query.get("error")
      if (error === "access_denied") {
        return yield* new UserDenied({ issuer, description: query.get("error_description") ?? undefined })
      }
      if (error !== null) {
        return yield* new AuthorizationRefused({ issuer, error, description: query.get("error_description") ?? undefined })
      }
      const code = query.get("code")
      if (code === null) {
        return yield* new AuthorizationRefused({ issuer, error: "no_code", description: "the redirect carries no code" })
      }
      const response = yield* TokenEndpoint.requestToken(http, {
        issuer,
        tokenEndpoint: server.token_endpoint,
        client,
        grant: "authorization_code",
        params: {
          code,
          redirect_uri: options.redirectUrl,
          code_verifier: pkce.verifier,
          resource: found.resource.resource
        },
        timeout,
        dpop: dpopFor(found),
        signingKey: options.clientKey,
        addresses: addresses(found)
      })
      return yield* save(found, response, scope)
    })

  const clientCredentials = (found: Discovery.Discovered, scope: string | undefined) =>
    Effect.gen(function*() {
      const client = yield* identity(found, scope)
      const response = yield* TokenEndpoint.requestToken(http, {
        issuer: found.server.issuer,
        tokenEndpoint: found.server.token_endpoint,
        client,
        grant: "client_credentials",
        params: { resource: found.resource.resource, ...(scope === undefined ? {} : { scope }) },
        timeout,
        dpop: dpopFor(found),
        signingKey: options.clientKey,
        addresses: addresses(found)
      })
      return yield* save(found, response, scope)
    })

  /** RFC 7523 §2.1: the assertion is the grant; a client is named only when one is configured. */
  const assertionGrant = (found: Discovery.Discovered, scope: string | undefined, assertion: string) =>
    Effect.gen(function*() {
      const client = options.clientId === undefined ? undefined : yield* identity(found, scope)
      const response = yield* TokenEndpoint.requestToken(http, {
        issuer: found.server.issuer,
        tokenEndpoint: found.server.token_endpoint,
        client,
        grant: "jwt_bearer",
        params: { assertion, resource: found.resource.resource, ...(scope === undefined ? {} : { scope }) },
        timeout,
        dpop: dpopFor(found),
        signingKey: options.clientKey,
        addresses: addresses(found)
      })
      return yield* save(found, response, scope)
    })

  const jwtBearer = (found: Discovery.Discovered, scope: string | undefined) =>
    Effect.gen(function*() {
      if (options.jwtBearer === undefined) {
        return yield* new InteractionRequired({ serverUrl: found.serverUrl, reason: "the jwt_bearer grant needs the jwtBearer option" })
      }
      return yield* assertionGrant(found, scope, yield* JwtBearer.read(options.jwtBearer))
    })

  const identityAssertion = (found: Discovery.Discovered, scope: string | undefined) =>
    Effect.gen(function*() {
      if (options.enterprise === undefined) {
        return yield* new InteractionRequired({
          serverUrl: found.serverUrl,
          reason: "the identity_assertion grant needs the enterprise option"
        })
      }
      const idJag = yield* IdentityAssertion.exchange(http, options.enterprise, {
        audience: found.server.issuer,
        resource: found.resource.resource,
        scope,
        timeout
      })
      return yield* assertionGrant(found, scope, idJag)
    })

  const grantFor = (found: Discovery.Discovered, scope: string | undefined) => {
    switch (grant) {
      case "client_credentials":
        return clientCredentials(found, scope)
      case "jwt_bearer":
        return jwtBearer(found, scope)
      case "identity_assertion":
        return identityAssertion(found, scope)
      default:
        return authorizationCode(found, scope)
    }
  }

  const obtain = (found: Discovery.Discovered, scope: string | undefined) =>
    Effect.andThen(bind(found), grantFor(found, scope)).pipe(authSpan("auth sign-in", found, grant))

  /**
   * Refreshes `tokens` with the store locked, so that of the processes
   * sharing a store only one uses a refresh token: the others find the
   * tokens replaced and use the new ones without asking the token endpoint.
   * A refused refresh token is removed only while it is still the one
   * stored; tokens stored since by a refresh that won are used instead.
   * Undefined when the tokens were removed meanwhile: sign in again.
   */
  const refresh = (
    found: Discovery.Discovered,
    tokens: TokenStore.Tokens
  ): Effect.Effect<TokenStore.Tokens | undefined, AuthError> =>
    Effect.gen(function*() {
      yield* bind(found)
      const client = yield* identity(found, tokens.scope)
      const key = TokenStore.bindingKey(tokens.issuer, tokens.resource)
      const replaced = (latest: TokenStore.Tokens | undefined) =>
        latest === undefined || latest.accessToken !== tokens.accessToken || latest.refreshToken !== tokens.refreshToken
      type Outcome = { readonly tokens: TokenStore.Tokens | undefined } | { readonly refused: InvalidGrant }
      const outcome = yield* locked((contents) =>
        Effect.gen(function*() {
          const latest = contents.tokens[key]
          if (replaced(latest)) return [{ tokens: usable(latest) } as Outcome, undefined] as const
          yield* Effect.logDebug("MCP auth: refreshing the access token", { issuer: tokens.issuer })
          const answer = yield* TokenEndpoint.requestToken(http, {
            issuer: tokens.issuer,
            tokenEndpoint: found.server.token_endpoint,
            client,
            grant: "refresh_token",
            params: { refresh_token: tokens.refreshToken!, resource: tokens.resource },
            timeout,
            // A bound token's refresh token is bound too (RFC 9449 §5): its refresh needs a proof.
            dpop: tokens.tokenType === "DPoP" ? signer : dpopFor(found),
            signingKey: options.clientKey,
            addresses: addresses(found)
          }).pipe(
            Effect.flatMap((response) => tokensOf(found, response, tokens)),
            Effect.map((fresh): Outcome => ({ tokens: fresh })),
            Effect.catchTag("InvalidGrant", (refused) => Effect.succeed<Outcome>({ refused }))
          )
          const change = "refused" in answer
            ? (c: TokenStore.Contents) => TokenStore.withoutRefused(c, tokens.issuer, tokens.resource, tokens.refreshToken!)
            : (c: TokenStore.Contents) => TokenStore.withTokens(c, answer.tokens!)
          return [answer, change] as const
        })
      )
      if (!("refused" in outcome)) return outcome.tokens
      // A store locked only within this process: another process may have refreshed first, and stored its tokens.
      const after = (yield* store.load).tokens[key]
      if (after !== undefined && replaced(after) && usable(after) !== undefined) return after
      return yield* outcome.refused
    }).pipe(authSpan("auth token refresh", found, "refresh_token"))

  const expired = (tokens: TokenStore.Tokens, now: number) =>
    tokens.expiresAt !== undefined && tokens.expiresAt - marginMs <= now

  // ---------------------------------------------------------------------------
  // The service

  const authorization = (serverUrl: string) =>
    Effect.gen(function*() {
      const tokens = yield* current(serverUrl)
      if (tokens === undefined) return undefined
      if (tokens.refreshToken === undefined || !expired(tokens, yield* Clock.currentTimeMillis)) return tokens
      return yield* lockOf(serverUrl).withPermit(Effect.gen(function*() {
        // Whoever held the lock before may have refreshed already.
        const latest = yield* current(serverUrl)
        if (latest === undefined) return undefined
        if (latest.refreshToken === undefined || !expired(latest, yield* Clock.currentTimeMillis)) return latest
        const found = yield* discover(serverUrl, {})
        if (found.server.issuer !== latest.issuer) return undefined
        return yield* refresh(found, latest)
      }))
    })

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
