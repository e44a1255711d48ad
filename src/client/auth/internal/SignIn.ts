/**
 * Signing in: getting tokens from scratch with the provider's grant. The
 * authorization code grant with PKCE S256, through the application's
 * `interaction` (the user opens the URL, the redirect comes back, its
 * `state` and `iss` are checked); client credentials; a JWT bearer grant
 * (workload identity); or an enterprise identity assertion (an ID-JAG from
 * the identity provider, then a JWT bearer grant). Every grant names the
 * resource (RFC 8707) and is refused before anything is sent when the
 * configured credentials belong to another authorization server.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import {
  type AuthError,
  AuthorizationRefused,
  DiscoveryFailed,
  InteractionRequired,
  StateMismatch,
  UserDenied
} from "../../../AuthError.ts"
import type * as Discovery from "../Discovery.ts"
import * as IdentityAssertion from "../IdentityAssertion.ts"
import * as JwtBearer from "../JwtBearer.ts"
import * as Pkce from "../Pkce.ts"
import * as TokenEndpoint from "../TokenEndpoint.ts"
import type * as TokenStore from "../TokenStore.ts"
import type { ClientIdentity } from "./ClientIdentity.ts"
import { authSpan, type ProviderContext } from "./ProviderContext.ts"
import type { Tokens } from "./Tokens.ts"

const DEFAULT_INTERACTION_TIMEOUT = Duration.minutes(5)

/** Gets tokens for `found`'s server with `scope`, and stores them. */
export type SignIn = (found: Discovery.Discovered, scope: string | undefined) => Effect.Effect<TokenStore.Tokens, AuthError>

