/**
 * The checks a stateless-era (2026-07-28) POST passes before its handler
 * runs: the routing headers against the body they mirror (`MCP-Protocol-
 * Version` against `_meta`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` after
 * decoding the Base64 sentinel form), the revision, the methods the era
 * removed, and the required `_meta` fields. Each failure names its HTTP
 * status and JSON-RPC error; the rules themselves live in `RequestMeta`.
 */
import * as JsonRpc from "../../JsonRpc.ts"
import * as ProtocolVersion from "../../ProtocolVersion.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import type { RequestHeaders } from "./RequestHeaders.ts"

export interface Rejection {
  readonly status: number
  readonly code: number
  readonly message: string
  readonly data?: unknown
}

const mismatch = (header: string, message: string): Rejection => ({
  status: 400,
  code: JsonRpc.ErrorCode.HeaderMismatch,
  message,
  data: { header }
})

/** The version a request asks for, unsupported: -32022 naming what is supported. */
export const unsupported = (requested: unknown, supported: ReadonlyArray<string>): Rejection => ({
  status: 400,
  code: JsonRpc.ErrorCode.UnsupportedProtocolVersion,
  message: "Unsupported protocol version",
  data: { supported, requested }
})

/**
 * A POST of a modern-only endpoint that is not of the stateless era: an
 * `initialize` or an older `MCP-Protocol-Version` learns the supported
 * revisions (-32022); a POST without the header is told it is required (-32020).
 */
export const notStateless = (
  version: string | undefined,
  message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification,
  supported: ReadonlyArray<string>
): Rejection => {
  if (message.method === "initialize") {
    const requested = (message.params as { protocolVersion?: unknown } | undefined)?.protocolVersion
    return unsupported(requested ?? version ?? null, supported)
  }
  if (version === undefined) return mismatch("MCP-Protocol-Version", "MCP-Protocol-Version header is required")
  return unsupported(version, supported)
}

/**
 * The checks that need only the request and its headers, in order: the
 * version header against `_meta`, the version, `Mcp-Method`, `Mcp-Name`,
 * the removed methods (404 with -32601), the required `_meta` fields.
 */
export const checkRequest = (
  headers: RequestHeaders,
  request: JsonRpc.JsonRpcRequest,
  supported: ReadonlyArray<string>
): Rejection | undefined => {
  const version = headers[RequestMeta.Header.protocolVersion]
  if (version === undefined) return mismatch("MCP-Protocol-Version", "MCP-Protocol-Version header is required")
  const meta = RequestMeta.readMeta(request.params)
  const bodyVersion = meta._tag === "Valid" ? meta.meta.protocolVersion : undefined
  if (bodyVersion !== undefined && bodyVersion !== version) {
    return mismatch(
      "MCP-Protocol-Version",
      `MCP-Protocol-Version header ${JSON.stringify(version)} does not match _meta protocol version ${JSON.stringify(bodyVersion)}`
    )
  }
  if (!supported.includes(version)) return unsupported(version, supported)

  const method = headers[RequestMeta.Header.method]
  if (method === undefined) return mismatch("Mcp-Method", "Mcp-Method header is required")
  if (method !== request.method) {
    return mismatch("Mcp-Method", `Mcp-Method header ${JSON.stringify(method)} does not match method ${JSON.stringify(request.method)}`)
  }
  if (request.method in RequestMeta.NAMED_METHODS) {
    const header = headers[RequestMeta.Header.name]
    if (header === undefined) return mismatch("Mcp-Name", `Mcp-Name header is required for ${request.method}`)
    const name = RequestMeta.decodeHeaderValue(header)
    if (name === undefined) return mismatch("Mcp-Name", "Mcp-Name header is not a valid header value (or its Base64 is invalid)")
    if (name !== RequestMeta.nameOf(request.method, request.params)) {
      return mismatch("Mcp-Name", `Mcp-Name header does not match params.${RequestMeta.NAMED_METHODS[request.method]}`)
    }
  }
  if (RequestMeta.REMOVED_METHODS.has(request.method)) {
    return {
      status: 404,
      code: JsonRpc.ErrorCode.MethodNotFound,
      message: "Method not found",
      data: { method: request.method }
    }
  }
  if (meta._tag !== "Valid") {
    const missing = meta._tag === "Invalid"
      ? meta.missing
      : [RequestMeta.MetaKey.protocolVersion, RequestMeta.MetaKey.clientCapabilities]
    return {
      status: 400,
      code: JsonRpc.ErrorCode.InvalidParams,
      message: `Missing or invalid _meta fields: ${missing.join(", ")}`,
      data: { missing }
    }
  }
  return undefined
}

// A tool's schema object is kept as listed until the tools change: what it declares is read once.
const declaredParams = new WeakMap<object, RequestMeta.HeaderParams>()
const headerParamsOf = (inputSchema: unknown): RequestMeta.HeaderParams => {
  if (typeof inputSchema !== "object" || inputSchema === null) return RequestMeta.headerParams(inputSchema)
  let declared = declaredParams.get(inputSchema)
  if (declared === undefined) {
    declared = RequestMeta.headerParams(inputSchema)
    declaredParams.set(inputSchema, declared)
  }
  return declared
}

/**
 * A `tools/call`'s `Mcp-Param-*` headers against its arguments, for the
 * tool's `x-mcp-header` parameters: a value the client mirrors (one of the
 * declared type) needs its header, matching once decoded (integers
 * numerically); a header with no such value in the body is a mismatch too.
 * A schema with invalid annotations declares nothing (clients drop such tools).
 */
export const checkParams = (headers: RequestHeaders, inputSchema: unknown, args: unknown): Rejection | undefined => {
  const declared = headerParamsOf(inputSchema)
  if (declared._tag !== "Valid") return undefined
  for (const param of declared.params) {
    const name = `Mcp-Param-${param.header}`
    const header = headers[RequestMeta.Header.paramPrefix + param.header.toLowerCase()]
    const value = RequestMeta.paramValue(param, args)
    const expected = RequestMeta.headerText(value, param.type)
    if (expected === undefined) {
      if (header !== undefined) return mismatch(name, `${name} header is present but the argument has no ${param.type} value`)
      continue
    }
    if (header === undefined) return mismatch(name, `${name} header is required: the argument has a value`)
    const decoded = RequestMeta.decodeHeaderValue(header)
    if (decoded === undefined) return mismatch(name, `${name} header is not a valid header value (or its Base64 is invalid)`)
    if (!RequestMeta.headerMatches(decoded, value, param.type)) {
      return mismatch(name, `${name} header does not match the argument`)
    }
  }
  return undefined
}

/** The status a stateless-era answer carries: 404 for -32601, 400 for the era's request errors, else 200. */
export const statusOf = (reply: JsonRpc.JsonRpcResponse): number => {
  if (!("error" in reply)) return 200
  switch (reply.error.code) {
    case JsonRpc.ErrorCode.MethodNotFound:
      return 404
    case JsonRpc.ErrorCode.HeaderMismatch:
    case JsonRpc.ErrorCode.MissingRequiredClientCapability:
    case JsonRpc.ErrorCode.UnsupportedProtocolVersion:
      return 400
    default:
      return 200
  }
}

/** Whether a `MCP-Protocol-Version` value names the stateless era. */
export const isStatelessVersion = (version: string | undefined): boolean =>
  version !== undefined && ProtocolVersion.eraOf(version) === "modern"
