/**
 * A one-shot call on the stateless revision (2026-07-28): one POST that
 * carries its own `_meta` and routing headers, with one retry for each
 * thing a server may ask to change, and the decision, from a refusal,
 * that the server is of the session era instead.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type { AuthError } from "../../AuthError.ts"
import * as JsonRpc from "../../JsonRpc.ts"
import { type HttpError, InvalidPayload, RpcError, UnsupportedProtocolVersion } from "../../McpError.ts"
import * as ProtocolVersion from "../../ProtocolVersion.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import * as Negotiation from "../Negotiation.ts"
import { isNeutralStatus } from "./NeutralStatus.ts"
import {
  type Answer,
  type CallContext,
  type ExchangeError,
  nextRequest,
  post,
  readAnswer,
  type ReadError
} from "./OneShotExchange.ts"
import type { RedirectRefused } from "../../McpError.ts"

/** What a refused stateless request says about the server (see `OneShot.FallbackDecision`). */
export type FallbackDecision =
  | { readonly _tag: "Fallback" }
  | { readonly _tag: "RetryWith"; readonly version: ProtocolVersion.StatelessVersion }
  | { readonly _tag: "Stay" }

const FALLBACK: FallbackDecision = { _tag: "Fallback" }
const STAY: FallbackDecision = { _tag: "Stay" }

/** `OneShot.decideFallback`. */
export const decideFallback = (
  answer: { readonly status: number; readonly body: string },
  requested: string
): FallbackDecision => {
  // The one classifier every client uses, so a one-shot call and McpClient never disagree.
  const verdict = Negotiation.classify({
    transport: "http",
    requested,
    // A later stateless date the caller asked for is spoken as this one is.
    stateless: ProtocolVersion.isStateless(requested) ? undefined : [requested, ...ProtocolVersion.STATELESS],
    outcome: Negotiation.ProbeOutcome.HttpStatus({ status: answer.status, body: answer.body })
  })
  switch (verdict._tag) {
    case "Legacy":
      return FALLBACK
    case "RetryModern":
      return { _tag: "RetryWith", version: verdict.version as ProtocolVersion.StatelessVersion }
    default:
      return STAY
  }
}

/** The refusal that sends an `auto` call to the session era, with what the server said. */
export class FallBack extends Data.TaggedError("FallBack")<{ readonly error: HttpError }> {}

/** Pages of `tools/list` read to find a tool's schema. */
const MAX_LIST_PAGES = 20

/** The JSON-RPC error in a body, when the body is one. */
const rpcErrorIn = (body: string): JsonRpc.JsonRpcErrorObject | undefined => {
  if (body.length === 0) return undefined
  const decoded = JsonRpc.decode(body)
  return decoded._tag === "Single" && decoded.message._tag === "Failure" ? decoded.message.message.error : undefined
}

/** A JSON-RPC error as the typed error that says what went wrong (the stateless era's codes read as McpClient reads them). */
const rpcFailure = (error: JsonRpc.JsonRpcErrorObject, request: JsonRpc.JsonRpcRequest, version: string) => {
  const typed = Negotiation.modernError(error.code, error.data, request.method, error.message)
  if (typed === undefined) return RpcError.fromObject(error, request.method, request.id)
  // The version this call asked for, whatever the server says it was asked.
  return typed._tag === "UnsupportedProtocolVersion"
    ? new UnsupportedProtocolVersion({ requested: version, supported: typed.supported })
    : typed
}

const withMeta = (context: CallContext, version: string, params: unknown): Record<string, unknown> => {
  const given = typeof params === "object" && params !== null ? params as Record<string, unknown> : {}
  const meta = RequestMeta.requestMeta({
    protocolVersion: version,
    clientCapabilities: context.capabilities,
    clientInfo: context.clientInfo
  })
  const own = given._meta
  return { ...given, _meta: typeof own === "object" && own !== null ? { ...own, ...meta } : meta }
}

/** One stateless request and its answer. */
const modernOnce = (
  context: CallContext,
  version: string,
  method: string,
  params: unknown,
  paramHeaders: Readonly<Record<string, string>> | undefined
): Effect.Effect<
  { readonly answer: Answer; readonly request: JsonRpc.JsonRpcRequest },
  ReadError | RedirectRefused | AuthError
> =>
  Effect.suspend(() => {
    const request = nextRequest(context, method, withMeta(context, version, params))
    const own = RequestMeta.standardHeaders(version, method, params)
    const headers = paramHeaders === undefined ? own : { ...own, ...paramHeaders }
    return Effect.flatMap(post(context, request, headers), (response) =>
      Effect.map(readAnswer(context, response, request), (answer) => ({ answer, request })))
  })

const mentionsParamHeader = (error: JsonRpc.JsonRpcErrorObject): boolean =>
  `${error.message} ${JSON.stringify(error.data) ?? ""}`.toLowerCase().includes(RequestMeta.Header.paramPrefix)

