/**
 * What a Streamable HTTP request of the handshake era says in its headers
 * about its session and its revision: the session it names
 * (`Mcp-Session-Id`, looked up here or, in a fleet, in the registry), and
 * whether `MCP-Protocol-Version` names a revision this endpoint serves; and
 * the header a response names its session with.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as JsonRpc from "../../JsonRpc.ts"
import type { Env } from "./Guard.ts"
import type { RequestHeaders } from "./RequestHeaders.ts"
import * as Security from "./Security.ts"
import * as SessionAdmission from "./SessionAdmission.ts"
import type { Session } from "./Sessions.ts"
import * as SharedSessions from "./SharedSessions.ts"

const SESSION_HEADER = "mcp-session-id"

/** Revisions whose clients understand a priming event (an id with empty data). */
export const primes = (version: string | undefined) => version !== undefined && version >= "2025-11-25"

export const sessionHeader = (session: Session): Record<string, string> =>
  session.id === undefined ? {} : { [SESSION_HEADER]: session.id }

export const badVersion = (env: Env, headers: RequestHeaders) => {
  const version = headers["mcp-protocol-version"]
  return version !== undefined && !env.config.protocolVersions.includes(version)
    ? Option.some(Security.errorResponse(400, JsonRpc.ErrorCode.InvalidRequest, "Unsupported MCP-Protocol-Version", {
      requested: version,
      supported: env.config.protocolVersions
    }))
    : Option.none()
}

/** The named session, if it exists and belongs to this principal (anything else is 404: no hint it exists). */
export const lookup = (env: Env, headers: RequestHeaders, principal: Security.Principal) => {
  const id = headers[SESSION_HEADER]
  if (id === undefined) return { _tag: "Missing" } as const
  const session = env.sessions.get(id)
  if (session === undefined || session.closed || session.principalId !== principal.id) return { _tag: "Unknown" } as const
  if (principal.auth !== undefined) session.auth = principal.auth
  return { _tag: "Found", session } as const
}

/** `lookup`, and in a fleet the registry's word: a session held elsewhere is adopted, one ended elsewhere is unknown. */
export const find = (
  env: Env,
  headers: RequestHeaders,
  principal: Security.Principal
): Effect.Effect<
  ReturnType<typeof lookup> | { readonly _tag: "Respond"; readonly response: Effect.Effect<HttpServerResponse.HttpServerResponse> },
  never,
  Scope.Scope
> => {
  const id = headers[SESSION_HEADER]
  if (env.shared === undefined || id === undefined) return Effect.succeed(lookup(env, headers, principal))
  return Effect.map(SharedSessions.resolve(env.shared, env.sessions, env.handler, id, principal.id), (found) => {
    switch (found._tag) {
      case "Found":
        if (principal.auth !== undefined) found.session.auth = principal.auth
        return found
      case "Unknown":
        return found
      case "Refused":
        return { _tag: "Respond", response: SessionAdmission.refuse(found.refused) } as const
      case "Unavailable":
        return { _tag: "Respond", response: Effect.succeed(found.response) } as const
    }
  })
}

export const missingSession = () => Security.invalid(400, "Bad Request: Mcp-Session-Id header is required")
export const unknownSession = () => Security.invalid(404, "Session not found")
