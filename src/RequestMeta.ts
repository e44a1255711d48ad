/**
 * The request-metadata rules of the stateless era (2026-07-28), in one place
 * for the client that builds requests and the server that checks them: the
 * `_meta` keys every request carries, the routing headers a Streamable HTTP
 * POST mirrors from its body (`MCP-Protocol-Version`, `Mcp-Method`,
 * `Mcp-Name`, `Mcp-Param-{Name}`), how a header value is encoded (plain, or
 * the `=?base64?…?=` sentinel form), and which tool parameters a server may
 * mark with `x-mcp-header`.
 *
 * @since 0.1.0
 */

/**
 * The `_meta` keys of the stateless era.
 *
 * @since 0.1.0
 * @category constants
 */
export const MetaKey = {
  protocolVersion: "io.modelcontextprotocol/protocolVersion",
  clientCapabilities: "io.modelcontextprotocol/clientCapabilities",
  clientInfo: "io.modelcontextprotocol/clientInfo",
  logLevel: "io.modelcontextprotocol/logLevel",
  serverInfo: "io.modelcontextprotocol/serverInfo",
  subscriptionId: "io.modelcontextprotocol/subscriptionId"
} as const

/**
 * The request-metadata header names, lower case (HTTP header names compare
 * case-insensitively; effect/http hands them over in lower case).
 *
 * @since 0.1.0
 * @category constants
 */
export const Header = {
  protocolVersion: "mcp-protocol-version",
  method: "mcp-method",
  name: "mcp-name",
  paramPrefix: "mcp-param-"
} as const

/**
 * What a client says about itself on every request of the stateless era.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClientMeta {
  readonly protocolVersion: string
  readonly clientCapabilities: Readonly<Record<string, unknown>>
  readonly clientInfo?: { readonly name: string; readonly version: string } | undefined
  /** Asks for `notifications/message` on this request's stream, from this level up; none without it. */
  readonly logLevel?: string | undefined
}

/**
 * The `_meta` object a request carries: the version and capabilities always,
 * `clientInfo` and `logLevel` when given.
 *
 * @example
 * ```ts
 * import * as RequestMeta from "effect-mcp-transport/RequestMeta"
 *
 * const meta = RequestMeta.requestMeta({ protocolVersion: "2026-07-28", clientCapabilities: {} })
 * console.log(meta["io.modelcontextprotocol/protocolVersion"]) // "2026-07-28"
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const requestMeta = (meta: ClientMeta): Record<string, unknown> => {
  const out: Record<string, unknown> = {
    [MetaKey.protocolVersion]: meta.protocolVersion,
    [MetaKey.clientCapabilities]: meta.clientCapabilities
  }
  if (meta.clientInfo !== undefined) out[MetaKey.clientInfo] = meta.clientInfo
  if (meta.logLevel !== undefined) out[MetaKey.logLevel] = meta.logLevel
  return out
}

/**
 * What a server reads from a request's `_meta`: `Absent` when it names no
 * protocol version (a request of the handshake era), `Invalid` when it does
 * but a required field is missing or has the wrong type (`-32602`), `Valid`
 * with the client's metadata otherwise. The version is not checked here:
 * whether the server speaks it is the server's call (`-32022`).
 *
 * @since 0.1.0
 * @category models
 */
export type ReadMeta =
  | { readonly _tag: "Absent" }
  | { readonly _tag: "Invalid"; readonly missing: ReadonlyArray<string> }
  | { readonly _tag: "Valid"; readonly meta: ClientMeta }

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const ABSENT: ReadMeta = { _tag: "Absent" }

/**
 * Reads the stateless era's metadata from a request's params: the
 * protocol version key decides whether the request is of that era at all.
 *
 * @example
 * ```ts
 * import * as RequestMeta from "effect-mcp-transport/RequestMeta"
 *
 * RequestMeta.readMeta({ _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } })
 * // { _tag: "Invalid", missing: ["io.modelcontextprotocol/clientCapabilities"] }
 * RequestMeta.readMeta({ name: "echo" }) // { _tag: "Absent" }
 * ```
 *
 * @since 0.1.0
 * @category parsing
 */
