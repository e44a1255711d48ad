/**
 * The port between the HTTP server transport's authorization and whoever
 * vouches for access tokens: a `TokenVerifier` takes a bearer token and the
 * server's own resource URL, and names who the token speaks for, or says
 * why it does not count. `JwtVerifier` checks signed JWTs against the
 * authorization server's published keys; `IntrospectionVerifier` asks the
 * authorization server (RFC 7662).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"

/**
 * What a verified token says: whose it is, what it allows, who obtained it.
 * Never the token itself: a server passes no client's token on.
 *
 * @since 0.1.0
 * @category models
 */
export interface AuthInfo {
  /** The resource owner (`sub`); undefined for a token a client obtained for itself with no user. */
  readonly subject: string | undefined
  /** The granted scopes (`scope`, or `scp`). */
  readonly scopes: ReadonlyArray<string>
  /** The OAuth client the token was issued to (`client_id`, or `azp`). */
  readonly clientId: string | undefined
  /** The authorization server that issued it (`iss`). */
  readonly issuer: string | undefined
  /** When it expires, in seconds since the epoch (`exp`). */
  readonly expiresAt: number | undefined
  /** Every claim (JWT) or introspection member, for what the fields above leave out. */
  readonly claims: Readonly<Record<string, unknown>>
}

/**
 * The token is not good for this server: malformed, badly signed, expired,
 * for another audience or issuer, or inactive. Answered 401 with
 * `error="invalid_token"`.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidToken extends Data.TaggedError("InvalidToken")<{
  /** Why, for the server's log and the challenge's `error_description`. */
  readonly reason: string
}> {}

/**
 * The token could not be checked right now (the key set or the
 * introspection endpoint did not answer usably). Answered 503: the token
 * may well be good.
 *
 * @since 0.1.0
 * @category errors
 */
export class VerifierUnavailable extends Data.TaggedError("VerifierUnavailable")<{
  readonly reason: string
  readonly cause?: unknown
}> {}

/**
 * Checks a bearer token for the resource `resource` (the canonical URL of
 * the MCP endpoint, which the token's audience must name).
 *
 * @since 0.1.0
 * @category models
 */
export interface TokenVerifierShape {
  readonly verify: (token: string, resource: string) => Effect.Effect<AuthInfo, InvalidToken | VerifierUnavailable>
}

/**
 * The token verifier as a service, for applications that build it in a
 * layer (`JwtVerifier.layer`, `IntrospectionVerifier.layer`).
 *
 * @since 0.1.0
 * @category services
 */
export class TokenVerifier extends Context.Service<TokenVerifier, TokenVerifierShape>()(
  "effect-mcp-transport/TokenVerifier"
) {}
