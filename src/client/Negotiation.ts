/**
 * Which protocol era a server speaks, decided from what one probe got back.
 *
 * A dual-era client opens with a modern request (`server/discover` carrying
 * the stateless `_meta`) and hands what came back to `classify`, a pure
 * function from the probe's outcome to a verdict: stay modern, retry modern
 * with another revision, fall back to the `initialize` handshake, or fail.
 * No transport decides the era on its own, so the rules live here once and
 * are tested over the whole response space. `EraCache` remembers the
 * verdict per server so later connections skip the probe.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Exit from "effect/Exit"
import {
  HeaderMismatch,
  HttpError,
  MissingClientCapability,
  type RequestError,
  truncate,
  UnsupportedProtocolVersion
} from "../McpError.ts"
import * as ProtocolVersion from "../ProtocolVersion.ts"
import { isNeutralStatus } from "./internal/NeutralStatus.ts"

export {
  CurrentEraCache,
  type EraCache,
  type EraEntry,
  get,
  global,
  identityOfHttp,
  identityOfStdio,
  invalidate,
  make,
  set
} from "./internal/EraCache.ts"

// ---------------------------------------------------------------------------
// Input and verdict

/**
 * What the era probe got back.
 *
 * - `Answered`: a JSON-RPC result to the probe.
 * - `RpcError`: a JSON-RPC error response delivered normally (stdio, or the
 *   body of an HTTP 200).
 * - `HttpStatus`: a non-2xx HTTP answer, with its body as text.
 *   `contentType` is kept for diagnostics only: servers and proxies mislabel
 *   error bodies, so the body alone decides.
 * - `Timeout`: no answer in time.
 * - `TransportFailure`: the network failed, the connection was refused, the
 *   process exited or the transport closed.
 *
 * @since 0.1.0
 * @category models
 */
export type ProbeOutcome = Data.TaggedEnum<{
  Answered: { readonly result: unknown }
  RpcError: { readonly code: number; readonly message: string; readonly data?: unknown }
  HttpStatus: {
    readonly status: number
    readonly contentType?: string | undefined
    readonly body: string
    /** The answer's `Retry-After`, as `HttpError.retryAfterMs`. */
    readonly retryAfterMs?: number | undefined
  }
  Timeout: {}
  TransportFailure: { readonly error: unknown }
}>

/**
 * Constructors and matchers (`$is`, `$match`) for `ProbeOutcome`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const ProbeOutcome = Data.taggedEnum<ProbeOutcome>()

/**
 * What to do after the probe.
 *
 * - `Modern`: the server is modern; use `version` (always one the client
 *   speaks). `discover` is the `DiscoverResult` when the probe got one.
 * - `RetryModern`: the server refused the requested revision (`-32022`) but
 *   lists `version`, a stateless revision the client speaks (another one
 *   when it lists one, else the refused one itself): probe again once with
 *   it. A second refusal is a failure, not another retry.
 * - `Legacy`: the server is not modern; run the `initialize` handshake.
 *   `reason` says why, for logs.
 * - `Fail`: no fallback is safe (authorization needed, server error, no
 *   answer on HTTP, transport gone, no common revision); surface `error`.
 *
 * @since 0.1.0
 * @category models
 */
export type Verdict = Data.TaggedEnum<{
  Modern: { readonly version: string; readonly discover: unknown | undefined }
  RetryModern: { readonly version: string }
  Legacy: { readonly reason: string }
  Fail: { readonly reason: string; readonly error?: unknown }
}>

/**
 * Constructors and matchers (`$is`, `$match`) for `Verdict`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const Verdict = Data.taggedEnum<Verdict>()

/**
 * What `classify` needs.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClassifyInput {
  readonly transport: "http" | "stdio"
  /** The stateless revision the probe asked for. */
  readonly requested: string
  readonly outcome: ProbeOutcome
  /** The stateless revisions the client speaks, newest first. Default: `ProtocolVersion.STATELESS`. */
  readonly stateless?: ReadonlyArray<string> | undefined
  /** The handshake revisions the client speaks. Default: `ProtocolVersion.SUPPORTED`. */
  readonly legacy?: ReadonlyArray<string> | undefined
}