export const readMeta = (params: unknown): ReadMeta => {
  if (!isObject(params) || !isObject(params._meta) || !(MetaKey.protocolVersion in params._meta)) return ABSENT
  const meta = params._meta
  const version = meta[MetaKey.protocolVersion]
  const capabilities = meta[MetaKey.clientCapabilities]
  const clientInfo = meta[MetaKey.clientInfo]
  const logLevel = meta[MetaKey.logLevel]
  const versionValid = typeof version === "string"
  const capabilitiesValid = isObject(capabilities)
  const infoValid = clientInfo === undefined ||
    (isObject(clientInfo) && typeof clientInfo.name === "string" && typeof clientInfo.version === "string")
  const levelValid = logLevel === undefined || typeof logLevel === "string"
  // Every stateless request is read here, and on its way in more than once: the list is made only when it has entries.
  if (!(versionValid && capabilitiesValid && infoValid && levelValid)) {
    const missing: Array<string> = []
    if (!versionValid) missing.push(MetaKey.protocolVersion)
    if (!capabilitiesValid) missing.push(MetaKey.clientCapabilities)
    if (!infoValid) missing.push(MetaKey.clientInfo)
    if (!levelValid) missing.push(MetaKey.logLevel)
    return { _tag: "Invalid", missing }
  }
  return {
    _tag: "Valid",
    meta: {
      protocolVersion: version as string,
      clientCapabilities: capabilities as Record<string, unknown>,
      clientInfo: clientInfo as ClientMeta["clientInfo"],
      logLevel: logLevel as string | undefined
    }
  }
}

/**
 * The `_meta` of a notification on a listen stream: the given one (if any)
 * with the subscription id added.
 *
 * @since 0.1.0
 * @category constructors
 */
export const withSubscriptionId = (meta: unknown, subscriptionId: string | number): Record<string, unknown> => ({
  ...(isObject(meta) ? meta : {}),
  [MetaKey.subscriptionId]: subscriptionId
})

/**
 * Requests the stateless era removed (answered -32601; on Streamable HTTP
 * with status 404): the handshake, `ping`, `logging/setLevel` and the
 * per-resource subscriptions (replaced by `subscriptions/listen`).
 *
 * @since 0.1.0
 * @category constants
 */
export const REMOVED_METHODS: ReadonlySet<string> = new Set([
  "initialize",
  "ping",
  "logging/setLevel",
  "resources/subscribe",
  "resources/unsubscribe"
])

/**
 * The methods whose `Mcp-Name` header is required, and the body field it mirrors.
 *
 * @since 0.1.0
 * @category constants
 */
export const NAMED_METHODS: Readonly<Record<string, "name" | "uri" | "taskId">> = {
  "tools/call": "name",
  "prompts/get": "name",
  "resources/read": "uri",
  // The tasks extension routes a task's requests to the instance holding it.
  "tasks/get": "taskId",
  "tasks/update": "taskId",
  "tasks/cancel": "taskId"
}

/**
 * The value of `Mcp-Name` for a request, before encoding: `params.name` of
 * `tools/call` and `prompts/get`, `params.uri` of `resources/read`,
 * `params.taskId` of `tasks/get`, `tasks/update` and `tasks/cancel`;
 * `undefined` for other methods or when the field is not a string.
 *
 * @since 0.1.0
 * @category getters
 */
export const nameOf = (method: string, params: unknown): string | undefined => {
  const field = NAMED_METHODS[method]
  if (field === undefined || typeof params !== "object" || params === null) return undefined
  const value = (params as Record<string, unknown>)[field]
  return typeof value === "string" ? value : undefined
}

// ---------------------------------------------------------------------------
// Header values

const SENTINEL_PREFIX = "=?base64?"
const SENTINEL_SUFFIX = "?="
const SENTINEL = /^=\?base64\?[A-Za-z0-9+/]*={0,2}\?=$/
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** Printable ASCII (space through tilde): what a header value may hold as is. */
const isPlainSafe = (value: string): boolean => {
  if (value.length === 0) return true
  if (value.charCodeAt(0) === 0x20 || value.charCodeAt(value.length - 1) === 0x20) return false
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    if (c < 0x20 || c > 0x7e) return false
  }
  return true
}

/**
 * Whether a header value has the sentinel form `=?base64?…?=` (exact, lower-case markers).
 *
 * @since 0.1.0
 * @category guards
 */
export const isSentinel = (value: string): boolean => value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX)

