/**
 * Where tokens and client registrations are kept between requests (and,
 * with a file store, between runs). Tokens are kept per authorization
 * server and resource: a token is only ever looked up, and so only ever
 * sent, for the issuer and resource it was issued for.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Semaphore from "effect/Semaphore"
import type { TokenStoreFailed } from "../../AuthError.ts"

/**
 * Tokens issued by `issuer` for `resource`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tokens {
  readonly issuer: string
  readonly resource: string
  readonly accessToken: string
  /** `Bearer`, or `DPoP` for a token bound to the provider's DPoP key. */
  readonly tokenType: string
  /** For a `DPoP` token: the thumbprint of the key it is bound to (a token of another key is not used). */
  readonly jkt?: string | undefined
  readonly refreshToken?: string | undefined
  /** When the access token expires, in epoch milliseconds; unknown when absent. */
  readonly expiresAt?: number | undefined
  /** The scopes granted (or, when the server did not say, requested), space-separated. */
  readonly scope?: string | undefined
}

/**
 * How the client authenticates at the token endpoint.
 *
 * @since 0.1.0
 * @category models
 */
export type TokenEndpointAuth = "none" | "client_secret_basic" | "client_secret_post" | "private_key_jwt"

/**
 * A client identity at one authorization server (registered dynamically or configured).
 *
 * @since 0.1.0
 * @category models
 */
export interface RegisteredClient {
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret?: string | undefined
  readonly authMethod: TokenEndpointAuth
  /** The redirect URI it was registered with, when registered dynamically. */
  readonly redirectUri?: string | undefined
}

/**
 * Everything a store holds; the file store's contents.
 *
 * @since 0.1.0
 * @category models
 */
export interface Contents {
  readonly version: 1
  /** Keyed by `bindingKey(issuer, resource)`. */
  readonly tokens: Readonly<Record<string, Tokens>>
  /** Keyed by issuer. */
  readonly clients: Readonly<Record<string, RegisteredClient>>
  /**
   * The authorization server each configured credential is bound to, keyed
   * by the credential (its client id, or the grant that carries it): it is
   * never sent to another. Absent in stores written before bindings were kept.
   */
  readonly issuers?: Readonly<Record<string, string>> | undefined
}

/**
 * The store's operations.
 *
 * @since 0.1.0
 * @category models
 */
export interface TokenStoreShape {
  readonly load: Effect.Effect<Contents, TokenStoreFailed>
  /** Applies `f` to the contents and keeps the result, one update at a time. */
  readonly update: (f: (contents: Contents) => Contents) => Effect.Effect<void, TokenStoreFailed>
  /**
   * Optional. Runs `f` on the contents while holding the lock `update`
   * takes, and keeps the contents it gives back (nothing is written when it
   * gives back the same object, or fails). The provider refreshes tokens
   * inside it, so a refresh is never raced by another one: a store shared
   * by several processes locks across them. Without it the provider
   * serializes refreshes within its own process only.
   */
  readonly modify?: <A, E>(
    f: (contents: Contents) => Effect.Effect<readonly [A, Contents], E>
  ) => Effect.Effect<A, E | TokenStoreFailed>
}

/**
 * The token store service.
 *
 * @since 0.1.0
 * @category services
 */
export class TokenStore extends Context.Service<TokenStore, TokenStoreShape>()(
  "effect-mcp-transport/client/auth/TokenStore"
) {}

/**
 * The key of tokens issued by `issuer` for `resource`.
 *
 * @since 0.1.0
 * @category utils
 */
export const bindingKey = (issuer: string, resource: string): string => `${issuer} ${resource}`

/**
 * A store with nothing in it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const empty: Contents = { version: 1, tokens: {}, clients: {} }

/**
 * A store that lives as long as the process: the default.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory: Effect.Effect<TokenStoreShape> = Effect.sync(() => {
  let contents = empty
  const lock = Semaphore.makeUnsafe(1)
  return {
    load: Effect.sync(() => contents),
    update: (f) => lock.withPermit(Effect.sync(() => void (contents = f(contents)))),
    modify: (f) =>
      lock.withPermit(Effect.suspend(() => f(contents)).pipe(Effect.map(([a, next]) => {
        contents = next
        return a
      })))
  }
})

/**
 * Provides an in-memory `TokenStore`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<TokenStore> = Layer.effect(TokenStore, makeMemory)

/**
 * Contents with `tokens` set.
 *
 * @since 0.1.0
 * @category utils
 */
export const withTokens = (contents: Contents, tokens: Tokens): Contents => ({
  ...contents,
  tokens: { ...contents.tokens, [bindingKey(tokens.issuer, tokens.resource)]: tokens }
})

/**
 * Contents without the tokens of `issuer` for `resource`.
 *
 * @since 0.1.0
 * @category utils
 */
export const withoutTokens = (contents: Contents, issuer: string, resource: string): Contents => {
  const tokens = { ...contents.tokens }
  delete tokens[bindingKey(issuer, resource)]
  return { ...contents, tokens }
}

/**
 * Contents without the tokens of `issuer` for `resource` if, and only if,
 * their refresh token is still `refreshToken`: a refusal deletes what was
 * refused, never tokens stored since by a refresh that won the race.
 *
 * @since 0.1.0
 * @category utils
 */
export const withoutRefused = (contents: Contents, issuer: string, resource: string, refreshToken: string): Contents =>
  contents.tokens[bindingKey(issuer, resource)]?.refreshToken === refreshToken
    ? withoutTokens(contents, issuer, resource)
    : contents

/**
 * Contents with `credential` bound to the authorization server `issuer`.
 *
 * @since 0.1.0
 * @category utils
 */
export const withIssuer = (contents: Contents, credential: string, issuer: string): Contents => ({
  ...contents,
  issuers: { ...contents.issuers, [credential]: issuer }
})

/**
 * Contents with `client` registered for its issuer.
 *
 * @since 0.1.0
 * @category utils
 */
export const withClient = (contents: Contents, client: RegisteredClient): Contents => ({
  ...contents,
  clients: { ...contents.clients, [client.issuer]: client }
})

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

const optional = (value: unknown, type: string): boolean => value === undefined || typeof value === type

const isTokens = (value: unknown): value is Tokens =>
  isRecord(value) && typeof value.issuer === "string" && typeof value.resource === "string" &&
  typeof value.accessToken === "string" && typeof value.tokenType === "string" &&
  optional(value.refreshToken, "string") && optional(value.expiresAt, "number") && optional(value.scope, "string") &&
  optional(value.jkt, "string")

const isClient = (value: unknown): value is RegisteredClient =>
  isRecord(value) && typeof value.issuer === "string" && typeof value.clientId === "string" &&
  optional(value.clientSecret, "string") && optional(value.redirectUri, "string") &&
  (value.authMethod === "none" || value.authMethod === "client_secret_basic" ||
    value.authMethod === "client_secret_post")

/**
 * Checks that decoded JSON is store contents; `undefined` when it is not.
 *
 * @since 0.1.0
 * @category utils
 */
export const decode = (value: unknown): Contents | undefined => {
  if (!isRecord(value) || value.version !== 1 || !isRecord(value.tokens) || !isRecord(value.clients)) return undefined
  if (!Object.values(value.tokens).every(isTokens)) return undefined
  if (!Object.values(value.clients).every(isClient)) return undefined
  if (value.issuers !== undefined && !(isRecord(value.issuers) && Object.values(value.issuers).every((v) => typeof v === "string"))) {
    return undefined
  }
  return value as unknown as Contents
}
