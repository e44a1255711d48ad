/**
 * The MCP endpoint as an OAuth 2.1 protected resource (MCP authorization,
 * RFC 9728, RFC 6750): what the HTTP server transport's `authorization`
 * option takes, the Protected Resource Metadata document it serves, and the
 * `WWW-Authenticate` challenges it answers with.
 *
 * @since 0.1.0
 */
import type * as JsonRpc from "../../JsonRpc.ts"
import type { AuthInfo, TokenVerifierShape } from "./TokenVerifier.ts"

/**
 * The `authorization` option of the HTTP server transport. Every endpoint
 * but the health probe and the metadata then needs a bearer token the
 * verifier accepts, with the scopes the request needs.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Checks bearer tokens (`JwtVerifier.make`, `IntrospectionVerifier.make`, or your own). Required. */
  readonly verifier: TokenVerifierShape
  /** Issuer URLs of the authorization servers clients get tokens from (`authorization_servers`). Required. */
  readonly authorizationServers: ReadonlyArray<string>
  /**
   * The canonical URL of the MCP endpoint as clients reach it: the metadata's
   * `resource` and the audience tokens must name. Default: the transport's
   * own URL (`http://127.0.0.1:PORT/mcp`), which is right only for a server
   * clients reach directly; set it behind a proxy or a public host name.
   * Required with `routes` on a server whose address the transport cannot see.
   */
  readonly resource?: string | undefined
  /** Scopes every request needs. Default: none. */
  readonly scopes?: ReadonlyArray<string> | undefined
  /** Further scopes a JSON-RPC method needs, by method (e.g. `{ "tools/call": ["tools"] }`). Default: none. */
  readonly methodScopes?: Readonly<Record<string, ReadonlyArray<string>>> | undefined
  /** Further scopes a `tools/call` needs, by tool name. Default: none. */
  readonly toolScopes?: Readonly<Record<string, ReadonlyArray<string>>> | undefined
  /** `scopes_supported` in the metadata. Default: every scope the three options above name. */
  readonly scopesSupported?: ReadonlyArray<string> | undefined
  /** `resource_name` in the metadata. Default: none. */
  readonly resourceName?: string | undefined
  /** `resource_documentation` in the metadata. Default: none. */
  readonly resourceDocumentation?: string | undefined
  /**
   * The principal a verified token is: sessions are bound to it and
   * per-principal limits count by it. Default: the subject (`sub`), else the
   * client id, prefixed with the issuer when more than one authorization
   * server is configured.
   */
  readonly principalId?: ((info: AuthInfo) => string) | undefined
}

/**
 * The Protected Resource Metadata document (RFC 9728 §2).
 *
 * @since 0.1.0
 * @category models
 */
export interface Metadata {
  readonly resource: string
  readonly authorization_servers: ReadonlyArray<string>
  readonly scopes_supported: ReadonlyArray<string>
  readonly bearer_methods_supported: ReadonlyArray<string>
  readonly resource_name?: string
  readonly resource_documentation?: string
}

/**
 * The well-known path prefix of Protected Resource Metadata.
 *
 * @since 0.1.0
 * @category constants
 */
export const WELL_KNOWN = "/.well-known/oauth-protected-resource"

const unique = (lists: ReadonlyArray<ReadonlyArray<string> | undefined>): ReadonlyArray<string> => [
  ...new Set(lists.flatMap((l) => l ?? []))
]

/**
 * The metadata document for `resource`.
 *
 * @since 0.1.0
 * @category metadata
 */
export const metadata = (options: Options, resource: string): Metadata => ({
  resource,
  authorization_servers: options.authorizationServers,
  scopes_supported: options.scopesSupported ?? unique([
    options.scopes,
    ...Object.values(options.methodScopes ?? {}),
    ...Object.values(options.toolScopes ?? {})
  ]),
  bearer_methods_supported: ["header"],
  ...(options.resourceName === undefined ? {} : { resource_name: options.resourceName }),
  ...(options.resourceDocumentation === undefined ? {} : { resource_documentation: options.resourceDocumentation })
})

/**
 * Where the metadata of `resource` lives: the well-known prefix inserted
 * between the host and the path (RFC 9728 §3.1), e.g.
 * `https://example.com/.well-known/oauth-protected-resource/mcp`.
 *
 * @since 0.1.0
 * @category metadata
 */
export const metadataUrl = (resource: string): string => {
  const url = new URL(resource)
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/+$/, "")
  return `${url.origin}${WELL_KNOWN}${path}`
}

/**
 * The scopes a message needs: `scopes`, plus its method's, plus (for
 * `tools/call`) its tool's.
 *
 * @since 0.1.0
 * @category scopes
 */
export const requiredScopes = (
  options: Options,
  message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification
): ReadonlyArray<string> => {
  const name = message.method === "tools/call" ? (message.params as { name?: unknown } | undefined)?.name : undefined
  return unique([
    options.scopes,
    options.methodScopes?.[message.method],
    typeof name === "string" ? options.toolScopes?.[name] : undefined
  ])
}

/**
 * The scopes of `needed` that `info` lacks.
 *
 * @since 0.1.0
 * @category scopes
 */
export const missingScopes = (info: AuthInfo, needed: ReadonlyArray<string>): ReadonlyArray<string> =>
  needed.filter((s) => !info.scopes.includes(s))

const quoted = (value: string) => `"${value.replace(/[\\"]/g, (c) => `\\${c}`).replace(/[\r\n]/g, " ")}"`

/**
 * A `Bearer` challenge (RFC 6750 §3) naming where the metadata is, e.g.
 * `Bearer error="invalid_token", resource_metadata="https://…", scope="read"`.
 * `error` is left out when the request carried no token.
 *
 * @since 0.1.0
 * @category challenges
 */
export const challenge = (params: {
  readonly resourceMetadata: string
  readonly scopes?: ReadonlyArray<string> | undefined
  readonly error?: "invalid_request" | "invalid_token" | "insufficient_scope" | undefined
  readonly description?: string | undefined
}): string => {
  const parts: Array<string> = []
  if (params.error !== undefined) parts.push(`error=${quoted(params.error)}`)
  if (params.description !== undefined) parts.push(`error_description=${quoted(params.description)}`)
  parts.push(`resource_metadata=${quoted(params.resourceMetadata)}`)
  if (params.scopes !== undefined && params.scopes.length > 0) parts.push(`scope=${quoted(params.scopes.join(" "))}`)
  return `Bearer ${parts.join(", ")}`
}