/**
 * A string as a header value: as is when it is printable ASCII without
 * leading or trailing whitespace, otherwise (and when it would itself read
 * as a sentinel) as `=?base64?<Base64 of its UTF-8 bytes>?=`.
 *
 * @example
 * ```ts
 * import * as RequestMeta from "effect-mcp-transport/RequestMeta"
 *
 * RequestMeta.encodeHeaderValue("get_weather") // "get_weather"
 * RequestMeta.encodeHeaderValue("café") // "=?base64?Y2Fmw6k=?="
 * ```
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeHeaderValue = (value: string): string =>
  isPlainSafe(value) && !isSentinel(value)
    ? value
    : SENTINEL_PREFIX + Buffer.from(value, "utf8").toString("base64") + SENTINEL_SUFFIX

/**
 * A header value as the string it stands for: the decoded text of a
 * sentinel, the value itself otherwise; `undefined` when it is a sentinel
 * whose Base64 is not valid, or the decoded bytes are not UTF-8, or a plain
 * value holds what a sender must encode (characters outside printable
 * ASCII, a leading or trailing space): a server rejects such a header
 * rather than compare it.
 *
 * @since 0.1.0
 * @category encoding
 */
export const decodeHeaderValue = (value: string): string | undefined => {
  if (!isSentinel(value)) return isPlainSafe(value) ? value : undefined
  if (!SENTINEL.test(value)) return undefined
  const payload = value.slice(SENTINEL_PREFIX.length, value.length - SENTINEL_SUFFIX.length)
  if (!BASE64.test(payload)) return undefined
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(payload, "base64"))
  } catch {
    return undefined
  }
}

/**
 * The types a parameter mirrored into a header may have.
 *
 * @since 0.1.0
 * @category models
 */
export type HeaderParamType = "string" | "integer" | "boolean"

/**
 * A body value as the text of its header, before encoding: strings as they
 * are, integers in decimal, booleans as `true`/`false`; `undefined` when the
 * value is absent, `null`, or not of the declared type (then no header is
 * sent, and the server sees the body alone).
 *
 * @since 0.1.0
 * @category encoding
 */
export const headerText = (value: unknown, type: HeaderParamType): string | undefined => {
  switch (type) {
    case "string":
      return typeof value === "string" ? value : undefined
    case "integer":
      return typeof value === "number" && Number.isSafeInteger(value) ? String(value) : undefined
    case "boolean":
      return typeof value === "boolean" ? String(value) : undefined
  }
}

/**
 * Whether a decoded header value stands for the body value: integers compare
 * numerically (`42.0` equals `42`) and only within the safe range, strings
 * and booleans exactly.
 *
 * @since 0.1.0
 * @category utils
 */
export const headerMatches = (decoded: string, bodyValue: unknown, type: HeaderParamType): boolean => {
  switch (type) {
    case "string":
      return typeof bodyValue === "string" && decoded === bodyValue
    case "boolean":
      return typeof bodyValue === "boolean" && decoded === String(bodyValue)
    case "integer": {
      // Outside the safe range, distinct integers compare equal after rounding.
      if (!Number.isSafeInteger(bodyValue) || !/^\s*-?\d+(\.0*)?\s*$/.test(decoded)) return false
      const parsed = Number(decoded)
      return Number.isSafeInteger(parsed) && parsed === bodyValue
    }
  }
}

// ---------------------------------------------------------------------------
// x-mcp-header

/**
 * A tool parameter a server asked to see as a header: `Mcp-Param-{header}`
 * carries the value at `path` in the arguments.
 *
 * @since 0.1.0
 * @category models
 */
export interface HeaderParam {
  /** The name as declared (the header is `Mcp-Param-` + this). */
  readonly header: string
  /** The chain of `properties` keys from the arguments object to the value. */
  readonly path: ReadonlyArray<string>
  readonly type: HeaderParamType
}

/**
 * What a tool's `inputSchema` says about header parameters: the parameters,
 * or why the annotations are not valid (then a client drops the tool).
 *
 * @since 0.1.0
 * @category models
 */
export type HeaderParams =
  | { readonly _tag: "Valid"; readonly params: ReadonlyArray<HeaderParam> }
  | { readonly _tag: "Invalid"; readonly reason: string }

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/** Keys whose values are data, not sub-schemas: an `x-mcp-header` inside them is not an annotation. */
const DATA_KEYWORDS = new Set(["enum", "const", "default", "examples", "required", "type", "description", "title"])

const NONE: HeaderParams = { _tag: "Valid", params: [] }