/** Signs in with the provider's grant as `identity`, storing the tokens with `save`. */
export const make = (context: ProviderContext, identity: ClientIdentity, save: Tokens["save"]): SignIn => {
  const { addresses, bind, dpopFor, grant, http, options, timeout } = context

  const authorizationCode = (found: Discovery.Discovered, scope: string | undefined) =>
    Effect.gen(function*() {
      const server = found.server
      const issuer = server.issuer
      const interaction = options.interaction
      if (interaction === undefined) {
        return yield* new InteractionRequired({ serverUrl: found.serverUrl, reason: "no interactive handler is configured" })
      }
      if (options.redirectUrl === undefined) {
        return yield* new InteractionRequired({ serverUrl: found.serverUrl, reason: "no redirectUrl is configured" })
      }
      if (server.authorization_endpoint === undefined) {
        return yield* new DiscoveryFailed({
          serverUrl: found.serverUrl,
          step: "authorization-server",
          reason: `${issuer} has no authorization_endpoint`
        })
      }
      // Without S256 in the metadata the spec forbids going on: the code would travel unprotected.
      if (!(server.code_challenge_methods_supported ?? []).includes("S256")) {
        return yield* new DiscoveryFailed({
          serverUrl: found.serverUrl,
          step: "authorization-server",
          reason: `${issuer} does not advertise PKCE with S256 (code_challenge_methods_supported)`
        })
      }
      const client = yield* identity(found, scope)
      const pkce = yield* Pkce.make
      const state = Pkce.randomToken()
      const url = new URL(server.authorization_endpoint)
      url.searchParams.set("response_type", "code")
      url.searchParams.set("client_id", client.clientId)
      url.searchParams.set("redirect_uri", options.redirectUrl)
      url.searchParams.set("code_challenge", pkce.challenge)
      url.searchParams.set("code_challenge_method", "S256")
      url.searchParams.set("state", state)
      url.searchParams.set("resource", found.resource.resource)
      if (scope !== undefined) url.searchParams.set("scope", scope)
      yield* Effect.logDebug("MCP auth: waiting for the user to authorize", { issuer })
      yield* interaction.openUrl(url.href)
      const redirect = yield* interaction.receiveRedirect.pipe(
        Effect.timeoutOrElse({
          duration: options.interactionTimeout ?? DEFAULT_INTERACTION_TIMEOUT,
          orElse: () =>
            Effect.fail(new AuthorizationRefused({ issuer, error: "timeout", description: "no redirect came back in time" }))
        })
      )
      let answer: URL
      try {
        answer = new URL(redirect)
      } catch {
        return yield* new AuthorizationRefused({ issuer, error: "invalid_redirect", description: "the redirect is not a URL" })
      }
      const query = answer.searchParams
      if (query.get("state") !== state) return yield* new StateMismatch({ issuer, parameter: "state" })
      // RFC 9207: when the server sends its identity in the redirect, it must be the one we asked.
      const iss = query.get("iss")
      if (
        (iss !== null || server.authorization_response_iss_parameter_supported === true) &&
        iss !== server.issuer
      ) {
        return yield* new StateMismatch({ issuer, parameter: "iss" })
      }
      const error = query.get("error")
      if (error === "access_denied") {
        return yield* new UserDenied({ issuer, description: query.get("error_description") ?? undefined })
      }
      if (error !== null) {
        return yield* new AuthorizationRefused({ issuer, error, description: query.get("error_description") ?? undefined })
      }
      const code = query.get("code")
      if (code === null) {
        return yield* new AuthorizationRefused({ issuer, error: "no_code", description: "the redirect carries no code" })
      }
      const response = yield* TokenEndpoint.requestToken(http, {
        issuer,
        tokenEndpoint: server.token_endpoint,
        client,
        grant: "authorization_code",
        params: {
          code,
          redirect_uri: options.redirectUrl,
          code_verifier: pkce.verifier,
          resource: found.resource.resource
        },
        timeout,
        dpop: dpopFor(found),
        signingKey: options.clientKey,
        addresses: addresses(found)
      })
      return yield* save(found, response, scope)
    })

  const clientCredentials = (found: Discovery.Discovered, scope: string | undefined) =>
    Effect.gen(function*() {
      const client = yield* identity(found, scope)
      const response = yield* TokenEndpoint.requestToken(http, {
        issuer: found.server.issuer,
        tokenEndpoint: found.server.token_endpoint,
        client,
        grant: "client_credentials",
        params: { resource: found.resource.resource, ...(scope === undefined ? {} : { scope }) },
        timeout,
        dpop: dpopFor(found),
        signingKey: options.clientKey,
        addresses: addresses(found)
      })
      return yield* save(found, response, scope)
    })

  /** RFC 7523 §2.1: the assertion is the grant; a client is named only when one is configured. */
  const assertionGrant = (found: Discovery.Discovered, scope: string | undefined, assertion: string) =>
    Effect.gen(function*() {
      const client = options.clientId === undefined ? undefined : yield* identity(found, scope)
      const response = yield* TokenEndpoint.requestToken(http, {
        issuer: found.server.issuer,
        tokenEndpoint: found.server.token_endpoint,
        client,
        grant: "jwt_bearer",
        params: { assertion, resource: found.resource.resource, ...(scope === undefined ? {} : { scope }) },
        timeout,
        dpop: dpopFor(found),
        signingKey: options.clientKey,
        addresses: addresses(found)
      })
      return yield* save(found, response, scope)
    })

  const jwtBearer = (found: Discovery.Discovered, scope: string | undefined) =>
    Effect.gen(function*() {
      if (options.jwtBearer === undefined) {
        return yield* new InteractionRequired({ serverUrl: found.serverUrl, reason: "the jwt_bearer grant needs the jwtBearer option" })
      }
      return yield* assertionGrant(found, scope, yield* JwtBearer.read(options.jwtBearer))
    })

  const identityAssertion = (found: Discovery.Discovered, scope: string | undefined) =>
    Effect.gen(function*() {
      if (options.enterprise === undefined) {
        return yield* new InteractionRequired({
          serverUrl: found.serverUrl,
          reason: "the identity_assertion grant needs the enterprise option"
        })
      }
      const idJag = yield* IdentityAssertion.exchange(http, options.enterprise, {
        audience: found.server.issuer,
        resource: found.resource.resource,
        scope,
        timeout
      })
      return yield* assertionGrant(found, scope, idJag)
    })

  const grantFor = (found: Discovery.Discovered, scope: string | undefined) => {
    switch (grant) {
      case "client_credentials":
        return clientCredentials(found, scope)
      case "jwt_bearer":
        return jwtBearer(found, scope)
      case "identity_assertion":
        return identityAssertion(found, scope)
      default:
        return authorizationCode(found, scope)
    }
  }

  return (found: Discovery.Discovered, scope: string | undefined): Effect.Effect<TokenStore.Tokens, AuthError> =>
    Effect.andThen(bind(found), grantFor(found, scope)).pipe(authSpan("auth sign-in", found, grant))
}
