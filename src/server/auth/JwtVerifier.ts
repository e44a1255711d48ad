/**
 * A `TokenVerifier` for JWT access tokens (RFC 9068): the signature is
 * checked against the issuer's JSON Web Key Set, fetched from `jwksUri` and
 * cached, then the claims: `iss` must be the issuer, `aud` must name this
 * server's resource URL (a token minted for another server is refused),
 * `exp` must lie ahead and `nbf`/`iat` not in the future, each with a small
 * leeway for clock skew.
 *
 * Only asymmetric algorithms are accepted, and a key is used only for the
 * algorithm its type fits: a token naming `none`, or `HS256` in the hope
 * that the public key serves as an HMAC secret, is refused.
 *
 * @since 0.1.0
 */
import type { KeyObject } from "node:crypto"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Semaphore from "effect/Semaphore"
import { fetchJson } from "./internal/FetchJson.ts"
import * as Jws from "./internal/Jws.ts"
import * as TokenClaims from "./internal/TokenClaims.ts"
import { type AuthInfo, InvalidToken, TokenVerifier, type TokenVerifierShape, VerifierUnavailable } from "./TokenVerifier.ts"

/**
 * Options of `JwtVerifier.make`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The issuer identifier the `iss` claim must equal exactly. Required. */
  readonly issuer: string
  /** Where the issuer publishes its JSON Web Key Set. Required. */
  readonly jwksUri: string
  /**
   * The audiences a token may name. Default: the resource URL the transport
   * verifies for (the MCP endpoint's canonical URL).
   */
  readonly audience?: string | ReadonlyArray<string> | undefined
  /**
   * Signature algorithms accepted. Default: RS256/384/512, PS256/384/512,
   * ES256/384/512 and EdDSA. Symmetric algorithms and `none` are never accepted.
   */
  readonly algorithms?: ReadonlyArray<string> | undefined
  /** Clock skew allowed on `exp`, `nbf` and `iat`. Default 30 seconds. */
  readonly clockTolerance?: Duration.Input | undefined
  /** How long a fetched key set is used before it is fetched again. Default 10 minutes. */
  readonly cacheTtl?: Duration.Input | undefined
  /**
   * A token whose `kid` is not in the cached set makes the set be fetched
   * again (the issuer may have rotated keys), at most once per this
   * interval, so unknown key ids cannot make the server hammer the issuer.
   * Default 30 seconds.
   */
  readonly refreshCooldown?: Duration.Input | undefined
  /** Keys kept from a key set; the rest are ignored. Default 32. */
  readonly maxKeys?: number | undefined
  /** Deadline for fetching the key set. Default 5 seconds. */
  readonly fetchTimeout?: Duration.Input | undefined
}

/**
 * Every algorithm this verifier knows; all asymmetric.
 *
 * @since 0.1.0
 * @category constants
 */
export const supportedAlgorithms: ReadonlyArray<string> = Object.keys(Jws.ALGORITHMS)

interface CachedKey {
  readonly jwk: Jws.Jwk
  readonly key: KeyObject
}

const ms = (input: Duration.Input | undefined, fallback: Duration.Input) =>
  Duration.toMillis(Duration.fromInputUnsafe(input ?? fallback))

/**
 * A JWT verifier. The key set is fetched on first use, again after
 * `cacheTtl`, and on an unknown `kid` (within `refreshCooldown`).
 *
 * @example
 * ```ts
 * import * as JwtVerifier from "effect-mcp-transport/server/auth/JwtVerifier"
 *
 * const verifier = JwtVerifier.make({
 *   issuer: "https://auth.example.com",
 *   jwksUri: "https://auth.example.com/.well-known/jwks.json"
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): TokenVerifierShape => {
  const algorithms = new Set((options.algorithms ?? supportedAlgorithms).filter((a) => a in Jws.ALGORITHMS))
  const leewaySeconds = ms(options.clockTolerance, "30 seconds") / 1000
  const ttlMs = ms(options.cacheTtl, "10 minutes")
  const cooldownMs = ms(options.refreshCooldown, "30 seconds")
  const timeoutMs = ms(options.fetchTimeout, "5 seconds")
  const maxKeys = options.maxKeys ?? 32
  const audiences = options.audience === undefined
    ? undefined
    : typeof options.audience === "string"
    ? [options.audience]
    : options.audience

  const loading = Semaphore.makeUnsafe(1)

  const load = fetchJson(options.jwksUri, { headers: { accept: "application/json" } }, timeoutMs).pipe(
    Effect.flatMap((doc) => {
      const list = (doc as { keys?: unknown } | null)?.keys
      if (!Array.isArray(list)) {
        return Effect.fail(new VerifierUnavailable({ reason: `${options.jwksUri} is not a JSON Web Key Set` }))
      }
      const usable: Array<CachedKey> = []
      for (const jwk of list as ReadonlyArray<Jws.Jwk>) {
        if (usable.length >= maxKeys) break
        if (typeof jwk !== "object" || jwk === null) continue
        const key = Jws.publicKey(jwk)
        if (key !== undefined) usable.push({ jwk, key })
      }
      return Effect.succeed(usable)
    })
  )

  const cache: KeyCache = {
    keys: undefined,
    fetchedAt: 0,
    lastForcedAt: Number.NEGATIVE_INFINITY,
    load,
    ttlMs,
    cooldownMs,
    keySet: (force) => loading.withPermits(1)(currentKeys(cache, force))
  }
  const checks: Checks = { issuer: options.issuer, algorithms, audiences, leewaySeconds, cache }

  return { verify: (token, resource) => verify(checks, token, resource) }
}

/** The issuer's key set as last fetched, and when. */
interface KeyCache {
  keys: ReadonlyArray<CachedKey> | undefined
  fetchedAt: number
  lastForcedAt: number
  readonly load: Effect.Effect<ReadonlyArray<CachedKey>, VerifierUnavailable>
  readonly ttlMs: number
  readonly cooldownMs: number
  /**
   * The key set, fetched when missing or stale, or (`force`) when a token
   * names a key it lacks; `fresh` when this call fetched it. One fetch at a time.
   */
  readonly keySet: (force: boolean) => Effect.Effect<{ readonly keys: ReadonlyArray<CachedKey>; readonly fresh: boolean }, VerifierUnavailable>
}

