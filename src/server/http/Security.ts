/**
 * The checks every request to the HTTP server transport passes before it
 * reaches a session: Host (DNS rebinding), Origin (browsers on other sites),
 * authentication, and the CORS headers a browser client needs to read our
 * answers. Also the JSON-RPC-shaped error answers every rejection uses.
 */
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { boundedMemo } from "../../internal/BoundedMemo.ts"
import * as JsonRpc from "../../JsonRpc.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import * as ResponseHeaders from "./ResponseHeaders.ts"
import type { AuthInfo } from "../auth/TokenVerifier.ts"

/**
 * Who the authentication hook says is calling. Sessions are bound to `id`:
 * another principal cannot use them, and per-principal limits count by it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Principal {
  readonly id: string
  /** Anything the application wants to keep (claims, scopes). */
  readonly data?: unknown
  /** What the bearer token says (the `authorization` option sets it); handlers see it as `HandlerContext.auth`. */
  readonly auth?: AuthInfo | undefined
}

export const anonymous: Principal = { id: "anonymous" }

/**
 * What the authentication hook fails with: the request is answered 401 (or
 * 403 for insufficient scope) with a `WWW-Authenticate` challenge.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unauthorized extends Data.TaggedError("Unauthorized")<{
  /** The `WWW-Authenticate` header value, e.g. `Bearer resource_metadata="https://…"`; empty for none. */
  readonly wwwAuthenticate: string
  /** 401 unless told: 400 for a malformed request, 403 for insufficient scope, 503 when credentials cannot be checked now. */
  readonly status?: 400 | 401 | 403 | 503 | undefined
  readonly description?: string | undefined
}> {}

/**
 * The authentication hook (`authenticate` option): reads a request's
 * credentials and names its principal, or fails with `Unauthorized`.
 *
 * @since 0.1.0
 * @category models
 */
