/**
 * JSON-RPC 2.0 envelopes as MCP uses them: shapes, ids, error codes and a fast
 * classifier for the hot path.
 *
 * The classifier is hand-written because it runs on every message. The same
 * shapes as Schemas live in `JsonRpcSchema.ts`, apart: loading `effect/Schema`
 * costs ~100 ms at start-up, which a stdio client that never decodes with it
 * should not pay.
 */

/**
 * The id of a request, echoed by its response: a string or a finite number.
 *
 * @since 0.1.0
 * @category models
 */
export type RequestId = string | number

/**
 * A request: a `method` to call, with an `id` the response will carry.
 *
 * @since 0.1.0
 * @category models
 */
export interface JsonRpcRequest {
  readonly jsonrpc: "2.0"
  readonly id: RequestId
  readonly method: string
  readonly params?: unknown
}

/**
 * A notification: a `method` to call, without an `id`; it gets no response.
 *
 * @since 0.1.0
 * @category models
 */
export interface JsonRpcNotification {
  readonly jsonrpc: "2.0"
  readonly method: string
  readonly params?: unknown
}

/**
 * The response of a request that succeeded, with its `result`.
 *
 * @since 0.1.0
 * @category models
 */
export interface JsonRpcSuccess {
  readonly jsonrpc: "2.0"
  readonly id: RequestId
  readonly result: unknown
}

/**
 * The `error` member of a failed response: an integer `code`, a `message` and optional `data`.
 *
 * `ErrorCode` lists the codes that appear on the wire.
 *
 * @since 0.1.0
 * @category models
 */
export interface JsonRpcErrorObject {
  readonly code: number
  readonly message: string
  readonly data?: unknown
}

/**
 * The response of a request that failed, with its `error`.
 *
 * @since 0.1.0
 * @category models
 */
export interface JsonRpcFailure {
  readonly jsonrpc: "2.0"
  /** `null` only when the request id could not be read (parse error, invalid request). */
  readonly id: RequestId | null
  readonly error: JsonRpcErrorObject
}

/**
 * A response: a success or a failure.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure

/**
 * Any single JSON-RPC message: a request, a notification or a response.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse

/**
 * Several messages sent as one JSON array (protocol 2025-03-26 only; later revisions send none).
 *
 * @since 0.1.0
 * @category models
 */
export type JsonRpcBatch = ReadonlyArray<JsonRpcMessage>

/**
 * Standard JSON-RPC codes and the MCP codes that appear on the wire.
 *
 * @since 0.1.0
 * @category utils
 */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** MCP (≤2025-11-25): request sent before the handshake finished, or to a disabled capability. */
  ConnectionClosed: -32000,
  RequestTimeout: -32001,
  ResourceNotFound: -32002,
  UrlElicitationRequired: -32042,
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022
} as const

// ---------------------------------------------------------------------------
// Constructors

/**
 * Builds a request; `params` is left out of the message when `undefined`.
 *
 * @example
 * ```ts
 * import * as JsonRpc from "effect-mcp-transport/JsonRpc"
 *
 * JsonRpc.request(1, "tools/list")
 * // { jsonrpc: "2.0", id: 1, method: "tools/list" }
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const request = (id: RequestId, method: string, params?: unknown): JsonRpcRequest =>
  params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params }

/**
 * Builds a notification; `params` is left out of the message when `undefined`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const notification = (method: string, params?: unknown): JsonRpcNotification =>
  params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params }

/**
 * Builds the successful response to request `id`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const success = (id: RequestId, result: unknown): JsonRpcSuccess => ({ jsonrpc: "2.0", id, result })

/**
 * Builds the failed response to request `id` (`null` when the request's id could not be read);
 * `data` is left out when `undefined`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const failure = (
  id: RequestId | null,
  code: number,
  message: string,
  data?: unknown
): JsonRpcFailure => ({
  jsonrpc: "2.0",
  id,
  error: data === undefined ? { code, message } : { code, message, data }
})

/**
 * The -32700 response to a frame that is not JSON; its id is always `null`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parseError = (data?: unknown): JsonRpcFailure => failure(null, ErrorCode.ParseError, "Parse error", data)

/**
 * The -32600 response to a message that is JSON but not a valid request.
 *
 * @since 0.1.0
 * @category constructors
 */
export const invalidRequest = (id: RequestId | null, data?: unknown): JsonRpcFailure =>
  failure(id, ErrorCode.InvalidRequest, "Invalid Request", data)

/**
 * The -32601 response to a request for a method nobody serves; `data` names the method.
 *
 * @since 0.1.0
 * @category constructors
 */
export const methodNotFound = (id: RequestId, method: string): JsonRpcFailure =>
  failure(id, ErrorCode.MethodNotFound, "Method not found", { method })

/**
 * The -32603 response to a request whose handling failed; carries no details unless `data` is given.
 *
 * @since 0.1.0
 * @category constructors
 */
export const internalError = (id: RequestId | null, data?: unknown): JsonRpcFailure =>
  failure(id, ErrorCode.InternalError, "Internal error", data)

