/**
 * A `TokenVerifier` that asks the authorization server about each token
 * (OAuth 2.0 Token Introspection, RFC 7662): for opaque tokens, or when
 * revocation must take effect at once. An `active` answer is checked like a
 * JWT's claims (audience naming this server, issuer when configured,
 * expiry) and remembered until the token expires or `cacheTtl` passes,
 * whichever is first; an inactive one is never remembered.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { fetchJson } from "./internal/FetchJson.ts"
import * as TokenClaims from "./internal/TokenClaims.ts"
import { type AuthInfo, InvalidToken, TokenVerifier, type TokenVerifierShape, VerifierUnavailable } from "./TokenVerifier.ts"

/**
 * Options of `IntrospectionVerifier.make`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The introspection endpoint. Required. */
  readonly endpoint: string
  /** This server's client id at the authorization server (HTTP Basic with `clientSecret`). Default: none. */
  readonly clientId?: string | undefined
  /** The secret going with `clientId`. Default: none. */
  readonly clientSecret?: string | undefined
  /** Extra headers on each introspection request (another way to authenticate to it). Default: none. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** When set, the answer's `iss` must equal it. Default: not checked. */
  readonly issuer?: string | undefined
  /** The audiences a token may name. Default: the resource URL the transport verifies for. */
  readonly audience?: string | ReadonlyArray<string> | undefined
  /**
   * Whether an answer without `aud` is refused: without it nothing says the
   * token was issued for this server. Default true.
   */
  readonly requireAudience?: boolean | undefined
  /** Clock skew allowed on `exp`, `nbf` and `iat`. Default 30 seconds. */
  readonly clockTolerance?: Duration.Input | undefined
  /** Longest an active answer is reused (never past the token's `exp`). Default 1 minute; 0 disables the cache. */
  readonly cacheTtl?: Duration.Input | undefined
  /** Answers remembered at once; the oldest go first. Default 1000. */
  readonly maxCacheEntries?: number | undefined
  /** Deadline for one introspection request. Default 5 seconds. */
  readonly fetchTimeout?: Duration.Input | undefined
}

const ms = (input: Duration.Input | undefined, fallback: Duration.Input) =>
  Duration.toMillis(Duration.fromInputUnsafe(input ?? fallback))

const formEncode = (value: string) => encodeURIComponent(value).replace(/%20/g, "+")

/**
 * An introspection verifier with its own answer cache.
 *
 * @example
 * ```ts
 * import * as IntrospectionVerifier from "effect-mcp-transport/server/auth/IntrospectionVerifier"
 *
 * const verifier = IntrospectionVerifier.make({
 *   endpoint: "https://auth.example.com/oauth/introspect",
 *   clientId: "mcp-server",
 *   clientSecret: "from-your-secret-store"
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): TokenVerifierShape => {
  const leewaySeconds = ms(options.clockTolerance, "30 seconds") / 1000
  const ttlMs = ms(options.cacheTtl, "1 minute")
  const maxEntries = options.maxCacheEntries ?? 1000
  const timeoutMs = ms(options.fetchTimeout, "5 seconds")
  const requireAudience = options.requireAudience ?? true
  const audiences = options.audience === undefined
    ? undefined
    : typeof options.audience === "string"
    ? [options.audience]
    : options.audience
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json",
    ...options.headers
  }
  if (options.clientId !== undefined) {
    // RFC 6749 §2.3.1: both parts form-encoded before they are joined.
    const basic = `${formEncode(options.clientId)}:${formEncode(options.clientSecret ?? "")}`
    headers["authorization"] = `Basic ${Buffer.from(basic).toString("base64")}`
  }

  // Keyed by the token's digest: the cache holds no token.
  const cache = new Map<string, CacheEntry>()
  const remember = (key: string, entry: CacheEntry) => {
    cache.delete(key)
    while (cache.size >= maxEntries) {
      const oldest = cache.keys().next()
      if (oldest.done === true) break
      cache.delete(oldest.value)
    }
    cache.set(key, entry)
  }

  const introspect = (token: string) =>
    fetchJson(options.endpoint, {
      method: "POST",
      headers,
      body: `token=${formEncode(token)}&token_type_hint=access_token`
    }, timeoutMs).pipe(
      Effect.flatMap((doc) =>
        typeof doc === "object" && doc !== null && !Array.isArray(doc) && typeof (doc as { active?: unknown }).active === "boolean"
          ? Effect.succeed(doc as Readonly<Record<string, unknown>>)
          : Effect.fail(new VerifierUnavailable({ reason: `${options.endpoint} gave no introspection answer` }))
      )
    )

  const checks: Checks = {
    issuer: options.issuer,
    audiences,
    requireAudience,
    leewaySeconds,
    ttlMs,
    cache,
    remember,
    introspect
  }
  return { verify: (token, resource) => verify(checks, token, resource) }
}

interface CacheEntry {
  readonly info: AuthInfo
  readonly until: number
  readonly resource: string
}

/** What a token is checked against, and where its answers are kept. */
interface Checks {
  readonly issuer: string | undefined
  readonly audiences: ReadonlyArray<string> | undefined
  readonly requireAudience: boolean
  readonly leewaySeconds: number
  readonly ttlMs: number
  readonly cache: Map<string, CacheEntry>
  readonly remember: (key: string, entry: CacheEntry) => void
  readonly introspect: (token: string) => Effect.Effect<Readonly<Record<string, unknown>>, VerifierUnavailable>
}

/** One generator function for every request (docs/design.md, "Per-request code and the old generation"). */
const verify = Effect.fnUntraced(function*(
  checks: Checks,
  token: string,
  resource: string
): Effect.fn.Return<AuthInfo, InvalidToken | VerifierUnavailable> {
  const now = yield* Clock.currentTimeMillis
  const key = createHash("sha256").update(token).digest("base64url")
  const hit = checks.cache.get(key)
  if (hit !== undefined) {
    if (hit.until > now && hit.resource === resource) return hit.info
    checks.cache.delete(key)
  }
  const answer = yield* checks.introspect(token)
  if (answer["active"] !== true) return yield* new InvalidToken({ reason: "token is not active" })
  if (checks.issuer !== undefined && answer["iss"] !== checks.issuer) {
    return yield* new InvalidToken({ reason: "token from another issuer" })
  }
  const aud = answer["aud"]
  if (aud === undefined ? checks.requireAudience : !TokenClaims.audienceMatches(aud, checks.audiences ?? [resource])) {
    return yield* new InvalidToken({ reason: "token not issued for this resource (aud)" })
  }
  const problem = TokenClaims.timeProblem(answer, now / 1000, checks.leewaySeconds, false)
  if (problem !== undefined) return yield* new InvalidToken({ reason: problem })
  const info = TokenClaims.authInfo(answer)
  const until = Math.min(now + checks.ttlMs, info.expiresAt === undefined ? Infinity : info.expiresAt * 1000)
  if (until > now) checks.remember(key, { info, until, resource })
  return info
})

/**
 * `make` as the `TokenVerifier` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<TokenVerifier> =>
  Layer.sync(TokenVerifier)(() => make(options))
