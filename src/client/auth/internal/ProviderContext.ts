/**
 * What every part of an `OAuthProvider` shares: its options, the HTTP
 * client and token store it was made with, the DPoP key it holds for its
 * life, and the checks made before anything is sent to an authorization
 * server (the issuer a credential is bound to, the addresses allowed).
 */
import * as Effect from "effect/Effect"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as HttpClient from "effect/http/HttpClient"
import type { IssuerMismatch, TokenStoreFailed } from "../../../AuthError.ts"
import * as McpSpan from "../../../internal/McpSpan.ts"
import type * as Discovery from "../Discovery.ts"
import * as Dpop from "../Dpop.ts"
import * as IssuerBinding from "../IssuerBinding.ts"
import type { Options } from "./ProviderOptions.ts"
import type * as TokenEndpoint from "../TokenEndpoint.ts"
import * as TokenStore from "../TokenStore.ts"

const DEFAULT_TIMEOUT = Duration.seconds(30)

/** The grants a provider can sign in with. */
export type Grant = "authorization_code" | "client_credentials" | "jwt_bearer" | "identity_assertion"

/** One provider's shared parts. */
export interface ProviderContext {
  readonly options: Options
  readonly http: HttpClient.HttpClient
  readonly store: TokenStore.TokenStoreShape
  /** Bound on each request to an authorization server. */
  readonly timeout: Duration.Input
  /** The grant sign-ins use: the `grant` option, else the one the other options imply. */
  readonly grant: Grant
  /** The provider's one DPoP key: a bound token is only ever used with it. */
  readonly signer: Dpop.Signer
  /** Servers whose challenge offered the DPoP scheme: a server that only knows Bearer would refuse a bound token. */
  readonly offersDpop: Set<string>
  /** The signer for requests about `found`'s tokens, when they are to be DPoP-bound. */
  readonly dpopFor: (found: Discovery.Discovered) => Dpop.Signer | undefined
  /** Where `found`'s metadata may send requests (`allowPrivateNetworks`). */
  readonly addresses: (found: Discovery.Discovered) => TokenEndpoint.AddressGuard
  /** Fails with `IssuerMismatch` when configured credentials belong to another authorization server than `found`'s. */
  readonly bind: (found: Discovery.Discovered) => Effect.Effect<void, IssuerMismatch | TokenStoreFailed>
}

/**
 * The shared parts of a provider: the `HttpClient` in context, the
 * `TokenStore` in context or one in memory, a fresh DPoP key.
 */
export const make = Effect.fnUntraced(function*(options: Options) {
  const http = yield* HttpClient.HttpClient
  const store = Option.getOrUndefined(yield* Effect.serviceOption(TokenStore.TokenStore)) ??
    (yield* TokenStore.makeMemory)
  const grant: Grant = options.grant ??
    (options.enterprise !== undefined
      ? "identity_assertion"
      : options.jwtBearer !== undefined
      ? "jwt_bearer"
      : (options.clientSecret !== undefined || options.clientKey !== undefined) && options.interaction === undefined
      ? "client_credentials"
      : "authorization_code")
  const signer = Dpop.make()
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
  const credential = IssuerBinding.credentialOf(options)
  const context: ProviderContext = {
    options,
    http,
    store,
    timeout: options.timeout ?? DEFAULT_TIMEOUT,
    grant,
    signer,
    offersDpop,
    dpopFor,
    addresses: (found) => ({ serverUrl: found.serverUrl, allowPrivateNetworks: options.allowPrivateNetworks }),
    bind: (found) => IssuerBinding.check(store, credential, options.issuer, found)
  }
  return context
})

/**
 * A sign-in or a refresh in a span of its own (kind INTERNAL), a child of
 * the request that needed it, with the server and the authorization
 * server's issuer. Nothing when tracing is off.
 */
export const authSpan = (name: string, found: Discovery.Discovered, grant: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.withFiber((fiber) =>
    McpSpan.enabled(fiber)
      ? Effect.withSpan(effect, name, {
        kind: "internal",
        attributes: { "mcp.auth.server": found.serverUrl, "mcp.auth.issuer": found.server.issuer, "mcp.auth.grant": grant }
      })
      : effect
  )
