/**
 * Authorization discovery (MCP authorization, RFC 9728, RFC 8414, OpenID
 * Connect Discovery): from a server URL and its 401 challenge to the
 * protected resource metadata, then to the metadata of the authorization
 * server it names. Every document is read with a size limit and a timeout,
 * and checked before it is trusted: the resource must be the server's, the
 * issuer the one asked for. Every URL the server's metadata leads to is
 * checked against the address policy (`AddressPolicy`) before it is requested.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import { DiscoveryFailed, type ForbiddenAddress } from "../../AuthError.ts"
import * as Http from "../internal/HttpExchange.ts"
import * as AddressPolicy from "./AddressPolicy.ts"
import type { BearerChallenge } from "./WwwAuthenticate.ts"

/**
 * The protected resource metadata fields the client uses (RFC 9728 §2).
 *
 * @since 0.1.0
 * @category models
 */
export interface ResourceMetadata {
  readonly resource: string
  readonly authorization_servers: ReadonlyArray<string>
  readonly scopes_supported?: ReadonlyArray<string> | undefined
}

/**
 * The authorization server metadata fields the client uses (RFC 8414 §2).
 *
 * @since 0.1.0
 * @category models
 */
export interface ServerMetadata {
  readonly issuer: string
  readonly authorization_endpoint?: string | undefined
  readonly token_endpoint: string
  readonly registration_endpoint?: string | undefined
  readonly scopes_supported?: ReadonlyArray<string> | undefined
  readonly code_challenge_methods_supported?: ReadonlyArray<string> | undefined
  readonly token_endpoint_auth_methods_supported?: ReadonlyArray<string> | undefined
  readonly grant_types_supported?: ReadonlyArray<string> | undefined
  readonly client_id_metadata_document_supported?: boolean | undefined
  readonly authorization_response_iss_parameter_supported?: boolean | undefined
  /** The JWS algorithms it accepts in DPoP proofs (RFC 9449 §5.1); it issues DPoP-bound tokens. */
  readonly dpop_signing_alg_values_supported?: ReadonlyArray<string> | undefined
}

/**
 * What discovery found for one server: the resource to ask tokens for, and
 * the authorization server that issues them.
 *
 * @since 0.1.0
 * @category models
 */
export interface Discovered {
  readonly serverUrl: string
  readonly resource: ResourceMetadata
  readonly server: ServerMetadata
}

/**
 * Bounds on each metadata read, and the internal addresses it may reach.
 *
 * @since 0.1.0
 * @category models
 */
export interface Limits {
  /** Largest metadata document read. Default 64 KiB. */
  readonly maxBytes?: number | undefined
  /** How long each metadata request may take. Default 10 seconds. */
  readonly timeout?: Duration.Input | undefined
  /**
   * Internal addresses (loopback, private, link-local…) the server's
   * metadata may lead to beyond those of the server's own kind: `true` for
   * all, or host names and CIDR ranges. Default none.
   */
  readonly allowPrivateNetworks?: AddressPolicy.Allowance | undefined
}

const DEFAULT_MAX_BYTES = 64 * 1024
const DEFAULT_TIMEOUT = Duration.seconds(10)

/**
 * The server URL as a resource identifier (RFC 8707 §2): no fragment, the
 * scheme and host lower-cased (which `URL` does).
 *
 * @since 0.1.0
 * @category utils
 */
export const canonicalResource = (serverUrl: string): string => {
  const url = new URL(serverUrl)
  url.hash = ""
  return url.href
}

/**
 * Whether tokens for `resource` may be sent to `serverUrl`: same origin, and
 * the resource's path is the server's path or a parent of it.
 *
 * @since 0.1.0
 * @category utils
 */
export const resourceCovers = (resource: string, serverUrl: string): boolean => {
  let r: URL, s: URL
  try {
    r = new URL(resource)
    s = new URL(serverUrl)
  } catch {
    return false
  }
  if (r.origin !== s.origin) return false
  const base = r.pathname.endsWith("/") ? r.pathname : `${r.pathname}/`
  const path = s.pathname.endsWith("/") ? s.pathname : `${s.pathname}/`
  return path.startsWith(base)
}