export type Authenticate = (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<Principal, Unauthorized>

/** A JSON-RPC error object as an HTTP answer (no request id: the transport rejected the body). */
export const errorResponse = (
  status: number,
  code: number,
  message: string,
  data?: unknown,
  headers?: Record<string, string>
): HttpServerResponse.HttpServerResponse => {
  const response = HttpServerResponse.jsonUnsafe(JsonRpc.failure(null, code, message, data), { status })
  return headers === undefined ? response : ResponseHeaders.add(response, headers)
}

export const invalid = (status: number, message: string, headers?: Record<string, string>) =>
  errorResponse(status, JsonRpc.ErrorCode.InvalidRequest, message, undefined, headers)

// ---------------------------------------------------------------------------
// Host and Origin

const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"]

export interface AllowLists {
  /** Lower-case `host` or `host:port` entries; `"any"` disables the check. */
  readonly hosts: ReadonlySet<string> | "any"
  /** Lower-case origins (`scheme://host[:port]`); `"any"` allows every origin. */
  readonly origins: ReadonlySet<string> | "any"
  /** Whether a `Host` value (not empty) names an entry of `hosts`; each value judged once (see `isHostAllowed`). */
  readonly judgeHost: (host: string) => boolean
}

const hostForUrl = (host: string): string => host.includes(":") && !host.startsWith("[") ? `[${host}]` : host

const isUnspecified = (host: string) => host === "0.0.0.0" || host === "::" || host === "[::]" || host === ""

/**
 * Default allow-lists: the loopback names (any port) plus the bound address
 * when it is a specific one, and the server's own origins on its port. Host
 * names a rebinding attacker controls never match; an IP literal cannot be
 * rebound.
 */
export const defaultAllowLists = (
  bound: { readonly host: string; readonly port: number } | undefined,
  options: {
    readonly allowedHosts?: ReadonlyArray<string> | "any" | undefined
    readonly allowedOrigins?: ReadonlyArray<string> | "any" | undefined
  }
): AllowLists => {
  let hosts: ReadonlySet<string> | "any"
  if (options.allowedHosts === "any") {
    hosts = "any"
  } else if (options.allowedHosts !== undefined) {
    hosts = new Set(options.allowedHosts.map((h) => h.toLowerCase()))
  } else {
    const set = new Set(LOOPBACK_NAMES)
    if (bound !== undefined && !isUnspecified(bound.host)) set.add(hostForUrl(bound.host).toLowerCase())
    hosts = set
  }
  let origins: ReadonlySet<string> | "any"
  if (options.allowedOrigins === "any") {
    origins = "any"
  } else if (options.allowedOrigins !== undefined) {
    origins = new Set(options.allowedOrigins.map((o) => o.toLowerCase().replace(/\/+$/, "")))
  } else {
    const set = new Set<string>()
    const names = bound !== undefined && !isUnspecified(bound.host) && !LOOPBACK_NAMES.includes(hostForUrl(bound.host))
      ? [...LOOPBACK_NAMES, hostForUrl(bound.host).toLowerCase()]
      : LOOPBACK_NAMES
    for (const name of names) {
      for (const scheme of ["http", "https"]) {
        set.add(bound === undefined ? `${scheme}://${name}` : `${scheme}://${name}:${bound.port}`)
      }
    }
    origins = set
  }
  const allowedHosts = hosts
  return {
    hosts,
    origins,
    // A client sends the same Host with every request.
    judgeHost: allowedHosts === "any" ? () => true : boundedMemo((host) => namesEntry(allowedHosts, host), HOST_VALUES_KEPT)
  }
}

const HOST_VALUES_KEPT = 64

const splitHost = (value: string): { readonly name: string; readonly port: string | undefined } => {
  const v = value.trim().toLowerCase()
  if (v.startsWith("[")) {
    const close = v.indexOf("]")
    if (close < 0) return { name: v, port: undefined }
    const rest = v.slice(close + 1)
    return { name: v.slice(0, close + 1), port: rest.startsWith(":") ? rest.slice(1) : undefined }
  }
  const colon = v.lastIndexOf(":")
  return colon < 0 ? { name: v, port: undefined } : { name: v.slice(0, colon), port: v.slice(colon + 1) }
}

/** An entry without a port allows that name on any port; with a port, only that one. */
const namesEntry = (hosts: ReadonlySet<string>, host: string): boolean => {
  const { name, port } = splitHost(host)
  return hosts.has(name) || (port !== undefined && hosts.has(`${name}:${port}`))
}

/** Whether `host` (a request's `Host`) is allowed: a missing or empty one never is. */
export const isHostAllowed = (lists: AllowLists, host: string | undefined): boolean => {
  if (lists.hosts === "any") return true
  if (host === undefined || host === "") return false
  return lists.judgeHost(host)
}

/**
 * Requests without `Origin` come from non-browser clients and pass; a
 * configured origin without a port matches that origin on any port.
 */
export const isOriginAllowed = (lists: AllowLists, origin: string | undefined): boolean => {
  if (origin === undefined) return true
  if (lists.origins === "any") return true
  const o = origin.toLowerCase()
  if (lists.origins.has(o)) return true
  const withoutPort = o.replace(/:\d+$/, "")
  return withoutPort !== o && lists.origins.has(withoutPort)
}

// ---------------------------------------------------------------------------
// CORS

export const allowedMethods = "GET, POST, DELETE, OPTIONS"
export const allowedHeaders =
  "Content-Type, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name"
// Retry-After: a browser client told to come back later can read when.
export const exposedHeaders = "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate, Retry-After, Mcp-Method, Mcp-Name"

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/**
 * `Access-Control-Allow-Headers` for one preflight: the fixed list plus the
 * `Mcp-Param-*` headers the browser asks for (a wildcard there would allow
 * every header, and `*` is not honoured with credentials).
 */
export const allowedHeadersFor = (requested: string | undefined): string => {
  if (requested === undefined) return allowedHeaders
  const params = requested.split(",")
    .map((h) => h.trim())
    .filter((h) => h.toLowerCase().startsWith(RequestMeta.Header.paramPrefix) && TOKEN.test(h))
  return params.length === 0 ? allowedHeaders : `${allowedHeaders}, ${params.join(", ")}`
}

/** Headers added to every answer; the allow-origin ones only for an allowed `Origin`. */
export const corsHeaders = (origin: string | undefined, allowed: boolean): Record<string, string> =>
  origin === undefined || !allowed
    ? { vary: "Origin" }
    : {
      vary: "Origin",
      "access-control-allow-origin": origin,
      "access-control-expose-headers": exposedHeaders
    }

export const preflightHeaders = (
  origin: string | undefined,
  allowed: boolean,
  maxAgeSeconds: number,
  requestedHeaders?: string | undefined
) =>
  origin === undefined || !allowed
    ? corsHeaders(origin, allowed)
    : {
      ...corsHeaders(origin, allowed),
      "access-control-allow-methods": allowedMethods,
      "access-control-allow-headers": allowedHeadersFor(requestedHeaders),
      "access-control-max-age": String(maxAgeSeconds)
    }