/**
 * Reads the `x-mcp-header` annotations of a tool's `inputSchema`. Valid:
 * a non-empty token (RFC 9110), unique ignoring case, on a `string`,
 * `integer` or `boolean` property reached through `properties` keys only
 * (not `items`, a combinator, a condition or a `$ref`).
 *
 * @example
 * ```ts
 * import * as RequestMeta from "effect-mcp-transport/RequestMeta"
 *
 * const found = RequestMeta.headerParams({
 *   type: "object",
 *   properties: { region: { type: "string", "x-mcp-header": "Region" } }
 * })
 * // { _tag: "Valid", params: [{ header: "Region", path: ["region"], type: "string" }] }
 * ```
 *
 * @since 0.1.0
 * @category parsing
 */
export const headerParams = (inputSchema: unknown): HeaderParams => {
  // Most tools declare no header at all: a string search skips the walk.
  if (typeof inputSchema !== "object" || inputSchema === null) return NONE
  if (!JSON.stringify(inputSchema).includes("x-mcp-header")) return NONE
  const params: Array<HeaderParam> = []
  const seen = new Set<string>()
  let invalid: string | undefined

  const visit = (node: unknown, path: ReadonlyArray<string> | undefined, where: string): void => {
    if (invalid !== undefined || typeof node !== "object" || node === null) return
    if (Array.isArray(node)) {
      node.forEach((item, i) => visit(item, undefined, `${where}[${i}]`))
      return
    }
    const schema = node as Record<string, unknown>
    if ("x-mcp-header" in schema) {
      const name = schema["x-mcp-header"]
      if (path === undefined || path.length === 0) {
        invalid = `x-mcp-header at ${where} is not on a property reached through "properties"`
        return
      }
      if (typeof name !== "string" || !TOKEN.test(name)) {
        invalid = `x-mcp-header ${JSON.stringify(name)} at ${where} is not a non-empty token`
        return
      }
      const type = schema.type
      if (type !== "string" && type !== "integer" && type !== "boolean") {
        invalid = `x-mcp-header "${name}" is on a property of type ${JSON.stringify(type)} (string, integer or boolean only)`
        return
      }
      const key = name.toLowerCase()
      if (seen.has(key)) {
        invalid = `x-mcp-header "${name}" is declared twice (names compare ignoring case)`
        return
      }
      seen.add(key)
      params.push({ header: name, path, type })
    }
    for (const [key, value] of Object.entries(schema)) {
      if (key === "x-mcp-header" || DATA_KEYWORDS.has(key)) continue
      if (key === "properties" && typeof value === "object" && value !== null && !Array.isArray(value)) {
        for (const [prop, child] of Object.entries(value as Record<string, unknown>)) {
          visit(child, path === undefined ? undefined : [...path, prop], `${where}.properties.${prop}`)
        }
      } else {
        visit(value, undefined, `${where}.${key}`)
      }
    }
  }
  visit(inputSchema, [], "inputSchema")
  return invalid !== undefined ? { _tag: "Invalid", reason: invalid } : { _tag: "Valid", params }
}

const valueAt = (args: unknown, path: ReadonlyArray<string>): unknown => {
  let node = args
  for (const key of path) {
    if (typeof node !== "object" || node === null || Array.isArray(node)) return undefined
    node = (node as Record<string, unknown>)[key]
  }
  return node
}

/**
 * The `Mcp-Param-*` headers for a call's arguments: one per parameter that
 * has a value of its type, encoded; none for absent or `null` values.
 *
 * @since 0.1.0
 * @category constructors
 */
export const paramHeaders = (params: ReadonlyArray<HeaderParam>, args: unknown): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const param of params) {
    const text = headerText(valueAt(args, param.path), param.type)
    if (text !== undefined) out[Header.paramPrefix + param.header.toLowerCase()] = encodeHeaderValue(text)
  }
  return out
}

/**
 * The body value a header parameter mirrors (for a server that checks it).
 *
 * @since 0.1.0
 * @category getters
 */
export const paramValue = (param: HeaderParam, args: unknown): unknown => valueAt(args, param.path)

/**
 * The standard routing headers of one POST: `MCP-Protocol-Version`,
 * `Mcp-Method`, and `Mcp-Name` for the methods that name a target.
 *
 * @example
 * ```ts
 * import * as RequestMeta from "effect-mcp-transport/RequestMeta"
 *
 * RequestMeta.standardHeaders("2026-07-28", "tools/call", { name: "echo" })
 * // { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "echo" }
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const standardHeaders = (protocolVersion: string, method: string, params: unknown): Record<string, string> => {
  const out: Record<string, string> = { [Header.protocolVersion]: protocolVersion, [Header.method]: method }
  const name = nameOf(method, params)
  if (name !== undefined) out[Header.name] = encodeHeaderValue(name)
  return out
}
