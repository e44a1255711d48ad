/**
 * Compact JWS signing with `node:crypto`, for what the OAuth client signs
 * itself: DPoP proofs and `private_key_jwt` client assertions. Only the
 * asymmetric algorithms a client key can have: ES256 (EC P-256) and RS256.
 */
import { createPrivateKey, type KeyObject, randomUUID, sign as cryptoSign } from "node:crypto"

/** The algorithms the client signs with. */
export type Algorithm = "ES256" | "RS256"

const part = (value: unknown): string => Buffer.from(JSON.stringify(value), "utf8").toString("base64url")

/** `header.payload.signature`, signed with `key` (an EC P-256 key for ES256, an RSA key for RS256). */
export const sign = (
  algorithm: Algorithm,
  key: KeyObject,
  header: Readonly<Record<string, unknown>>,
  payload: Readonly<Record<string, unknown>>
): string => {
  const input = `${part({ ...header, alg: algorithm })}.${part(payload)}`
  const signature = algorithm === "ES256"
    // JWS wants the raw r‖s form (RFC 7518 §3.4), not DER.
    ? cryptoSign("sha256", Buffer.from(input), { key, dsaEncoding: "ieee-p1363" })
    : cryptoSign("sha256", Buffer.from(input), key)
  return `${input}.${signature.toString("base64url")}`
}

/** The algorithm a private key signs with, or why it cannot sign with `wanted`. */
export const algorithmOf = (key: KeyObject, wanted?: Algorithm): Algorithm | string => {
  if (key.type !== "private") return "the key is not a private key"
  const type = key.asymmetricKeyType
  const curve = key.asymmetricKeyDetails?.namedCurve
  const own: Algorithm | undefined = type === "ec" && curve === "prime256v1" ? "ES256" : type === "rsa" ? "RS256" : undefined
  if (own === undefined) return `a ${type}${curve === undefined ? "" : ` ${curve}`} key signs neither ES256 nor RS256`
  if (wanted !== undefined && wanted !== own) return `a ${own} key cannot sign ${wanted}`
  return own
}

/** A private key from a PEM text (PKCS#8 or SEC1/PKCS#1) or a key object; a reason when it is none. */
export const privateKey = (key: string | KeyObject): KeyObject | string => {
  if (typeof key !== "string") return key
  try {
    return createPrivateKey(key)
  } catch {
    return "the text is not a PEM private key"
  }
}

/** A fresh `jti`. */
export const jti = (): string => randomUUID()
