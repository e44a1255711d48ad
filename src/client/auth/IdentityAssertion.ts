/**
 * Enterprise-managed authorization (the MCP extension built on the Identity
 * Assertion Authorization Grant): the user's identity token from the
 * enterprise identity provider is exchanged there (RFC 8693) for an ID-JAG,
 * a JWT naming the MCP authorization server as audience and the MCP server
 * as resource, which the client then presents to the MCP authorization
 * server as a JWT bearer grant (RFC 7523). No browser is involved: the
 * enterprise's policy at the identity provider decides.
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as HttpClient from "effect/http/HttpClient"
import { type AuthError, TokenEndpointFailed } from "../../AuthError.ts"
import * as JwtBearer from "./JwtBearer.ts"
import * as TokenEndpoint from "./TokenEndpoint.ts"

/**
 * The token type of an identity token (RFC 8693 §3).
 *
 * @since 0.1.0
 * @category constants
 */
export const ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"

/**
 * The token type of an Identity Assertion JWT Authorization Grant.
 *
 * @since 0.1.0
 * @category constants
 */
export const ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"

/**
 * The enterprise identity provider, and the user's identity token there.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The identity provider's token endpoint (where the token exchange goes). */
  readonly tokenEndpoint: string
  /** This application's client id at the identity provider. */
  readonly clientId: string
  /** Its secret there, sent with HTTP Basic. Default none (a public client). */
  readonly clientSecret?: string | undefined
  /** The user's OpenID Connect ID token, run once per exchange (e.g. read from the application's sign-in). */
  readonly idToken: JwtBearer.Source
}

/**
 * Exchanges the identity token for an ID-JAG for `audience` (the MCP
 * authorization server's issuer) and `resource` (the MCP server).
 *
 * @since 0.1.0
 * @category requests
 */
export const exchange = (
  http: HttpClient.HttpClient,
  options: Options,
  target: {
    readonly audience: string
    readonly resource: string
    readonly scope?: string | undefined
    readonly timeout: Duration.Input
  }
): Effect.Effect<string, AuthError> =>
  Effect.gen(function*() {
    const idToken = yield* JwtBearer.read(options.idToken, "identity-token")
    const issuer = new URL(options.tokenEndpoint).origin
    const response = yield* TokenEndpoint.requestToken(http, {
      issuer,
      tokenEndpoint: options.tokenEndpoint,
      client: {
        issuer,
        clientId: options.clientId,
        clientSecret: options.clientSecret,
        authMethod: options.clientSecret === undefined ? "none" : "client_secret_basic"
      },
      grant: "token_exchange",
      params: {
        requested_token_type: ID_JAG_TYPE,
        subject_token: idToken,
        subject_token_type: ID_TOKEN_TYPE,
        audience: target.audience,
        resource: target.resource,
        ...(target.scope === undefined ? {} : { scope: target.scope })
      },
      timeout: target.timeout
    })
    if (response.issuedTokenType !== undefined && response.issuedTokenType !== ID_JAG_TYPE) {
      return yield* new TokenEndpointFailed({
        issuer,
        reason: `the token exchange issued a ${response.issuedTokenType}, not an ID-JAG`
      })
    }
    return response.accessToken
  })
