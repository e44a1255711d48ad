/**
 * One HTTP exchange with an OAuth provider in the loop: the request carries
 * the provider's headers, and the provider's answers to a 401 or a 403 send
 * it once more (`AuthorizedRetry`). Without a provider the request is sent
 * as it is, and the loop (with the challenge parser and the typed auth
 * errors) is never loaded.
 */
import * as Effect from "effect/Effect"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import type { AuthError } from "../../AuthError.ts"
import type { AuthRequest, OAuthProviderShape } from "../auth/OAuthProvider.ts"
import type * as AuthorizedRetry from "./AuthorizedRetry.ts"

type Response = HttpClientResponse.HttpClientResponse

/** The headers a request carries for the provider: none without one. */
export const headers = (
  auth: OAuthProviderShape | undefined,
  serverUrl: string,
  request: AuthRequest
): Effect.Effect<Readonly<Record<string, string>>, AuthError> =>
  auth === undefined ? Effect.succeed(NONE) : auth.headers(serverUrl, request)

/** The auth headers of a request without a provider: the same record every time, so callers can skip a merge. */
export const NONE: Readonly<Record<string, string>> = {}

let loaded: typeof AuthorizedRetry | undefined

const retry: Effect.Effect<typeof AuthorizedRetry> = Effect.suspend(() =>
  loaded !== undefined
    ? Effect.succeed(loaded)
    : Effect.promise(() => import("./AuthorizedRetry.ts")).pipe(Effect.tap((module) => Effect.sync(() => loaded = module)))
)

/**
 * `attempt` sends the request with the given auth headers merged into its
 * own (`NONE` without a provider). `request` is what a DPoP proof is bound
 * to: the method and URL actually requested (default: a POST to
 * `serverUrl`).
 */
export const send = <E>(
  auth: OAuthProviderShape | undefined,
  serverUrl: string,
  attempt: (headers: Readonly<Record<string, string>>) => Effect.Effect<Response, E>,
  request?: Partial<AuthRequest>
): Effect.Effect<Response, E | AuthError> => {
  if (auth === undefined) return attempt(NONE)
  const target: AuthRequest = { method: request?.method ?? "POST", url: request?.url ?? serverUrl }
  return Effect.flatMap(retry, (module) => module.send(auth, serverUrl, attempt, target))
}
