/**
 * Which era serves a Streamable HTTP POST, decided once per request from the
 * `MCP-Protocol-Version` header and the body's `_meta` together.
 *
 * The two must agree wherever the request goes: `McpServer` serves any
 * request whose `_meta` names a protocol version with the stateless era's
 * rules, while a gateway in front routes and authorizes on the headers. A
 * body naming 2026-07-28 under a 2025-11-25 header (or the reverse) would
 * reach a session's handler without the stateless era's header checks, and
 * the gateway would have judged another request than the one that runs. So
 * a `_meta` version the header does not repeat is 400 with -32020 on every
 * route, session or not; a `_meta` version that reaches the sessions anyway
 * (an endpoint or handler that does not serve the stateless era) is 400
 * with -32600, the handshake era's answer to a version it does not serve;
 * everything else goes where the header says.
 *
 * Also refused before anything else: a routing header sent on more than one
 * line. Node joins repeated lines into `"a, b"`, while an intermediary that
 * reads the first line sees `a`: the two would compare different values.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as JsonRpc from "../../JsonRpc.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import type { Env } from "./Guard.ts"
import * as MetaHeaders from "./MetaHeaders.ts"
import type { RequestHeaders } from "./RequestHeaders.ts"

export type Route =
  | { readonly _tag: "Stateless" }
  | { readonly _tag: "Sessions" }
  | { readonly _tag: "Refused"; readonly response: HttpServerResponse.HttpServerResponse }

const STATELESS: Route = { _tag: "Stateless" }
const SESSIONS: Route = { _tag: "Sessions" }

const refused = (id: JsonRpc.RequestId | null, rejection: MetaHeaders.Rejection): Route => ({
  _tag: "Refused",
  response: HttpServerResponse.jsonUnsafe(JsonRpc.failure(id, rejection.code, rejection.message, rejection.data), {
    status: rejection.status
  })
})

/** Whether the endpoint serves a POST with this header statelessly (its eras, the handler's and the header decide). */
export const servesStateless = (env: Env, headers: RequestHeaders): boolean => {
  switch (env.config.eras) {
    case "legacy":
      return false
    case "modern":
      return true
    case "both":
      return env.handler.stateless === true && MetaHeaders.isStatelessVersion(headers[RequestMeta.Header.protocolVersion])
  }
}

const NO_VERSION = Symbol("no _meta version")

/** What the params' `_meta` names as the protocol version, whatever its type; `NO_VERSION` when the key is absent. */
const metaVersion = (params: unknown): unknown => {
  if (typeof params !== "object" || params === null) return NO_VERSION
  const meta = (params as { readonly _meta?: unknown })._meta
  if (typeof meta !== "object" || meta === null || !(RequestMeta.MetaKey.protocolVersion in meta)) return NO_VERSION
  return (meta as Record<string, unknown>)[RequestMeta.MetaKey.protocolVersion]
}

const idOf = (m: JsonRpc.Classified, single: boolean): JsonRpc.RequestId | null =>
  single && m._tag === "Request" ? m.message.id : null

/**
 * The route of a POST whose body is decoded into `messages` (one, or a batch).
 * The header check comes first: it holds on every route.
 */
export const decide = (env: Env, headers: RequestHeaders, messages: ReadonlyArray<JsonRpc.Classified>): Route =>
  route(env, headers, messages, servesStateless(env, headers))

/**
 * The same rules for a POST to a session-only endpoint (the 2024-11-05
 * HTTP+SSE messages path): `undefined` when it may go to its session.
 */
export const checkSessionOnly = (
  env: Env,
  headers: RequestHeaders,
  messages: ReadonlyArray<JsonRpc.Classified>
): HttpServerResponse.HttpServerResponse | undefined => {
  const decided = route(env, headers, messages, false)
  return decided._tag === "Refused" ? decided.response : undefined
}

