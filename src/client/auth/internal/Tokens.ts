/**
 * An `OAuthProvider`'s tokens: which stored set a server's requests use,
 * storing what a grant answered, and refreshing. A refresh runs with the
 * store locked (across processes where the store can lock), so that of the
 * processes sharing a store only one spends a refresh token; the others
 * find the tokens replaced and use the new ones. Also what discovery found
 * per server, since that says which stored set is the server's.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Semaphore from "effect/Semaphore"
import type { AuthError, InvalidGrant, TokenStoreFailed } from "../../../AuthError.ts"
import * as Discovery from "../Discovery.ts"
import * as TokenEndpoint from "../TokenEndpoint.ts"
import * as TokenStore from "../TokenStore.ts"
import type * as WwwAuthenticate from "../WwwAuthenticate.ts"
import type { ClientIdentity } from "./ClientIdentity.ts"
import { authSpan, type ProviderContext } from "./ProviderContext.ts"

const DEFAULT_REFRESH_MARGIN = Duration.seconds(30)

/** The tokens of a provider, and what discovery found for each server. */
export interface Tokens {
  /** What discovery found for the server: kept, unless a challenge names other resource metadata. */
  readonly discover: (serverUrl: string, challenge: WwwAuthenticate.BearerChallenge) => Effect.Effect<Discovery.Discovered, AuthError>
  /** The tokens for the server: those of its discovered issuer and resource, or the one stored set covering it. */
  readonly current: (serverUrl: string) => Effect.Effect<TokenStore.Tokens | undefined, TokenStoreFailed>
  /** Stores the tokens a grant answered (`requestedScope` when the answer names none). */
  readonly save: (
    found: Discovery.Discovered,
    response: TokenEndpoint.TokenResponse,
    requestedScope?: string
  ) => Effect.Effect<TokenStore.Tokens, TokenStoreFailed>
  /** Refreshes `tokens`; undefined when they were removed meanwhile (sign in again). */
  readonly refresh: (found: Discovery.Discovered, tokens: TokenStore.Tokens) => Effect.Effect<TokenStore.Tokens | undefined, AuthError>
  /** Whether `tokens` are within the refresh margin of their expiry at `now`. */
  readonly expired: (tokens: TokenStore.Tokens, now: number) => boolean
}

/** The provider's tokens, kept in its store; `identity` names the client in a refresh. */
export const make = (context: ProviderContext, identity: ClientIdentity): Tokens => {
  const { addresses, bind, dpopFor, http, options, signer, store, timeout } = context
  const limits: Discovery.Limits = {
    maxBytes: options.maxMetadataBytes,
    timeout,
    allowPrivateNetworks: options.allowPrivateNetworks
  }
  const marginMs = Duration.toMillis(Duration.fromInputUnsafe(options.refreshMargin ?? DEFAULT_REFRESH_MARGIN))
  /** Per server: what discovery found. */
  const discovered = new Map<string, Discovery.Discovered>()

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

  return { discover, current, save, refresh, expired }
}
