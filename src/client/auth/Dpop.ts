/**
 * DPoP (RFC 9449): proof-of-possession for access tokens. A signer holds one
 * ES256 key pair for the provider's lifetime and makes a fresh proof for
 * each request (`htm`, `htu` without query or fragment, `iat`, a unique
 * `jti`, `ath` when a token goes with it, and the latest nonce the server's
 * origin handed out). Tokens bound to the key (`cnf.jkt`) are useless
 * without it: the key never leaves the process, and no proof is ever logged.
 */
import { createHash, generateKeyPairSync, type KeyObject } from "node:crypto"
import * as JwtSign from "../internal/JwtSign.ts"

/**
 * Makes proofs with one key pair and keeps the servers' nonces.
 *
 * @since 0.1.0
 * @category models
 */
export interface Signer {
  /** The RFC 7638 SHA-256 thumbprint of the public key: the `cnf.jkt` of tokens bound to it. */
  readonly thumbprint: string
  /** A fresh proof for `method` `url`; with `accessToken`, bound to it by `ath`. */
  readonly proof: (method: string, url: string, accessToken?: string) => string
  /** Keeps `nonce` as the latest one of `url`'s origin. */
  readonly remember: (url: string, nonce: string) => void
  /** The latest nonce of `url`'s origin, if any. */
  readonly nonceFor: (url: string) => string | undefined
}

/**
 * The `htu` of a request URL: without query and fragment (RFC 9449 §4.2).
 *
 * @since 0.1.0
 * @category proofs
 */
export const htu = (url: string): string => {
  const parsed = new URL(url)
  return `${parsed.origin}${parsed.pathname}`
}

/**
 * The `ath` of an access token: base64url(SHA-256(token)) (RFC 9449 §4.2).
 *
 * @since 0.1.0
 * @category proofs
 */
export const ath = (accessToken: string): string => createHash("sha256").update(accessToken, "ascii").digest("base64url")

const originOf = (url: string): string => {
  try {
    return new URL(url).origin
  } catch {
    return url
  }
}

/**
 * A signer with a fresh ES256 key pair (or the EC P-256 `privateKey` given).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (privateKey?: KeyObject): Signer => {
  const key = privateKey ?? generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey
  const { crv, kty, x, y } = key.export({ format: "jwk" })
  const jwk = { crv, kty, x, y }
  // RFC 7638: the required members, in lexicographic order, no whitespace.
  const thumbprint = createHash("sha256").update(JSON.stringify({ crv, kty, x, y })).digest("base64url")
  const nonces = new Map<string, string>()
  const nonceFor = (url: string) => nonces.get(originOf(url))
  return {
    thumbprint,
    nonceFor,
    remember: (url, nonce) => {
      nonces.set(originOf(url), nonce)
    },
    proof: (method, url, accessToken) => {
      const nonce = nonceFor(url)
      return JwtSign.sign("ES256", key, { typ: "dpop+jwt", jwk }, {
        jti: JwtSign.jti(),
        htm: method.toUpperCase(),
        htu: htu(url),
        iat: Math.floor(Date.now() / 1000),
        ...(accessToken === undefined ? {} : { ath: ath(accessToken) }),
        ...(nonce === undefined ? {} : { nonce })
      })
    }
  }
}