/**
 * Where the protected resource metadata is looked for, in the spec's order:
 * the challenge's `resource_metadata` when there is one; otherwise the
 * path-aware well-known URL, then the root one.
 *
 * @since 0.1.0
 * @category discovery
 */
export const resourceMetadataUrls = (serverUrl: string, challenge: BearerChallenge): ReadonlyArray<string> => {
  if (challenge.resourceMetadata !== undefined) return [challenge.resourceMetadata]
  const url = new URL(serverUrl)
  const path = url.pathname.replace(/\/+$/, "")
  const root = `${url.origin}/.well-known/oauth-protected-resource`
  return path === "" ? [root] : [`${root}${path}`, root]
}

/**
 * Where an issuer's metadata is looked for, in the spec's order: with a path
 * component, OAuth (path inserted), OpenID (path inserted), OpenID (path
 * appended); without one, OAuth then OpenID.
 *
 * @since 0.1.0
 * @category discovery
 */
export const serverMetadataUrls = (issuer: string): ReadonlyArray<string> => {
  const url = new URL(issuer)
  const path = url.pathname.replace(/\/+$/, "")
  if (path === "") {
    return [
      `${url.origin}/.well-known/oauth-authorization-server`,
      `${url.origin}/.well-known/openid-configuration`
    ]
  }
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}/.well-known/openid-configuration${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`
  ]
}

/**
 * Whether a URL may carry authorization traffic: https, or http to a loopback host.
 *
 * @since 0.1.0
 * @category utils
 */
export const isSecureUrl = (text: string): boolean => {
  try {
    const url = new URL(text)
    if (url.protocol === "https:") return true
    return url.protocol === "http:" &&
      (url.hostname === "127.0.0.1" || url.hostname === "localhost" || url.hostname === "[::1]")
  } catch {
    return false
  }
}

type Fetched =
  | { readonly _tag: "Found"; readonly json: unknown }
  /** `status`: the HTTP answer, when there was one. */
  | { readonly _tag: "Absent"; readonly why: string; readonly status?: number | undefined }

/**
 * GETs one metadata document for the server `serverUrl`, once its address is
 * allowed. A non-2xx answer, no connection or a host that does not resolve
 * is "absent" (the next location is tried); a 2xx that is oversized or not
 * JSON fails.
 */
const fetchDocument = (
  client: HttpClient.HttpClient,
  serverUrl: string,
  url: string,
  limits: Limits,
  fail: (reason: string) => DiscoveryFailed
): Effect.Effect<Fetched, DiscoveryFailed | ForbiddenAddress> => {
  const maxBytes = limits.maxBytes ?? DEFAULT_MAX_BYTES
  const request = HttpClientRequest.get(url, { headers: { accept: "application/json" } })
  return Effect.gen(function*() {
    yield* AddressPolicy.check(serverUrl, url, limits.allowPrivateNetworks)
    const response = yield* Http.execute(client, request)
    if (!Http.isSuccess(response.status)) {
      yield* Http.discard(response)
      return { _tag: "Absent", why: `${url}: HTTP ${response.status}`, status: response.status } as const
    }
    const text = yield* Http.readText(response, maxBytes).pipe(
      Effect.catchTag("MessageTooLarge", () => Effect.fail(fail(`${url} is larger than ${maxBytes} bytes`)))
    )
    try {
      return { _tag: "Found", json: JSON.parse(text) as unknown } as const
    } catch {
      return yield* fail(`${url} is not JSON`)
    }
  }).pipe(
    Effect.catchTags({
      TransportClosed: (error) => Effect.succeed({ _tag: "Absent", why: `${url}: ${error.reason}` } as const),
      RedirectRefused: (error) => Effect.fail(fail(`${url} redirects to ${error.location} (${error.reason})`))
    }),
    Effect.timeoutOrElse({
      duration: limits.timeout ?? DEFAULT_TIMEOUT,
      orElse: () => Effect.fail(fail(`${url} did not answer in time`))
    })
  )
}

const isStringArray = (value: unknown): value is ReadonlyArray<string> =>
  Array.isArray(value) && value.every((v) => typeof v === "string")

type FirstDocument =
  | { readonly _tag: "Found"; readonly url: string; readonly doc: Record<string, unknown> | null }
  | {
    readonly _tag: "Missing"
    readonly misses: ReadonlyArray<string>
    /** Every location answered with a 4xx: the server is there and publishes no such document. */
    readonly absent: boolean
  }

/** The first of `urls` that is there (in the spec's order of preference), or every miss. */
const firstDocument = (
  client: HttpClient.HttpClient,
  serverUrl: string,
  urls: ReadonlyArray<string>,
  limits: Limits,
  fail: (reason: string) => DiscoveryFailed
): Effect.Effect<FirstDocument, DiscoveryFailed | ForbiddenAddress> =>
  Effect.gen(function*() {
    const misses: Array<string> = []
    let absent = true
    for (const url of urls) {
      const fetched = yield* fetchDocument(client, serverUrl, url, limits, fail)
      if (fetched._tag === "Found") return { _tag: "Found", url, doc: fetched.json as Record<string, unknown> | null }
      misses.push(fetched.why)
      if (fetched.status === undefined || fetched.status >= 500) absent = false
    }
    return { _tag: "Missing", misses, absent }
  })

/** The document `firstDocument` found, or a failure naming every miss. */
const required = (
  found: FirstDocument,
  fail: (reason: string) => DiscoveryFailed,
  noneFound: string
): Effect.Effect<{ readonly url: string; readonly doc: Record<string, unknown> | null }, DiscoveryFailed> =>
  found._tag === "Found" ? Effect.succeed(found) : Effect.fail(fail(`${noneFound} (${found.misses.join("; ")})`))

const optionalStrings = (value: unknown): boolean => value === undefined || isStringArray(value)

/** The protected resource metadata's location check, then the documents at the locations in order. */
const resourceDocument = (
  client: HttpClient.HttpClient,
  serverUrl: string,
  challenge: BearerChallenge,
  limits: Limits,
  fail: (reason: string) => DiscoveryFailed
): Effect.Effect<FirstDocument, DiscoveryFailed | ForbiddenAddress> =>
  Effect.gen(function*() {
    const hint = challenge.resourceMetadata
    if (hint !== undefined) {
      let hinted: URL
      try {
        hinted = new URL(hint)
      } catch {
        return yield* fail(`the resource_metadata in WWW-Authenticate is not a URL: ${hint}`)
      }
      // The challenge comes from the server itself: its metadata must be its own to vouch for.
      if (hinted.origin !== new URL(serverUrl).origin) {
        return yield* fail(`the resource_metadata URL ${hint} is on another origin than the server`)
      }
    }
    return yield* firstDocument(client, serverUrl, resourceMetadataUrls(serverUrl, challenge), limits, fail)
  })

const checkResource = (
  found: { readonly url: string; readonly doc: Record<string, unknown> | null },
  serverUrl: string,
  fail: (reason: string) => DiscoveryFailed
): Effect.Effect<ResourceMetadata, DiscoveryFailed> => {
  const { doc, url } = found
  if (
    typeof doc !== "object" || doc === null || typeof doc.resource !== "string" ||
    !isStringArray(doc.authorization_servers) || doc.authorization_servers.length === 0 ||
    !optionalStrings(doc.scopes_supported)
  ) {
    return Effect.fail(fail(`${url} is not protected resource metadata (resource and authorization_servers required)`))
  }
  // RFC 9728 §3.3: metadata naming another resource must not be used.
  if (!resourceCovers(doc.resource, serverUrl)) {
    return Effect.fail(fail(`${url} describes the resource ${doc.resource}, not ${serverUrl}`))
  }
  return Effect.succeed({
    resource: doc.resource,
    authorization_servers: doc.authorization_servers,
    scopes_supported: doc.scopes_supported as ReadonlyArray<string> | undefined
  })
}

/**
 * Fetches and checks the protected resource metadata of `serverUrl`.
 *
 * @since 0.1.0
 * @category discovery
 */
export const discoverResource = (
  client: HttpClient.HttpClient,
  serverUrl: string,
  challenge: BearerChallenge,
  limits: Limits = {}
): Effect.Effect<ResourceMetadata, DiscoveryFailed | ForbiddenAddress> =>
  Effect.gen(function*() {
    const fail = (reason: string) => new DiscoveryFailed({ serverUrl, step: "protected-resource", reason })
    const found = yield* required(yield* resourceDocument(client, serverUrl, challenge, limits, fail), fail, "no metadata found")
    return yield* checkResource(found, serverUrl, fail)
  })

const checkServer = (
  found: { readonly url: string; readonly doc: Record<string, unknown> | null },
  issuer: string,
  fail: (reason: string) => DiscoveryFailed
): Effect.Effect<ServerMetadata, DiscoveryFailed> => {
  const { doc, url } = found
  if (
    typeof doc !== "object" || doc === null || typeof doc.issuer !== "string" ||
    typeof doc.token_endpoint !== "string" ||
    !(doc.authorization_endpoint === undefined || typeof doc.authorization_endpoint === "string") ||
    !(doc.registration_endpoint === undefined || typeof doc.registration_endpoint === "string") ||
    !optionalStrings(doc.code_challenge_methods_supported) ||
    !optionalStrings(doc.token_endpoint_auth_methods_supported) || !optionalStrings(doc.scopes_supported)
  ) {
    return Effect.fail(fail(`${url} is not authorization server metadata (issuer and token_endpoint required)`))
  }
  if (doc.issuer.replace(/\/+$/, "") !== issuer.replace(/\/+$/, "")) {
    return Effect.fail(fail(`${url} names the issuer ${doc.issuer}, not ${issuer}`))
  }
  const endpoints = [doc.token_endpoint, doc.authorization_endpoint, doc.registration_endpoint]
  for (const endpoint of endpoints) {
    if (endpoint !== undefined && !isSecureUrl(endpoint as string)) {
      return Effect.fail(fail(`${url} names an endpoint that is not an https URL: ${endpoint}`))
    }
  }
  return Effect.succeed(doc as unknown as ServerMetadata)
}

/**
 * The endpoints of accepted metadata pass the address policy, the
 * authorization endpoint (opened in the user's browser) included. A host
 * that does not resolve now is let through: its requests are checked again
 * when they are made, and fail there if it still does not.
 */
const checkEndpoints = (
  serverUrl: string,
  server: ServerMetadata,
  limits: Limits
): Effect.Effect<ServerMetadata, ForbiddenAddress> =>
  Effect.as(
    Effect.forEach(
      [server.token_endpoint, server.authorization_endpoint, server.registration_endpoint],
      (endpoint) =>
        endpoint === undefined
          ? Effect.void
          : AddressPolicy.check(serverUrl, endpoint, limits.allowPrivateNetworks).pipe(
            Effect.catchTag("TransportClosed", () => Effect.void)
          ),
      { discard: true }
    ),
    server
  )

/**
 * Fetches and checks the metadata of the authorization server `issuer`.
 * Its `issuer` must equal the one asked for (RFC 8414 §3.3) and its
 * endpoints must be https (http only on loopback). The issuer and the
 * endpoints must pass the address policy (`AddressPolicy.check`).
 *
 * @since 0.1.0
 * @category discovery
 */
export const discoverServer = (
  client: HttpClient.HttpClient,
  serverUrl: string,
  issuer: string,
  limits: Limits = {}
): Effect.Effect<ServerMetadata, DiscoveryFailed | ForbiddenAddress> =>
  Effect.gen(function*() {
    const fail = (reason: string) => new DiscoveryFailed({ serverUrl, step: "authorization-server", reason })
    if (!isSecureUrl(issuer)) return yield* fail(`the authorization server ${issuer} is not an https URL`)
    const found = yield* firstDocument(client, serverUrl, serverMetadataUrls(issuer), limits, fail)
    const server = yield* checkServer(yield* required(found, fail, `no metadata found for ${issuer}`), issuer, fail)
    return yield* checkEndpoints(serverUrl, server, limits)
  })

/**
 * Discovery as the 2025-03-26 revision has it, for a server of that
 * revision (no protected resource metadata): its origin is the
 * authorization server; the metadata is read at the origin's RFC 8414
 * location, and when the origin answers 4xx there too, the default
 * endpoints /authorize, /token and /register are used. That revision
 * requires PKCE of every client, so metadata that names no challenge
 * methods is taken to support S256. Tokens are still asked for the server
 * URL as the resource (RFC 8707 §2: a server that does not know the
 * parameter ignores it).
 */
const discoverAtOrigin = (
  client: HttpClient.HttpClient,
  serverUrl: string,
  limits: Limits,
  misses: ReadonlyArray<string>
): Effect.Effect<Discovered, DiscoveryFailed | ForbiddenAddress> =>
  Effect.gen(function*() {
    const origin = new URL(serverUrl).origin
    const fail = (reason: string) => new DiscoveryFailed({ serverUrl, step: "authorization-server", reason })
    const why = `no protected resource metadata (${misses.join("; ")})`
    if (!isSecureUrl(origin)) return yield* fail(`${why}, and the origin ${origin} is not https to fall back to`)
    const found = yield* firstDocument(client, serverUrl, [`${origin}/.well-known/oauth-authorization-server`], limits, fail)
    if (found._tag === "Missing" && !found.absent) {
      return yield* fail(`${why}, and no metadata at the origin (${found.misses.join("; ")})`)
    }
    const server: ServerMetadata = found._tag === "Found"
      ? yield* checkServer(found, origin, fail).pipe(
        Effect.flatMap((metadata) => checkEndpoints(serverUrl, metadata, limits)),
        Effect.map((metadata) => ({
          ...metadata,
          code_challenge_methods_supported: metadata.code_challenge_methods_supported ?? ["S256"]
        }))
      )
      : {
        issuer: origin,
        authorization_endpoint: `${origin}/authorize`,
        token_endpoint: `${origin}/token`,
        registration_endpoint: `${origin}/register`,
        code_challenge_methods_supported: ["S256"]
      }
    return {
      serverUrl,
      resource: { resource: canonicalResource(serverUrl), authorization_servers: [origin] },
      server
    }
  })

/**
 * Both steps: the resource metadata, then the first authorization server it
 * names. A server that publishes no resource metadata at all (its challenge
 * names none, and every well-known location answers 4xx) is one of the
 * 2025-03-26 revision: its origin is then the authorization server, with
 * the default endpoints when it publishes no metadata either. Resource
 * metadata that is there but unusable is never worked around. A URL that
 * fails the address policy fails the whole discovery with `ForbiddenAddress`
 * before it is requested.
 *
 * @since 0.1.0
 * @category discovery
 */
export const discover = (
  client: HttpClient.HttpClient,
  serverUrl: string,
  challenge: BearerChallenge,
  limits: Limits = {}
): Effect.Effect<Discovered, DiscoveryFailed | ForbiddenAddress> =>
  Effect.gen(function*() {
    const fail = (reason: string) => new DiscoveryFailed({ serverUrl, step: "protected-resource", reason })
    const found = yield* resourceDocument(client, serverUrl, challenge, limits, fail)
    if (found._tag === "Missing" && found.absent && challenge.resourceMetadata === undefined) {
      return yield* discoverAtOrigin(client, serverUrl, limits, found.misses)
    }
    const resource = yield* checkResource(yield* required(found, fail, "no metadata found"), serverUrl, fail)
    const server = yield* discoverServer(client, serverUrl, resource.authorization_servers[0]!, limits)
    return { serverUrl, resource, server }
  })
