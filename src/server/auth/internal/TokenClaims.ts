/**
 * Claim checks both token verifiers share: time bounds with leeway, the
 * audience naming this server, and reading scopes and the client id from
 * the spellings authorization servers use.
 */
import type { AuthInfo } from "../TokenVerifier.ts"

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v)

/**
 * Why the token's time claims refuse it at `nowSeconds`, or undefined.
 * `exp` is required when `requireExp`; `nbf` and `iat` only bind when present.
 */
export const timeProblem = (
  claims: Readonly<Record<string, unknown>>,
  nowSeconds: number,
  leewaySeconds: number,
  requireExp: boolean
): string | undefined => {
  const { exp, iat, nbf } = claims
  if (exp === undefined) {
    if (requireExp) return "token has no expiry (exp)"
  } else if (!isNumber(exp)) return "exp is not a number"
  else if (nowSeconds - leewaySeconds >= exp) return "token expired"
  if (nbf !== undefined && (!isNumber(nbf) || nbf > nowSeconds + leewaySeconds)) return "token not yet valid (nbf)"
  if (iat !== undefined && (!isNumber(iat) || iat > nowSeconds + leewaySeconds)) return "token issued in the future (iat)"
  return undefined
}

/** Whether the `aud` claim (a string or a list) names one of `audiences`. */
export const audienceMatches = (aud: unknown, audiences: ReadonlyArray<string>): boolean => {
  if (typeof aud === "string") return audiences.includes(aud)
  return Array.isArray(aud) && aud.some((a) => typeof a === "string" && audiences.includes(a))
}

const scopesOf = (claims: Readonly<Record<string, unknown>>): ReadonlyArray<string> => {
  const raw = claims["scope"] ?? claims["scp"]
  if (typeof raw === "string") return raw.split(" ").filter((s) => s !== "")
  if (Array.isArray(raw)) return raw.filter((s): s is string => typeof s === "string")
  return []
}

const stringOf = (v: unknown): string | undefined => typeof v === "string" && v !== "" ? v : undefined

export const authInfo = (claims: Readonly<Record<string, unknown>>): AuthInfo => ({
  subject: stringOf(claims["sub"]),
  scopes: scopesOf(claims),
  clientId: stringOf(claims["client_id"]) ?? stringOf(claims["azp"]),
  issuer: stringOf(claims["iss"]),
  expiresAt: isNumber(claims["exp"]) ? claims["exp"] : undefined,
  claims
})