/** What a token is checked against. */
interface Checks {
  readonly issuer: string
  readonly algorithms: ReadonlySet<string>
  readonly audiences: ReadonlyArray<string> | undefined
  readonly leewaySeconds: number
  readonly cache: KeyCache
}

// One generator function for each step, not one per request (docs/design.md, "Per-request code and the old generation").

const currentKeys = Effect.fnUntraced(function*(
  cache: KeyCache,
  force: boolean
): Effect.fn.Return<{ readonly keys: ReadonlyArray<CachedKey>; readonly fresh: boolean }, VerifierUnavailable> {
  const now = yield* Clock.currentTimeMillis
  const stale = cache.keys === undefined || now - cache.fetchedAt >= cache.ttlMs
  if (!stale && !(force && now - cache.lastForcedAt >= cache.cooldownMs)) return { keys: cache.keys!, fresh: false }
  if (!stale) cache.lastForcedAt = now
  const loaded = yield* Effect.result(cache.load)
  if (loaded._tag === "Failure") {
    // A stale set still verifies while the issuer is unreachable.
    if (cache.keys !== undefined) return { keys: cache.keys, fresh: false }
    return yield* Effect.fail(loaded.failure)
  }
  cache.keys = loaded.success
  cache.fetchedAt = now
  return { keys: cache.keys, fresh: true }
})

const candidates = (set: ReadonlyArray<CachedKey>, alg: string, kid: string | undefined) =>
  set.filter((k) => (kid === undefined || k.jwk.kid === kid) && Jws.keyFits(k.jwk, alg))

const verify = Effect.fnUntraced(function*(
  checks: Checks,
  token: string,
  resource: string
): Effect.fn.Return<AuthInfo, InvalidToken | VerifierUnavailable> {
  const decoded = Jws.decode(token)
  if (typeof decoded === "string") return yield* new InvalidToken({ reason: decoded })
  const { header, claims } = decoded
  const alg = header["alg"]
  if (typeof alg !== "string" || !checks.algorithms.has(alg)) {
    return yield* new InvalidToken({ reason: `signature algorithm ${JSON.stringify(alg)} not accepted` })
  }
  if (header["crit"] !== undefined) return yield* new InvalidToken({ reason: "unsupported critical header" })
  const typ = header["typ"]
  if (typ !== undefined && !(typeof typ === "string" && /^(application\/)?(at\+)?jwt$/i.test(typ))) {
    return yield* new InvalidToken({ reason: `token type ${JSON.stringify(typ)} is not an access token` })
  }
  const kidRaw = header["kid"]
  if (kidRaw !== undefined && typeof kidRaw !== "string") return yield* new InvalidToken({ reason: "malformed kid" })
  const kid = kidRaw

  const first = yield* checks.cache.keySet(false)
  let set = first.keys
  // A set fetched just now is as new as it gets; otherwise the issuer may have rotated keys in.
  if (kid !== undefined && !first.fresh && !set.some((k) => k.jwk.kid === kid)) set = (yield* checks.cache.keySet(true)).keys
  const found = candidates(set, alg, kid)
  if (found.length === 0) return yield* new InvalidToken({ reason: "no key of the issuer verifies this token" })
  if (!found.some((k) => Jws.verifySignature(alg, k.key, decoded.signingInput, decoded.signature))) {
    return yield* new InvalidToken({ reason: "bad signature" })
  }

  if (claims["iss"] !== checks.issuer) return yield* new InvalidToken({ reason: "token from another issuer" })
  if (!TokenClaims.audienceMatches(claims["aud"], checks.audiences ?? [resource])) {
    return yield* new InvalidToken({ reason: "token not issued for this resource (aud)" })
  }
  const now = (yield* Clock.currentTimeMillis) / 1000
  const problem = TokenClaims.timeProblem(claims, now, checks.leewaySeconds, true)
  if (problem !== undefined) return yield* new InvalidToken({ reason: problem })
  return TokenClaims.authInfo(claims)
})

/**
 * `make` as the `TokenVerifier` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<TokenVerifier> =>
  Layer.sync(TokenVerifier)(() => make(options))