/**
 * What a probe request's exit is, as `classify` takes it: a result, a
 * JSON-RPC error, an HTTP status with its body, a timeout, or a failed
 * transport.
 *
 * @since 0.1.0
 * @category constructors
 */
export const outcomeOf = (exit: Exit.Exit<unknown, RequestError>): ProbeOutcome => {
  if (Exit.isSuccess(exit)) return ProbeOutcome.Answered({ result: exit.value })
  const error = Cause.squash(exit.cause) as RequestError
  switch (error._tag) {
    case "RpcError":
      return ProbeOutcome.RpcError({ code: error.code, message: error.rpcMessage, data: error.data })
    case "HttpError":
      return ProbeOutcome.HttpStatus({ status: error.status, body: error.body, retryAfterMs: error.retryAfterMs })
    case "RequestTimeout":
      return ProbeOutcome.Timeout()
    default:
      return ProbeOutcome.TransportFailure({ error })
  }
}

// ---------------------------------------------------------------------------
// Error codes

/**
 * The JSON-RPC error codes of the stateless era. Only a modern server sends
 * them (the range -32020…-32099 is reserved to the spec; the pre-final
 * draft numbers -32001/-32003/-32004 sit in the legacy range, whose codes
 * carry no meaning a receiver may rely on).
 *
 * @since 0.1.0
 * @category constants
 */
export const ModernCode = {
  headerMismatch: -32020,
  missingClientCapability: -32021,
  unsupportedProtocolVersion: -32022
} as const

const METHOD_NOT_FOUND = -32601

const isModernCode = (code: number): boolean =>
  code === ModernCode.headerMismatch || code === ModernCode.missingClientCapability ||
  code === ModernCode.unsupportedProtocolVersion

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const strings = (u: unknown): ReadonlyArray<string> | undefined =>
  Array.isArray(u) ? u.filter((v): v is string => typeof v === "string") : undefined

/**
 * The typed error for a JSON-RPC error of the stateless era: `-32020` is a
 * `HeaderMismatch`, `-32021` a `MissingClientCapability` (with
 * `data.requiredCapabilities`), `-32022` an `UnsupportedProtocolVersion`
 * (with `data.requested` and `data.supported`); `undefined` for any other
 * code. `rpcMessage` is the error's `message`; when omitted the error's
 * name stands in.
 *
 * @example
 * ```ts
 * import * as Negotiation from "effect-mcp-transport/client/Negotiation"
 *
 * const error = Negotiation.modernError(-32022, { requested: "2026-07-28", supported: ["2025-11-25"] }, "tools/list")
 * console.log(error?._tag) // "UnsupportedProtocolVersion"
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export const modernError = (
  code: number,
  data: unknown,
  method: string,
  rpcMessage?: string
): HeaderMismatch | MissingClientCapability | UnsupportedProtocolVersion | undefined => {
  const fields = isRecord(data) ? data : {}
  switch (code) {
    case ModernCode.headerMismatch:
      return new HeaderMismatch({ method, rpcMessage: rpcMessage ?? "Header mismatch", data })
    case ModernCode.missingClientCapability:
      return new MissingClientCapability({
        method,
        requiredCapabilities: isRecord(fields.requiredCapabilities) ? fields.requiredCapabilities : {},
        rpcMessage: rpcMessage ?? "Missing required client capability"
      })
    case ModernCode.unsupportedProtocolVersion:
      return new UnsupportedProtocolVersion({
        requested: typeof fields.requested === "string" ? fields.requested : "(not stated)",
        supported: strings(fields.supported) ?? []
      })
    default:
      return undefined
  }
}

/**
 * The JSON-RPC error an HTTP error body carries: a JSON object whose
 * `error` has an integer `code` (the `message` is `""` when missing, and
 * `jsonrpc` and `id` are not required, since error bodies often omit the
 * `id`); `undefined` for an empty body, HTML, text or any other JSON.
 *
 * @example
 * ```ts
 * import * as Negotiation from "effect-mcp-transport/client/Negotiation"
 *
 * Negotiation.rpcErrorFromHttpBody(`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"}}`)
 * // { code: -32601, message: "Method not found", data: undefined }
 * Negotiation.rpcErrorFromHttpBody("<html>Not Found</html>") // undefined
 * ```
 *
 * @since 0.1.0
 * @category parsing
 */
