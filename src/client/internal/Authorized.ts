/**
 * One HTTP exchange with an OAuth provider in the loop: the request carries
 * the provider's `Authorization` header; a 401 lets the provider refresh or
 * authorize and the request is sent once more; a 403 `insufficient_scope`
 * lets it step up and the request is sent once more. A second refusal is
 * `TokenRejected`: nothing is retried forever.
 */
import * as Effect from "effect/Effect"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import { type AuthError, TokenRejected } from "../../AuthError.ts"
import type { OAuthProviderShape } from "../auth/OAuthProvider.ts"
import * as WwwAuthenticate from "../auth/WwwAuthenticate.ts"
import * as Http from "./HttpExchange.ts"

type Response = HttpClientResponse.HttpClientResponse

/** `attempt` sends the request with the given `Authorization` value (none when `undefined`). */
export const send = <E>(
  auth: OAuthProviderShape | undefined,
  serverUrl: string,
  attempt: (authorization: string | undefined) => Effect.Effect<Response, E>
): Effect.Effect<Response, E | AuthError> => {
  if (auth === undefined) return attempt(undefined)
  const rejected = (response: Response) =>
    Effect.andThen(
      Http.discard(response),
      Effect.fail(new TokenRejected({ serverUrl, status: response.status, challenge: response.headers["www-authenticate"] }))
    )
  return Effect.gen(function*() {
    // One recovery of each kind per exchange: a sign-in after a 401, a step-up after a 403.
    let signedIn = false
    let steppedUp = false
    while (true) {
      const sent = yield* auth.authorization(serverUrl)
      const response = yield* attempt(sent)
      const header = response.headers["www-authenticate"]
      if (response.status === 401) {
        if (signedIn) return yield* rejected(response)
        signedIn = true
        yield* Http.discard(response)
        yield* auth.unauthorized(serverUrl, header, sent)
        continue
      }
      if (response.status === 403 && WwwAuthenticate.parse(header).error === "insufficient_scope") {
        if (steppedUp) return yield* rejected(response)
        steppedUp = true
        yield* Http.discard(response)
        yield* auth.forbidden(serverUrl, header, sent)
        continue
      }
      return response
    }
  })
}
