/**
 * Configured credentials belong to one authorization server: a client id
 * with its secret or key, a JWT bearer source, an enterprise identity
 * assertion. Sent to another, they could be replayed at the first. Each is
 * bound to one issuer, the configured one or else the first one used, and
 * the binding is kept in the token store (`issuers`), so it holds across
 * runs.
 */
import * as Effect from "effect/Effect"
import { IssuerMismatch, type TokenStoreFailed } from "../../AuthError.ts"
import type * as Discovery from "./Discovery.ts"
import * as TokenStore from "./TokenStore.ts"

/**
 * Issuer identifiers compared as discovery compares them: a trailing slash
 * makes no difference.
 *
 * @since 0.1.0
 * @category utils
 */
export const sameIssuer = (a: string, b: string): boolean => a.replace(/\/+$/, "") === b.replace(/\/+$/, "")

/**
 * What configured credentials are bound under in the store: the client id,
 * else the grant that carries them. None without configured credentials: a
 * dynamically registered client is kept per issuer already.
 *
 * @since 0.1.0
 * @category utils
 */
export const credentialOf = (options: {
  readonly clientId?: string | undefined
  readonly enterprise?: { readonly tokenEndpoint: string; readonly clientId: string } | undefined
  readonly jwtBearer?: unknown
}): string | undefined =>
  options.clientId !== undefined
    ? `client_id ${options.clientId}`
    : options.enterprise !== undefined
    ? `identity_assertion ${options.enterprise.tokenEndpoint} ${options.enterprise.clientId}`
    : options.jwtBearer !== undefined
    ? "jwt_bearer"
    : undefined

/**
 * Checks, before anything is sent, that `credential` may go to the
 * authorization server discovery `found`: the `configured` issuer when there
 * is one (which then becomes the stored binding), else the one stored, else
 * it is bound to this one now. Fails with `IssuerMismatch` otherwise.
 *
 * @since 0.1.0
 * @category checks
 */
export const check = (
  store: TokenStore.TokenStoreShape,
  credential: string | undefined,
  configured: string | undefined,
  found: Discovery.Discovered
): Effect.Effect<void, IssuerMismatch | TokenStoreFailed> =>
  Effect.gen(function*() {
    if (credential === undefined) return
    const issuer = found.server.issuer
    if (configured !== undefined && !sameIssuer(configured, issuer)) {
      return yield* new IssuerMismatch({ serverUrl: found.serverUrl, bound: configured, boundBy: "option", issuer })
    }
    const stored = (yield* store.load).issuers?.[credential]
    if (stored !== undefined && sameIssuer(stored, issuer)) return
    if (configured !== undefined) {
      yield* store.update((contents) => TokenStore.withIssuer(contents, credential, issuer))
      return
    }
    // Whoever binds first wins, in this process or another sharing the store.
    let bound = stored
    yield* store.update((contents) => {
      bound = contents.issuers?.[credential]
      return bound === undefined ? TokenStore.withIssuer(contents, credential, issuer) : contents
    })
    if (bound !== undefined && !sameIssuer(bound, issuer)) {
      return yield* new IssuerMismatch({ serverUrl: found.serverUrl, bound, boundBy: "first-use", issuer })
    }
  })