export const rpcErrorFromHttpBody = (
  body: string
): { readonly code: number; readonly message: string; readonly data: unknown } | undefined => {
  const text = body.trim()
  if (!text.startsWith("{")) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return undefined
  }
  if (!isRecord(parsed) || !isRecord(parsed.error)) return undefined
  const { code, data, message } = parsed.error
  if (typeof code !== "number" || !Number.isInteger(code)) return undefined
  return { code, message: typeof message === "string" ? message : "", data }
}

// ---------------------------------------------------------------------------
// classify

interface Speaks {
  readonly requested: string
  readonly stateless: ReadonlyArray<string>
  readonly legacy: ReadonlyArray<string>
}

/** The modern and legacy revisions of `offered` the client speaks, newest first. */
const common = (speaks: Speaks, offered: ReadonlyArray<string>) => ({
  modern: speaks.stateless.filter((v) => offered.includes(v)),
  legacy: speaks.legacy.filter((v) => offered.includes(v))
})

const noCommonVersion = (speaks: Speaks, supported: ReadonlyArray<string>): Verdict =>
  Verdict.Fail({
    reason: `no protocol revision in common: the server supports ${supported.join(", ") || "none it named"}`,
    error: new UnsupportedProtocolVersion({ requested: speaks.requested, supported })
  })

const isDiscoverResult = (result: unknown): result is Record<string, unknown> & { supportedVersions: Array<unknown> } =>
  isRecord(result) && Array.isArray(result.supportedVersions)

/**
 * A result to the probe. A `DiscoverResult` names the revisions: the
 * requested one if listed, else the newest common stateless one, else the
 * handshake when a legacy one is listed. Any other result that carries a
 * `resultType` (required on every result from 2026-07-28) still comes from
 * a modern server; a result without one comes from a server that answered
 * an unknown method loosely, which no modern server does.
 */
const fromResult = (speaks: Speaks, result: unknown): Verdict => {
  if (isDiscoverResult(result)) {
    const offered = strings(result.supportedVersions) ?? []
    const found = common(speaks, offered)
    if (found.modern.includes(speaks.requested)) return Verdict.Modern({ version: speaks.requested, discover: result })
    if (found.modern.length > 0) return Verdict.Modern({ version: found.modern[0]!, discover: result })
    if (found.legacy.length > 0) {
      return Verdict.Legacy({ reason: `server/discover lists only handshake revisions (${found.legacy.join(", ")})` })
    }
    return noCommonVersion(speaks, offered)
  }
  if (isRecord(result) && typeof result.resultType === "string") {
    return Verdict.Modern({ version: speaks.requested, discover: undefined })
  }
  return Verdict.Legacy({ reason: "server/discover answered with a result that is not a DiscoverResult" })
}

/**
 * A `-32022` refusal: retry with a stateless revision the server supports
 * (the newest other one; the refused one when the server lists only that,
 * since the spec has the client pick from `supported` and retry, and a
 * refusal can be transient, e.g. a node behind a load balancer still being
 * upgraded), run the handshake when it supports only handshake revisions we
 * speak, and fail otherwise. The caller retries once, so a server that keeps
 * refusing what it lists cannot loop the client.
 */
const fromRefusal = (speaks: Speaks, data: unknown): Verdict => {
  const supported = (isRecord(data) ? strings(data.supported) : undefined) ?? []
  const found = common(speaks, supported)
  const other = found.modern.filter((v) => v !== speaks.requested)
  if (other.length > 0) return Verdict.RetryModern({ version: other[0]! })
  if (found.modern.length > 0) return Verdict.RetryModern({ version: speaks.requested })
  if (found.modern.length === 0 && found.legacy.length > 0) {
    return Verdict.Legacy({ reason: `the server supports only handshake revisions (${found.legacy.join(", ")})` })
  }
  return noCommonVersion(speaks, supported)
}

/**
 * A JSON-RPC error from a server: the codes of the stateless era mean a
 * modern server, whatever the transport. Every other code means a legacy
 * one, whichever code it is, since legacy servers answer an unknown method
 * before `initialize` in several ways.
 */
