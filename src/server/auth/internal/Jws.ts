/**
 * JWS compact serialization, as access tokens use it: split and decode a
 * token, turn a JWK into a public key, and check a signature with
 * `node:crypto`. Only asymmetric algorithms exist here: a symmetric one
 * (HS256) would let anyone holding the public key mint tokens, and `none`
 * has no signature at all.
 */
import { constants, createPublicKey, type KeyObject, verify as cryptoVerify } from "node:crypto"

/** A JSON Web Key as a JWKS lists it (only the members read here are named). */
export interface Jwk {
  readonly kty?: unknown
  readonly kid?: unknown
  readonly alg?: unknown
  readonly use?: unknown
  readonly crv?: unknown
  readonly [member: string]: unknown
}

interface Algorithm {
  readonly kty: "RSA" | "EC" | "OKP"
  readonly digest: string | null
  readonly crv?: string
  readonly pss?: boolean
}

/** The algorithms a token may be signed with, and the key each needs. */
export const ALGORITHMS: Readonly<Record<string, Algorithm>> = {
  RS256: { kty: "RSA", digest: "sha256" },
  RS384: { kty: "RSA", digest: "sha384" },
  RS512: { kty: "RSA", digest: "sha512" },
  PS256: { kty: "RSA", digest: "sha256", pss: true },
  PS384: { kty: "RSA", digest: "sha384", pss: true },
  PS512: { kty: "RSA", digest: "sha512", pss: true },
  ES256: { kty: "EC", digest: "sha256", crv: "P-256" },
  ES384: { kty: "EC", digest: "sha384", crv: "P-384" },
  ES512: { kty: "EC", digest: "sha512", crv: "P-521" },
  EdDSA: { kty: "OKP", digest: null }
}

export interface Decoded {
  readonly header: Readonly<Record<string, unknown>>
  readonly claims: Readonly<Record<string, unknown>>
  /** The bytes the signature covers: `header.payload` as sent. */
  readonly signingInput: Buffer
  readonly signature: Buffer
}

const B64URL = /^[A-Za-z0-9_-]*$/

const decodePart = (part: string): Record<string, unknown> | undefined => {
  if (!B64URL.test(part)) return undefined
  try {
    const value: unknown = JSON.parse(Buffer.from(part, "base64url").toString("utf8"))
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? value as Record<string, unknown>
      : undefined
  } catch {
    return undefined
  }
}

/** The token's parts, or the reason it is not a JWS at all. */
export const decode = (token: string): Decoded | string => {
  const parts = token.split(".")
  if (parts.length !== 3) return "not a JWS compact token"
  const header = decodePart(parts[0])
  const claims = decodePart(parts[1])
  if (header === undefined) return "malformed JOSE header"
  if (claims === undefined) return "malformed claims"
  if (!B64URL.test(parts[2])) return "malformed signature"
  return {
    header,
    claims,
    signingInput: Buffer.from(`${parts[0]}.${parts[1]}`, "ascii"),
    signature: Buffer.from(parts[2], "base64url")
  }
}

/**
 * Whether a key may check signatures of `alg`: the key type (and curve)
 * must fit, and a key that names its own algorithm or use must name this
 * one. This is what stops a token from choosing how it is checked.
 */
export const keyFits = (jwk: Jwk, alg: string): boolean => {
  const a = ALGORITHMS[alg]
  if (a === undefined || jwk.kty !== a.kty) return false
  if (a.crv !== undefined && jwk.crv !== a.crv) return false
  if (a.kty === "OKP" && jwk.crv !== "Ed25519" && jwk.crv !== "Ed448") return false
  if (jwk.alg !== undefined && jwk.alg !== alg) return false
  if (jwk.use !== undefined && jwk.use !== "sig") return false
  // A JWK carrying private members is a mistake on the other side; its public half still verifies.
  return true
}

const PUBLIC_MEMBERS: Readonly<Record<string, ReadonlyArray<string>>> = {
  RSA: ["kty", "n", "e"],
  EC: ["kty", "crv", "x", "y"],
  OKP: ["kty", "crv", "x"]
}

/** The public key of a JWK, or undefined when node:crypto cannot read it. */
export const publicKey = (jwk: Jwk): KeyObject | undefined => {
  const members = typeof jwk.kty === "string" ? PUBLIC_MEMBERS[jwk.kty] : undefined
  if (members === undefined) return undefined
  const only: Record<string, unknown> = {}
  for (const m of members) only[m] = jwk[m]
  try {
    const key = createPublicKey({ key: only as never, format: "jwk" })
    return key.type === "public" ? key : undefined
  } catch {
    return undefined
  }
}

/** Whether `signature` over `signingInput` was made by the private half of `key` with `alg`. */
export const verifySignature = (alg: string, key: KeyObject, signingInput: Buffer, signature: Buffer): boolean => {
  const a = ALGORITHMS[alg]
  if (a === undefined) return false
  try {
    switch (a.kty) {
      case "RSA":
        return cryptoVerify(
          a.digest,
          signingInput,
          a.pss === true
            ? { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }
            : key,
          signature
        )
      case "EC":
        // JWS carries r || s, not the DER sequence node:crypto expects by default.
        return cryptoVerify(a.digest, signingInput, { key, dsaEncoding: "ieee-p1363" }, signature)
      case "OKP":
        return cryptoVerify(null, signingInput, key, signature)
    }
  } catch {
    return false
  }
}