const argumentsOf = (params: unknown): unknown =>
  typeof params === "object" && params !== null ? (params as { arguments?: unknown }).arguments : undefined

const toolNameOf = (params: unknown): string | undefined => RequestMeta.nameOf("tools/call", params)

/** The `Mcp-Param-*` headers a schema asks for, or why it cannot say. */
const headersFromSchema = (
  schema: unknown,
  params: unknown
): Record<string, string> | InvalidPayload => {
  const found = RequestMeta.headerParams(schema)
  if (found._tag === "Invalid") return new InvalidPayload({ method: "tools/call", kind: "params", reason: found.reason })
  return RequestMeta.paramHeaders(found.params, argumentsOf(params))
}

// One generator function for each loop below, not one per call (docs/design.md, "Per-request code and the old generation").

/** Looks the tool up in `tools/list` (following pages) and returns its `inputSchema`, if listed. */
const lookUpSchema = Effect.fnUntraced(function*(
  context: CallContext,
  version: string,
  name: string
): Effect.fn.Return<unknown, ReadError | RedirectRefused | HttpError | RpcError | AuthError> {
  let cursor: string | undefined
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const { answer, request } = yield* modernOnce(
      context,
      version,
      "tools/list",
      cursor === undefined ? {} : { cursor },
      undefined
    )
    if (answer._tag === "Refused") return yield* answer.error
    if ("error" in answer.response) return yield* RpcError.fromObject(answer.response.error, request.method, request.id)
    const result = answer.response.result as { tools?: unknown; nextCursor?: unknown } | null
    const tools = Array.isArray(result?.tools) ? result.tools as ReadonlyArray<{ name?: unknown; inputSchema?: unknown }> : []
    const tool = tools.find((t) => typeof t === "object" && t !== null && t.name === name)
    if (tool !== undefined) return tool.inputSchema
    if (typeof result?.nextCursor !== "string") return undefined
    cursor = result.nextCursor
  }
  return undefined
})

/**
 * A call on the stateless revision, with its one retry for each thing a
 * server may ask to change: another stateless revision we speak (`-32022`),
 * or `Mcp-Param-*` headers for `tools/call` (`-32020`). With `fallback`, a
 * refusal that says the server is of the session era fails with `FallBack`.
 * The result is returned as the server sent it (its `resultType` is the
 * caller's to read).
 */
export const call = Effect.fnUntraced(function*(
  context: CallContext,
  origin: string,
  first: string,
  method: string,
  params: unknown,
  schema: unknown,
  auto: boolean,
  fallback: boolean
): Effect.fn.Return<unknown, ExchangeError | FallBack> {
  let version = first
  let retriedVersion = false
  let paramHeaders: Record<string, string> | undefined
  let retriedParams = method !== "tools/call"
  if (!retriedParams && schema !== undefined) {
    const built = headersFromSchema(schema, params)
    if (built instanceof InvalidPayload) return yield* built
    paramHeaders = built
    retriedParams = true
  }
  while (true) {
    const { answer, request } = yield* modernOnce(context, version, method, params, paramHeaders)
    let error: JsonRpc.JsonRpcErrorObject
    if (answer._tag === "Refused") {
      const decision = decideFallback(answer, version)
      if (decision._tag === "Fallback" && fallback) return yield* new FallBack({ error: answer.error })
      if (decision._tag === "RetryWith" && !retriedVersion) {
        retriedVersion = true
        version = decision.version
        continue
      }
      // Neutral statuses (credentials, a timeout, a rate limit) and server failures stay HTTP errors,
      // whatever their body: the status, and the wait a 429 asks for, are what matter.
      const status = answer.status
      const inBody = isNeutralStatus(status) || status >= 500 ? undefined : rpcErrorIn(answer.body)
      if (inBody === undefined) return yield* answer.error
      error = inBody
    } else if ("error" in answer.response) {
      error = answer.response.error
    } else {
      if (auto && ProtocolVersion.isStateless(version)) Negotiation.set(context.eras, origin, { era: "modern", version })
      return answer.response.result
    }
    // A stateless server's JSON-RPC error: it speaks this era.
    if (auto && ProtocolVersion.isStateless(version) && error.code !== JsonRpc.ErrorCode.UnsupportedProtocolVersion) {
      Negotiation.set(context.eras, origin, { era: "modern", version })
    }
    if (error.code === JsonRpc.ErrorCode.HeaderMismatch && !retriedParams && mentionsParamHeader(error)) {
      retriedParams = true
      const name = toolNameOf(params)
      const found = name === undefined ? undefined : yield* lookUpSchema(context, version, name)
      if (found !== undefined) {
        const built = headersFromSchema(found, params)
        if (!(built instanceof InvalidPayload) && Object.keys(built).length > 0) {
          paramHeaders = built
          continue
        }
      }
    }
    return yield* rpcFailure(error, request, version)
  }
})
