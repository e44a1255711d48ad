/**
 * `private_key_jwt` client authentication (RFC 7523 §2.2, OpenID Connect
 * Core §9): instead of a secret, the client sends a short-lived JWT signed
 * with its private key, `iss` and `sub` its client id, `aud` the
 * authorization server's issuer identifier (RFC 7523bis), a unique `jti`.
 * The key stays in the process; no assertion is ever logged.
 */
import type { KeyObject } from "node:crypto"
import * as Effect from "effect/Effect"
import { AssertionUnavailable } from "../../AuthError.ts"
import * as JwtSign from "../internal/JwtSign.ts"

/**
 * The `client_assertion_type` of a JWT client assertion.
 *
 * @since 0.1.0
 * @category constants
 */
export const ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

/**
 * The key a client signs its assertions with.
 *
 * @since 0.1.0
 * @category models
 */
export interface SigningKey {
  /** A PEM private key (PKCS#8, or SEC1 / PKCS#1) or a `KeyObject`. */
  readonly privateKey: string | KeyObject
  /** `ES256` (EC P-256) or `RS256` (RSA). Default: the one the key's type signs. */
  readonly algorithm?: "ES256" | "RS256" | undefined
  /** The `kid` header, for a server that holds several keys of the client. Default none. */
  readonly keyId?: string | undefined
}

/** How long an assertion is valid: enough for one token request. */
const LIFETIME_SECONDS = 60

/**
 * Signs an assertion for `clientId` at the authorization server `audience`
 * (its issuer identifier); `AssertionUnavailable` when the key cannot sign.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  key: SigningKey,
  clientId: string,
  audience: string
): Effect.Effect<string, AssertionUnavailable> =>
  Effect.suspend(() => {
    const unavailable = (reason: string) => Effect.fail(new AssertionUnavailable({ kind: "client-assertion", reason }))
    const privateKey = JwtSign.privateKey(key.privateKey)
    if (typeof privateKey === "string") return unavailable(privateKey)
    const algorithm = JwtSign.algorithmOf(privateKey, key.algorithm)
    if (algorithm !== "ES256" && algorithm !== "RS256") return unavailable(algorithm)
    const now = Math.floor(Date.now() / 1000)
    return Effect.succeed(JwtSign.sign(algorithm, privateKey, { typ: "JWT", ...(key.keyId === undefined ? {} : { kid: key.keyId }) }, {
      iss: clientId,
      sub: clientId,
      aud: audience,
      jti: JwtSign.jti(),
      iat: now,
      exp: now + LIFETIME_SECONDS
    }))
  })
