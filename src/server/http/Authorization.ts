/**
 * The `authorization` option at work: the authentication hook that reads a
 * bearer token and checks it with the verifier, the per-message scope check
 * (403 `insufficient_scope` naming the scopes needed), and the Protected
 * Resource Metadata routes.
 *
 * The metadata is public: it is served without Host, Origin or token checks
 * and readable from any origin, so a browser client can discover where to
 * get a token.
 */
import * as Effect from "effect/Effect"
import type * as HttpRouter from "effect/http/HttpRouter"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type * as JsonRpc from "../../JsonRpc.ts"
import * as ProtectedResource from "../auth/ProtectedResource.ts"
import type { AuthInfo } from "../auth/TokenVerifier.ts"
import * as ResponseHeaders from "./ResponseHeaders.ts"
import * as Security from "./Security.ts"

export interface Authorization {
  readonly resource: string
  readonly authenticate: Security.Authenticate
  readonly authorize: (
    principal: Security.Principal,
    messages: ReadonlyArray<JsonRpc.Classified>
  ) => HttpServerResponse.HttpServerResponse | undefined
  /** Where the metadata is served (the root form and the path-aware ones). */
  readonly metadataPaths: ReadonlyArray<HttpRouter.PathInput>
  readonly metadata: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  readonly metadataPreflight: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

const hasQueryToken = (url: string): boolean => {
  const q = url.indexOf("?")
  return q >= 0 && new URLSearchParams(url.slice(q + 1)).has("access_token")
}

const defaultPrincipalId = (multipleIssuers: boolean) => (info: AuthInfo): string => {
  const who = info.subject !== undefined ? info.subject : `client:${info.clientId ?? "unknown"}`
  return multipleIssuers ? `${info.issuer ?? ""}#${who}` : who
}

export const make = (options: ProtectedResource.Options, resource: string, endpointPath: string): Authorization => {
  const resourceMetadata = ProtectedResource.metadataUrl(resource)
  const baseScopes = options.scopes ?? []
  const principalId = options.principalId ?? defaultPrincipalId(options.authorizationServers.length > 1)
  const document = JSON.stringify(ProtectedResource.metadata(options, resource))

  const refuse = (
    status: 400 | 401 | 403 | 503,
    description: string,
    error?: "invalid_request" | "invalid_token" | "insufficient_scope",
    scopes: ReadonlyArray<string> = baseScopes
  ) =>
    new Security.Unauthorized({
      status,
      description,
      wwwAuthenticate: ProtectedResource.challenge({
        resourceMetadata,
        scopes,
        error,
        description: error === undefined ? undefined : description
      })
    })

  const admitted = (info: AuthInfo): Effect.Effect<Security.Principal, Security.Unauthorized> => {
    const missing = ProtectedResource.missingScopes(info, baseScopes)
    if (missing.length > 0) {
      return Effect.fail(refuse(403, `Insufficient scope: needs ${baseScopes.join(" ")}`, "insufficient_scope"))
    }
    return Effect.succeed({ id: principalId(info), auth: info } satisfies Security.Principal)
  }

  // Combinators, not `Effect.gen` (docs/design.md, "Per-request code and the old generation").
  const authenticate: Security.Authenticate = (request) =>
    Effect.suspend(() => {
      if (hasQueryToken(request.url)) {
        return Effect.fail(refuse(400, "Access tokens are not accepted in the query string", "invalid_request"))
      }
      const header = request.headers["authorization"]
      // No token, or credentials of another scheme: the bare challenge (RFC 6750 §3.1).
      if (header === undefined || !/^bearer(\s|$)/i.test(header)) return Effect.fail(refuse(401, "Unauthorized"))
      const token = BEARER.exec(header)?.[1]
      if (token === undefined) return Effect.fail(refuse(401, "Malformed bearer token", "invalid_token"))
      return options.verifier.verify(token, resource).pipe(
        Effect.catchTags({
          InvalidToken: (e) => Effect.fail(refuse(401, `Invalid token: ${e.reason}`, "invalid_token")),
          VerifierUnavailable: (e) =>
            Effect.andThen(
              Effect.logWarning("HTTP server transport: bearer token could not be verified", e.reason),
              Effect.fail(
                new Security.Unauthorized({
                  status: 503,
                  description: "Service unavailable: the token cannot be verified now",
                  wwwAuthenticate: ""
                })
              )
            )
        }),
        Effect.flatMap(admitted)
      )
    })

  const authorize = (principal: Security.Principal, messages: ReadonlyArray<JsonRpc.Classified>) => {
    const info = principal.auth
    if (info === undefined) return undefined
    const needed = new Set<string>()
    for (const m of messages) {
      if (m._tag !== "Request" && m._tag !== "Notification") continue
      for (const s of ProtectedResource.requiredScopes(options, m.message)) needed.add(s)
    }
    const scopes = [...needed]
    if (ProtectedResource.missingScopes(info, scopes).length === 0) return undefined
    const e = refuse(403, `Insufficient scope: needs ${scopes.join(" ")}`, "insufficient_scope", scopes)
    return Security.invalid(403, e.description!, { "www-authenticate": e.wwwAuthenticate })
  }

  const resourcePath = new URL(resource).pathname.replace(/\/+$/, "")
  const metadataPaths = [
    ...new Set([ProtectedResource.WELL_KNOWN, `${ProtectedResource.WELL_KNOWN}${endpointPath}`, `${ProtectedResource.WELL_KNOWN}${resourcePath}`])
  ] as Array<HttpRouter.PathInput>
  const open = { "access-control-allow-origin": "*" }
  return {
    resource,
    authenticate,
    authorize,
    metadataPaths,
    metadata: () =>
      Effect.succeed(ResponseHeaders.add(HttpServerResponse.text(document, { contentType: "application/json" }), {
        ...open,
        "cache-control": "max-age=3600"
      })),
    metadataPreflight: () =>
      Effect.succeed(HttpServerResponse.empty({
        status: 204,
        headers: {
          ...open,
          "access-control-allow-methods": "GET, OPTIONS",
          "access-control-allow-headers": "MCP-Protocol-Version",
          "access-control-max-age": "86400"
        }
      }))
  }
}
