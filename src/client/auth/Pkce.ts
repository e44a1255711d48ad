/**
 * PKCE with S256 (RFC 7636), and the random values of an authorization
 * request, from the platform's Web Crypto (Node and browsers alike).
 */
import * as Effect from "effect/Effect"

const base64url = (bytes: Uint8Array): string => {
  let binary = ""
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
}

/**
 * `bytes` random bytes, base64url-encoded (32 bytes make 43 characters: a
 * valid code verifier, and an unguessable `state`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const randomToken = (bytes = 32): string => base64url(globalThis.crypto.getRandomValues(new Uint8Array(bytes)))

/**
 * The S256 code challenge of `verifier`: base64url(SHA-256(verifier)).
 *
 * @since 0.1.0
 * @category constructors
 */
export const challengeOf = (verifier: string): Effect.Effect<string> =>
  Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))).pipe(
    Effect.map((digest) => base64url(new Uint8Array(digest)))
  )

/**
 * A fresh verifier and its S256 challenge.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<{ readonly verifier: string; readonly challenge: string }> = Effect.suspend(() => {
  const verifier = randomToken()
  return Effect.map(challengeOf(verifier), (challenge) => ({ verifier, challenge }))
})