// ---------------------------------------------------------------------------
// Classification (hot path)

/**
 * What `classify` makes of one JSON value: a message of one of the four kinds, or `Invalid`
 * with the reason and whatever of the id and kind could be read.
 *
 * @since 0.1.0
 * @category models
 */
export type Classified =
  | { readonly _tag: "Request"; readonly message: JsonRpcRequest }
  | { readonly _tag: "Notification"; readonly message: JsonRpcNotification }
  | { readonly _tag: "Success"; readonly message: JsonRpcSuccess }
  | { readonly _tag: "Failure"; readonly message: JsonRpcFailure }
  | {
    readonly _tag: "Invalid"
    readonly reason: string
    /** The message's id when it can be read, else `null`. */
    readonly id: RequestId | null
    /** The message has no `method`, so it can only be a (broken) response, to request `id` if that is known. */
    readonly response: boolean
  }

const isId = (u: unknown): u is RequestId =>
  typeof u === "string" || (typeof u === "number" && Number.isFinite(u))

const invalid = (reason: string, id: RequestId | null = null, response = false): Classified => ({
  _tag: "Invalid",
  reason,
  id,
  response
})

/**
 * Classifies one decoded JSON value as a JSON-RPC message, or says what is
 * wrong with it. Never throws. Extra members are kept as they are.
 *
 * @since 0.1.0
 * @category utils
 */
export const classify = (u: unknown): Classified => {
  if (typeof u !== "object" || u === null || Array.isArray(u)) {
    return invalid(Array.isArray(u) ? "a batch is not a single message" : "message is not an object")
  }
  const m = u as Record<string, unknown>
  const id = m.id
  const readableId = isId(id) ? id : null
  const method = m.method
  if (m.jsonrpc !== "2.0") return invalid("jsonrpc must be \"2.0\"", readableId, method === undefined)
  if (method !== undefined) {
    if (typeof method !== "string") return invalid("method must be a string", readableId)
    if (m.params !== undefined && (typeof m.params !== "object" || m.params === null)) {
      return invalid("params must be an object or an array", readableId)
    }
    if (!("id" in m)) return { _tag: "Notification", message: m as unknown as JsonRpcNotification }
    if (!isId(id)) return invalid("id must be a string or a number", null)
    return { _tag: "Request", message: m as unknown as JsonRpcRequest }
  }
  const hasResult = "result" in m
  const error = m.error
  if (hasResult && error !== undefined) {
    return invalid("a response has either result or error, not both", readableId, true)
  }
  if (hasResult) {
    if (!isId(id)) return invalid("a result response needs a string or number id", null, true)
    return { _tag: "Success", message: m as unknown as JsonRpcSuccess }
  }
  if (error !== undefined) {
    if (typeof error !== "object" || error === null) return invalid("error must be an object", readableId, true)
    const e = error as Record<string, unknown>
    if (typeof e.code !== "number" || !Number.isInteger(e.code)) {
      return invalid("error.code must be an integer", readableId, true)
    }
    if (typeof e.message !== "string") return invalid("error.message must be a string", readableId, true)
    if (id !== null && id !== undefined && !isId(id)) {
      return invalid("id must be a string, a number or null", null, true)
    }
    const normalized = id === undefined ? { ...m, id: null } : m
    return { _tag: "Failure", message: normalized as unknown as JsonRpcFailure }
  }
  return invalid("not a request, notification or response (no method, result or error)", readableId, true)
}

/**
 * What `decode` makes of one frame: a single message, a batch (each entry classified on its
 * own), or a `ParseError` when the text is not JSON.
 *
 * @since 0.1.0
 * @category models
 */
export type Decoded =
  | { readonly _tag: "Single"; readonly message: Classified }
  | { readonly _tag: "Batch"; readonly messages: ReadonlyArray<Classified> }
  | { readonly _tag: "ParseError"; readonly reason: string }

/**
 * Parses one frame (an NDJSON line or an HTTP body). Never throws.
 *
 * @since 0.1.0
 * @category utils
 */
export const decode = (text: string): Decoded => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    return { _tag: "ParseError", reason: e instanceof Error ? e.message : String(e) }
  }
  if (Array.isArray(value)) {
    return { _tag: "Batch", messages: value.map(classify) }
  }
  return { _tag: "Single", message: classify(value) }
}

/**
 * Whether a message is a request (it has a `method` and an `id`).
 *
 * @since 0.1.0
 * @category guards
 */
export const isRequest = (m: JsonRpcMessage): m is JsonRpcRequest => "method" in m && "id" in m

/**
 * Whether a message is a notification (it has a `method` and no `id`).
 *
 * @since 0.1.0
 * @category guards
 */
export const isNotification = (m: JsonRpcMessage): m is JsonRpcNotification => "method" in m && !("id" in m)

/**
 * Whether a message is a response (it has no `method`).
 *
 * @since 0.1.0
 * @category guards
 */
export const isResponse = (m: JsonRpcMessage): m is JsonRpcResponse => !("method" in m)