const route = (
  env: Env,
  headers: RequestHeaders,
  messages: ReadonlyArray<JsonRpc.Classified>,
  stateless: boolean
): Route => {
  const header = headers[RequestMeta.Header.protocolVersion]
  const single = messages.length === 1
  let named: { readonly message: JsonRpc.Classified; readonly version: unknown } | undefined
  for (const m of messages) {
    if (m._tag !== "Request" && m._tag !== "Notification") continue
    const version = metaVersion(m.message.params)
    if (version === NO_VERSION) continue
    if (version !== header) {
      return refused(idOf(m, single), {
        status: 400,
        code: JsonRpc.ErrorCode.HeaderMismatch,
        message: header === undefined
          ? "MCP-Protocol-Version header is required: the request's _meta names a protocol version"
          : `MCP-Protocol-Version header ${JSON.stringify(header)} does not match _meta protocol version ${
            JSON.stringify(version)
          }`,
        data: { header: "MCP-Protocol-Version" }
      })
    }
    named ??= { message: m, version }
  }
  if (stateless) return STATELESS
  if (named === undefined) return SESSIONS
  // Header and `_meta` agree on a revision this endpoint does not serve statelessly: a session's
  // handler must not serve it by its `_meta` alone. The answer is the handshake era's 400 (-32600),
  // not -32022, so a client that speaks both eras falls back to `initialize`.
  const requested = named.version as string
  return refused(idOf(named.message, single), {
    status: 400,
    code: JsonRpc.ErrorCode.InvalidRequest,
    message: env.config.protocolVersions.includes(requested)
      ? `Invalid Request: a request whose _meta names protocol revision ${requested} is not served here (send initialize)`
      : "Unsupported MCP-Protocol-Version",
    data: { requested, supported: env.config.protocolVersions }
  })
}

/** The routing headers: those an intermediary may route or authorize on. */
const isRoutingHeader = (lower: string): boolean =>
  lower === RequestMeta.Header.protocolVersion || lower === RequestMeta.Header.method ||
  lower === RequestMeta.Header.name || lower.startsWith(RequestMeta.Header.paramPrefix)

/**
 * Whether a raw header name starts with `mcp-` in any case, as every routing
 * header does: the others (most of a request's) are not lowercased to be told apart.
 */
const startsWithMcp = (sent: string): boolean =>
  sent.charCodeAt(3) === 45 && // "-"
  (sent.charCodeAt(0) | 32) === 109 && // "m"
  (sent.charCodeAt(1) | 32) === 99 && // "c"
  (sent.charCodeAt(2) | 32) === 112 // "p"

const canonical = (lower: string, sent: string): string => {
  switch (lower) {
    case RequestMeta.Header.protocolVersion:
      return "MCP-Protocol-Version"
    case RequestMeta.Header.method:
      return "Mcp-Method"
    case RequestMeta.Header.name:
      return "Mcp-Name"
    default:
      return `Mcp-Param-${sent.slice(RequestMeta.Header.paramPrefix.length)}`
  }
}

/**
 * A routing header sent on more than one line, read from the raw header
 * lines (`IncomingMessage.rawHeaders`); 400 with -32020 naming it. A
 * request whose server exposes no raw lines (not Node's) passes: its
 * headers were joined before this code sees them.
 */
export const repeatedHeader = (request: HttpServerRequest.HttpServerRequest): HttpServerResponse.HttpServerResponse | undefined => {
  const raw = (NodeHttpServerRequest.toIncomingMessage(request) as { readonly rawHeaders?: unknown } | undefined)?.rawHeaders
  if (!Array.isArray(raw)) return undefined
  // A few names at most: a list, not a `Set` to hash them into.
  let seen: Array<string> | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const sent = raw[i]
    if (typeof sent !== "string" || sent.length < 8 || !startsWithMcp(sent)) continue
    // Most clients send these names in lower case already (fetch and undici do): those are not copied.
    const lower = sent === RequestMeta.Header.protocolVersion || sent === RequestMeta.Header.method ||
        sent === RequestMeta.Header.name
      ? sent
      : sent.toLowerCase()
    if (!isRoutingHeader(lower)) continue
    seen ??= []
    if (seen.includes(lower)) {
      const name = canonical(lower, sent)
      return HttpServerResponse.jsonUnsafe(
        JsonRpc.failure(null, JsonRpc.ErrorCode.HeaderMismatch, `${name} header is sent more than once`, { header: name }),
        { status: 400 }
      )
    }
    seen.push(lower)
  }
  return undefined
}