const fromRpcError = (speaks: Speaks, code: number, data: unknown, what: string): Verdict => {
  if (code === ModernCode.unsupportedProtocolVersion) return fromRefusal(speaks, data)
  if (isModernCode(code)) return Verdict.Modern({ version: speaks.requested, discover: undefined })
  return Verdict.Legacy({ reason: `${what} with JSON-RPC error ${code}` })
}

/** Statuses that say nothing about the era: asking again in the other era would hide the real problem. */
const isNoFallbackStatus = (status: number): boolean => isNeutralStatus(status) || status >= 500 || status < 400

const fromHttpStatus = (speaks: Speaks, status: number, body: string, retryAfterMs: number | undefined): Verdict => {
  if (isNoFallbackStatus(status)) {
    const reason = status === 401 || status === 403 || status === 407
      ? `HTTP ${status}: the server needs authorization`
      : `HTTP ${status}`
    const error = new HttpError({ status, body: truncate(body), method: "server/discover", retryAfterMs })
    return Verdict.Fail({ reason, error })
  }
  const error = rpcErrorFromHttpBody(body)
  if (error === undefined) return Verdict.Legacy({ reason: `HTTP ${status} without a JSON-RPC error body` })
  // A legacy server may answer 404 for an unknown session; only a modern one pairs 404 with -32601.
  if (status === 404 && error.code === METHOD_NOT_FOUND) {
    return Verdict.Modern({ version: speaks.requested, discover: undefined })
  }
  return fromRpcError(speaks, error.code, error.data, `HTTP ${status}`)
}

/**
 * The verdict on an era probe.
 *
 * Both transports: a `DiscoverResult` means modern (the requested revision
 * if listed, else the newest common stateless one; only handshake revisions
 * → legacy; none in common → fail); `-32022` → retry with a stateless
 * revision from `data.supported` (another one first, else the refused one),
 * or legacy when it lists only handshake revisions, or fail; `-32020`/`-32021` → modern; any other JSON-RPC error →
 * legacy.
 *
 * HTTP: a 4xx body is read before falling back; 404 with `-32601` is a
 * modern server lacking the method. A 4xx whose body is not a modern error
 * (empty, HTML, another code) → legacy. Never a fallback on 401, 403, 407
 * (authorization), 408, 429 (transient), 5xx, other non-4xx statuses, a
 * timeout or a transport failure: those fail.
 *
 * stdio: no answer in time → legacy (legacy servers may stay silent on an
 * unknown method before `initialize`); a transport failure (the process
 * died) fails.
 *
 * A requested revision the client does not speak fails at once, so a
 * verdict's `version` is always one the client speaks.
 *
 * @example
 * ```ts
 * import * as Negotiation from "effect-mcp-transport/client/Negotiation"
 *
 * const verdict = Negotiation.classify({
 *   transport: "http",
 *   requested: "2026-07-28",
 *   outcome: Negotiation.ProbeOutcome.HttpStatus({ status: 400, body: "Bad Request: No valid session ID" })
 * })
 * console.log(verdict._tag) // "Legacy"
 * ```
 *
 * @since 0.1.0
 * @category classification
 */
export const classify = (input: ClassifyInput): Verdict => {
  const speaks: Speaks = {
    requested: input.requested,
    stateless: input.stateless ?? ProtocolVersion.STATELESS,
    legacy: input.legacy ?? ProtocolVersion.SUPPORTED
  }
  if (!speaks.stateless.includes(input.requested)) {
    return Verdict.Fail({ reason: `the probe asked for ${input.requested}, a stateless revision this client does not speak` })
  }
  const outcome = input.outcome
  switch (outcome._tag) {
    case "Answered":
      return fromResult(speaks, outcome.result)
    case "RpcError":
      return fromRpcError(speaks, outcome.code, outcome.data, "server/discover answered")
    case "HttpStatus":
      return input.transport === "http"
        ? fromHttpStatus(speaks, outcome.status, outcome.body, outcome.retryAfterMs)
        : Verdict.Fail({ reason: `an HTTP status (${outcome.status}) on a stdio transport` })
    case "Timeout":
      return input.transport === "stdio"
        ? Verdict.Legacy({ reason: "no answer to server/discover in time" })
        : Verdict.Fail({ reason: "no answer to server/discover in time" })
    case "TransportFailure":
      return Verdict.Fail({ reason: "the transport failed during the probe", error: outcome.error })
  }
}
