/**
 * The `Bearer` (RFC 6750 §3) or `DPoP` (RFC 9449 §7.1) challenge of a
 * `WWW-Authenticate` header, with RFC 9728's `resource_metadata`: what a 401
 * or 403 tells the client about where to discover authorization, which
 * scopes it wants, and whether it wants a DPoP nonce (`use_dpop_nonce`).
 */

/**
 * The parameters of a `Bearer` challenge that the client acts on.
 *
 * @since 0.1.0
 * @category models
 */
export interface BearerChallenge {
  /** The URL of the protected resource metadata (RFC 9728 §5.1). */
  readonly resourceMetadata?: string | undefined
  /** Space-separated scopes the request needs. */
  readonly scope?: string | undefined
  /** `invalid_token`, `insufficient_scope`… */
  readonly error?: string | undefined
  readonly errorDescription?: string | undefined
  /** The server offers the `DPoP` scheme (RFC 9449 §7.1) among its challenges. */
  readonly dpop?: boolean | undefined
}

/**
 * Reads the first `Bearer` or `DPoP` challenge out of a `WWW-Authenticate`
 * value (which may hold several challenges); an empty challenge when there
 * is none.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parse = (header: string | undefined): BearerChallenge => {
  if (header === undefined) return {}
  const params = bearerParams(header)
  return {
    resourceMetadata: params.get("resource_metadata"),
    scope: params.get("scope"),
    error: params.get("error"),
    errorDescription: params.get("error_description"),
    dpop: DPOP_SCHEME.test(header) ? true : undefined
  }
}

// A challenge starts the header or follows a comma; a scheme name is not followed by "=" as a parameter's is.
const DPOP_SCHEME = /(?:^|,)\s*dpop(?:\s+[^=\s]|\s*(?:,|$))/i

const TOKEN = /[!#$%&'*+\-.^_`|~0-9A-Za-z]+/y
const SPACE = /[\s,]*/y

/** The auth-params of the first `Bearer` or `DPoP` challenge, names lower-cased. */
const bearerParams = (header: string): Map<string, string> => {
  const params = new Map<string, string>()
  let i = 0
  let inBearer = false
  const read = (pattern: RegExp): string | undefined => {
    pattern.lastIndex = i
    const m = pattern.exec(header)
    if (m === null) return undefined
    i = pattern.lastIndex
    return m[0]
  }
  while (i < header.length) {
    read(SPACE)
    const name = read(TOKEN)
    if (name === undefined) {
      i++
      continue
    }
    const afterName = i
    read(/[ \t]*/y)
    if (header[i] !== "=") {
      // A new scheme starts: only the first Bearer or DPoP one is read.
      if (inBearer) return params
      inBearer = name.toLowerCase() === "bearer" || name.toLowerCase() === "dpop"
      i = afterName
      continue
    }
    i++
    read(/[ \t]*/y)
    let value: string
    if (header[i] === "\"") {
      i++
      value = ""
      while (i < header.length && header[i] !== "\"") {
        if (header[i] === "\\" && i + 1 < header.length) i++
        value += header[i]
        i++
      }
      i++
    } else {
      value = read(/[^\s,]*/y) ?? ""
    }
    if (inBearer && !params.has(name.toLowerCase())) params.set(name.toLowerCase(), value)
  }
  return params
}
