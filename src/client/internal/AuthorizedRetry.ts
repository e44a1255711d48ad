/**
 * The loop of `PostExchange.authorized` with a provider, loaded with the
 * first exchange that has one. The request carries
 * the provider's headers for its method and URL (`authorization`, and a
 * fresh `dpop` proof for DPoP-bound tokens); a 401 lets the provider refresh
 * or authorize and the request is sent once more; a 401 `use_dpop_nonce`
 * hands the provider the server's nonce and the request is sent once more
 * with a new proof; a 403 `insufficient_scope` lets it step up and the
 * request is sent once more. A second refusal of a kind is a typed error:
 * nothing is retried forever.
 */
import * as Effect from "effect/Effect"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import { type AuthError, DpopNonceRejected, TokenRejected } from "../../AuthError.ts"
import type { AuthRequest, OAuthProviderShape } from "../auth/OAuthProvider.ts"
import * as WwwAuthenticate from "../auth/WwwAuthenticate.ts"
import * as Http from "./HttpExchange.ts"

type Response = HttpClientResponse.HttpClientResponse

/** `PostExchange.authorized` with a provider. */
export const send = <E>(
  auth: OAuthProviderShape,
  serverUrl: string,
  attempt: (headers: Readonly<Record<string, string>>) => Effect.Effect<Response, E>,
  target: AuthRequest
): Effect.Effect<Response, E | AuthError> => sendWith(auth, serverUrl, attempt, target)

/**
 * One generator function for every exchange (`fnUntraced`), not one made per
 * request: see docs/design.md, "Per-request code and the old generation".
 */
const sendWith = Effect.fnUntraced(function*<E>(
  auth: OAuthProviderShape,
  serverUrl: string,
  attempt: (headers: Readonly<Record<string, string>>) => Effect.Effect<Response, E>,
  target: AuthRequest
): Effect.fn.Return<Response, E | AuthError> {
  const rejected = (response: Response) =>
    Effect.andThen(
      Http.discard(response),
      Effect.fail(new TokenRejected({ serverUrl, status: response.status, challenge: response.headers["www-authenticate"] }))
    )
  // One recovery of each kind per exchange: a sign-in after a 401, a nonce after a
  // 401 use_dpop_nonce, a step-up after a 403.
  let signedIn = false
  let nonceGiven = false
  let steppedUp = false
  while (true) {
    const sent = yield* auth.headers(serverUrl, target)
    const response = yield* attempt(sent)
    const header = response.headers["www-authenticate"]
    const nonce = response.headers["dpop-nonce"]
    if (nonce !== undefined) yield* auth.nonce(target.url, nonce)
    if (response.status === 401) {
      const challenge = WwwAuthenticate.parse(header)
      if (challenge.error === "use_dpop_nonce" && sent.dpop !== undefined) {
        if (nonceGiven || nonce === undefined) {
          yield* Http.discard(response)
          return yield* new DpopNonceRejected({ url: target.url, by: "resource-server", nonceSent: nonceGiven })
        }
        nonceGiven = true
        yield* Http.discard(response)
        continue
      }
      if (signedIn) return yield* rejected(response)
      signedIn = true
      yield* Http.discard(response)
      yield* auth.unauthorized(serverUrl, header, sent.authorization)
      continue
    }
    if (response.status === 403 && WwwAuthenticate.parse(header).error === "insufficient_scope") {
      if (steppedUp) return yield* rejected(response)
      steppedUp = true
      yield* Http.discard(response)
      yield* auth.forbidden(serverUrl, header, sent.authorization)
      continue
    }
    return response
  }
})
