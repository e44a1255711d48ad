/**
 * One MCP request on a Streamable HTTP endpoint, with no client to set up
 * and nothing left open: for scripts and serverless functions that call one
 * tool and are done.
 *
 * The stateless revision (2026-07-28) needs a single POST: the request
 * carries its own `_meta` (version, capabilities, client info) and the
 * routing headers. A server of the session era (2025-03-26 … 2025-11-25)
 * needs the handshake: `initialize`, `notifications/initialized`, the
 * request, and a DELETE that ends the session however the call ends. With
 * `protocol: "auto"` (the default) the stateless request goes first and the
 * session era is used only when the server's refusal says it does not speak
 * the stateless one; what was learnt is kept per origin for the next call.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Services from "effect/Context"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { constTrue } from "effect/Function"
import type * as Sse from "effect/encoding/Sse"
import * as HttpBody from "effect/http/HttpBody"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import type { AuthError } from "../AuthError.ts"
import { DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_REQUEST_TIMEOUT_MS } from "../Defaults.ts"
import type { Implementation } from "../Implementation.ts"
import * as JsonRpc from "../JsonRpc.ts"
import {
  HeaderMismatch,
  HttpError,
  InvalidPayload,
  MalformedMessage,
  MessageTooLarge,
  MissingClientCapability,
  NoResponse,
  type RedirectRefused,
  RequestTimeout,
  RpcError,
  type TransportClosed,
  truncate,
  UnsupportedProtocolVersion
} from "../McpError.ts"
import { group, type McpAuthError, McpProtocolError, type McpServerError, type McpTransportError } from "../McpErrorGroup.ts"
import * as ProtocolVersion from "../ProtocolVersion.ts"
import * as RequestMeta from "../RequestMeta.ts"
import type { OAuthProviderShape } from "./auth/OAuthProvider.ts"
import * as Authorized from "./internal/Authorized.ts"
import * as ClientSpans from "./internal/ClientSpans.ts"
import * as Http from "./internal/HttpExchange.ts"
import * as SseReader from "./internal/SseReader.ts"
import * as Negotiation from "./Negotiation.ts"

// ---------------------------------------------------------------------------
// Options and errors

/**
 * How a one-shot call is made. Redirects follow the transports' policy:
 * 307 and 308 on the same origin, at most 5; anything else fails with
 * `RedirectRefused`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * The revision to speak: `"auto"` (default) tries the newest stateless
   * revision and falls back to the session era when the server does not
   * speak it; a stateless revision (`"2026-07-28"`, or a later date) sends
   * that request only; a session-era revision (`"2025-11-25"`, …) runs the
   * handshake with it.
   */
  readonly protocol?: "auto" | ProtocolVersion.AnyVersion | (string & {}) | undefined
  /**
   * Bound on the whole call: handshake, request, retries, and a sign-in
   * with `auth`. A session opened on the way is still ended after it,
   * within `closeTimeout`. Default 30 seconds.
   */
  readonly timeout?: Duration.Input | undefined
  /** Extra headers on every HTTP request of the call, e.g. `Authorization`. Default none. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Headers computed per HTTP request (a refreshing token), applied over `headers`. Default none. */
  readonly requestHeaders?: Http.HeaderHook | undefined
  /** Who the client says it is. Default `{ name: "effect-mcp-transport", version: "0.1.0" }`. */
  readonly clientInfo?: Implementation | undefined
  /** The capabilities the request declares. Default `{}` (none). */
  readonly clientCapabilities?: Readonly<Record<string, unknown>> | undefined
  /** Largest message sent or accepted (JSON body or SSE event). Default 10 MiB. */
  readonly maxMessageBytes?: number | undefined
  /** Bound on the DELETE that ends a session-era session. Default 2 seconds. */
  readonly closeTimeout?: Duration.Input | undefined
  /**
   * The tool's `inputSchema`, for `tools/call` on the stateless revision:
   * the arguments its `x-mcp-header` properties name are sent as
   * `Mcp-Param-*` headers too. Without it, a server that needs them refuses
   * the call (`-32020`) and the schema is looked up with `tools/list`
   * before one retry. Default none.
   */
  readonly inputSchema?: unknown
  /**
   * OAuth 2.1 for a server behind the MCP authorization spec: every HTTP
   * request of the call carries the provider's bearer token, in either era;
   * a 401 runs discovery and sign-in (or a refresh) and sends the request
   * once more, a 403 `insufficient_scope` steps up. Keep one provider
   * across calls to reuse its tokens. Default none: a 401 fails as
   * `HttpError` with the server's hints.
   */
  readonly auth?: OAuthProviderShape | undefined
}

/**
 * The server needs more input before it can answer (`resultType:
 * "input_required"`): sampling, elicitation or roots, in rounds a one-shot
 * call does not run. `McpClient` runs them.
 *
 * @since 0.1.0
 * @category errors
 */
export class InputRequired extends Data.TaggedError("InputRequired")<{
  readonly method: string
  /** What the server asked for, as it sent it. */
  readonly inputRequests: unknown
}> {
  override get message(): string {
    return `${this.method} needs input rounds (resultType "input_required"), which a one-shot call does not run: use McpClient`
  }
}

/**
 * A result whose `resultType` is neither `complete` nor `input_required`.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnknownResultType extends Data.TaggedError("UnknownResultType")<{
  readonly method: string
  readonly resultType: unknown
}> {
  override get message(): string {
    return `${this.method} answered with an unknown resultType ${truncate(JSON.stringify(this.resultType) ?? "", 80)}`
  }
}

/**
 * What a one-shot call can fail with: the groups of `McpErrorGroup` (as
 * `McpClient`'s calls), and this module's own `InputRequired` and
 * `UnknownResultType`.
 *
 * @since 0.1.0
 * @category models
 */
export type OneShotError =
  | McpTransportError
  | McpServerError
  | McpProtocolError
  | McpAuthError
  | InputRequired
  | UnknownResultType

/** The failures inside the module, before they are grouped. */
type FlatOneShotError =
  | HttpError
  | RpcError
  | RequestTimeout
  | NoResponse
  | MalformedMessage
  | MessageTooLarge
  | TransportClosed
  | RedirectRefused
  | HeaderMismatch
  | MissingClientCapability
  | UnsupportedProtocolVersion
  | InvalidPayload
  | InputRequired
  | UnknownResultType
  | AuthError

/**
 * The result of `tools/call`: content blocks, and structured content when
 * the tool has an output schema. Fields the server adds are kept.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolResult {
  readonly content: ReadonlyArray<{ readonly type: string; readonly [key: string]: unknown }>
  readonly structuredContent?: unknown
  readonly isError?: boolean | undefined
  readonly [key: string]: unknown
}

// ---------------------------------------------------------------------------
// The fallback decision

/**
 * What a refused stateless request says about the server: `Fallback` (it
 * speaks only the session era: run the handshake), `RetryWith` (a stateless
 * server that named another stateless revision we speak), or `Stay` (a
 * stateless server's error, or a refusal that says nothing about the
 * revision: report it).
 *
 * @since 0.1.0
 * @category models
 */
export type FallbackDecision =
  | { readonly _tag: "Fallback" }
  | { readonly _tag: "RetryWith"; readonly version: ProtocolVersion.StatelessVersion }
  | { readonly _tag: "Stay" }

const FALLBACK: FallbackDecision = { _tag: "Fallback" }
const STAY: FallbackDecision = { _tag: "Stay" }

/** The JSON-RPC error in a body, when the body is one. */
const rpcErrorIn = (body: string): JsonRpc.JsonRpcErrorObject | undefined => {
  if (body.length === 0) return undefined
  const decoded = JsonRpc.decode(body)
  return decoded._tag === "Single" && decoded.message._tag === "Failure" ? decoded.message.message.error : undefined
}


/**
 * Decides, from the HTTP answer to a stateless request that was not 2xx,
 * whether the server is of the session era. Only a 4xx other than 401 and
 * 403 can say so, and only when its body is not a stateless server's error
 * (`-32020`, `-32021`, `-32022`, or `-32601` on a 404: a stateless server
 * without that method). A `-32022` that names another stateless revision we
 * speak asks for a retry with it; one that names only session-era
 * revisions we speak is a fallback. Timeouts and network failures never get
 * here: they are no answer at all.
 *
 * @example
 * ```ts
 * import * as OneShot from "effect-mcp-transport/client/OneShot"
 *
 * OneShot.decideFallback({ status: 404, body: "Not Found" }, "2026-07-28") // { _tag: "Fallback" }
 * OneShot.decideFallback({ status: 401, body: "" }, "2026-07-28") // { _tag: "Stay" }
 * ```
 *
 * @since 0.1.0
 * @category utils
 */
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

// ---------------------------------------------------------------------------
// What was learnt per origin, and the request ids

const processEras = Negotiation.make()

/**
 * Where `auto` calls remember, per origin, the era its server turned out to
 * speak, so the next call goes straight to it. Default: one cache for the
 * whole process. Provide another (`Negotiation.make()`) to start a test or
 * a group of calls from nothing, or to share what is learnt some other way.
 *
 * @since 0.1.0
 * @category references
 */
export class CurrentEras extends Services.Reference<Negotiation.EraCache>("effect-mcp-transport/client/OneShot/CurrentEras", {
  defaultValue: () => processEras
}) {}

/**
 * Forgets what `auto` calls learnt about servers in the process-wide cache
 * (their era, per origin): the next call to each probes again. A provided
 * `CurrentEras` is left alone.
 *
 * @since 0.1.0
 * @category utils
 */
export const forgetServers = (): void => processEras.entries.clear()

/**
 * Where the JSON-RPC ids of one-shot requests come from: `next` is called
 * once per request sent (`initialize` included).
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestIdSource {
  readonly next: () => JsonRpc.RequestId
}

/**
 * Ids counting up from 1.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRequestIds = (): RequestIdSource => {
  let last = 0
  return { next: () => ++last }
}

const processIds = makeRequestIds()

/**
 * The ids one-shot calls use. Default: one counter for the whole process,
 * so no two calls of a process share an id. Provide `makeRequestIds()` for
 * ids a test can predict.
 *
 * @since 0.1.0
 * @category references
 */
export class RequestIds extends Services.Reference<RequestIdSource>("effect-mcp-transport/client/OneShot/RequestIds", {
  defaultValue: () => processIds
}) {}

// ---------------------------------------------------------------------------
// One call's context

const DEFAULT_CLIENT_INFO: Implementation = { name: "effect-mcp-transport", version: "0.1.0" }
const EMPTY_CAPABILITIES: Readonly<Record<string, unknown>> = {}
const DEFAULT_CLOSE_TIMEOUT = Duration.seconds(2)
const DEFAULT_TIMEOUT = Duration.millis(DEFAULT_REQUEST_TIMEOUT_MS)
const ACCEPT = "application/json, text/event-stream"
const FIRST_VERSION_WITH_HEADER = "2025-06-18"
/** Bound on the body of a refusal: enough for any JSON-RPC error, read whole for the decision. */
const REFUSAL_BODY_LIMIT = 64 * 1024
/** Pages of `tools/list` read to find a tool's schema. */
const MAX_LIST_PAGES = 20

interface Context {
  readonly client: HttpClient.HttpClient
  readonly url: string
  readonly maxBytes: number
  /** The user's headers, lower-cased, with `accept`; used as they are when there is no hook. */
  readonly baseHeaders: Readonly<Record<string, string>>
  readonly hook: Http.HeaderHook | undefined
  readonly auth: OAuthProviderShape | undefined
  readonly clientInfo: Implementation
  readonly capabilities: Readonly<Record<string, unknown>>
  readonly closeTimeout: Duration.Input
  /** What `auto` calls learnt, per origin. */
  readonly eras: Negotiation.EraCache
  readonly ids: RequestIdSource
  /** The request that is (or was last) on the wire: what a timeout reports. */
  current: { method: string; id: JsonRpc.RequestId }
}

const lowerKeys = (record: Readonly<Record<string, string>> | undefined): Record<string, string> => {
  const out: Record<string, string> = { accept: ACCEPT }
  if (record !== undefined) for (const key of Object.keys(record)) out[key.toLowerCase()] = record[key]!
  return out
}

/** Headers of one POST: the user's, then the call's own over them. */
const headersFor = (
  context: Context,
  message: JsonRpc.JsonRpcMessage,
  own: Readonly<Record<string, string | undefined>>
): Effect.Effect<Record<string, string>> => {
  if (context.hook !== undefined) {
    return Http.assemble(
      { headers: context.baseHeaders, requestHeaders: context.hook },
      { verb: "POST", url: context.url, message },
      { accept: ACCEPT, ...own }
    )
  }
  const out: Record<string, string> = { ...context.baseHeaders }
  for (const key in own) {
    const value = own[key]
    if (value !== undefined) out[key] = value
  }
  return Effect.succeed(out)
}

/**
 * Sends one message; the answer comes back unread, whatever its status
 * (but for the 401 and 403 the provider, when there is one, answers).
 */
const post = (
  context: Context,
  message: JsonRpc.JsonRpcMessage,
  own: Readonly<Record<string, string | undefined>>
): Effect.Effect<HttpClientResponse.HttpClientResponse, TransportClosed | RedirectRefused | MessageTooLarge | AuthError> => {
  const body = HttpBody.text(JSON.stringify(message), "application/json")
  if (body.contentLength > context.maxBytes) {
    return Effect.fail(new MessageTooLarge({ limit: context.maxBytes, size: body.contentLength, direction: "outgoing" }))
  }
  const method = "method" in message ? message.method : undefined
  // The body carries the trace context of the call's span (when tracing); its size was checked without it.
  return ClientSpans.sending(message, (traced) =>
    Authorized.send(context.auth, context.url, (auth) =>
      Effect.flatMap(
        headersFor(context, traced, { ...own, ...auth }),
        (headers) =>
          Http.execute(
            context.client,
            HttpClientRequest.post(context.url, { headers, body: traced === message ? body : HttpBody.text(JSON.stringify(traced), "application/json") }),
            method
          )
      )))
}

// ---------------------------------------------------------------------------
// Reading an answer

/** What came back for a request: its response, or an HTTP refusal with the body read. */
type Answer =
  | { readonly _tag: "Response"; readonly response: JsonRpc.JsonRpcResponse }
  | { readonly _tag: "Refused"; readonly status: number; readonly body: string; readonly error: HttpError }

type ReadError = MalformedMessage | MessageTooLarge | NoResponse | TransportClosed

const sameId = (a: JsonRpc.RequestId | null, b: JsonRpc.RequestId) => a !== null && String(a) === String(b)

/**
 * The response to `request` in one frame, `undefined` when the frame holds
 * something else (a notification, an answer to another id). An error
 * without an id on the request's own channel is its error; a frame that is
 * not JSON, or a broken response naming the request, fails it.
 */
const responseIn = (
  text: string,
  request: JsonRpc.JsonRpcRequest
): JsonRpc.JsonRpcResponse | MalformedMessage | undefined => {
  const decoded = JsonRpc.decode(text)
  if (decoded._tag === "ParseError") {
    return MalformedMessage.answering(text, `invalid JSON: ${decoded.reason}`, request.method, request.id)
  }
  const messages = decoded._tag === "Single" ? [decoded.message] : decoded.messages
  for (const message of messages) {
    switch (message._tag) {
      case "Success":
        if (sameId(message.message.id, request.id)) return message.message
        break
      case "Failure":
        if (message.message.id === null || sameId(message.message.id, request.id)) return message.message
        break
      case "Invalid":
        if (message.response && (message.id === null || sameId(message.id, request.id))) {
          return MalformedMessage.answering(text, message.reason, request.method, request.id)
        }
    }
  }
  return undefined
}

const noResponse = (request: JsonRpc.JsonRpcRequest) => new NoResponse({ id: request.id, method: request.method })

const settle = (
  found: JsonRpc.JsonRpcResponse | MalformedMessage | undefined,
  request: JsonRpc.JsonRpcRequest
): Effect.Effect<JsonRpc.JsonRpcResponse, MalformedMessage | NoResponse> =>
  found === undefined
    ? Effect.fail(noResponse(request))
    : found instanceof MalformedMessage
    ? Effect.fail(found)
    : Effect.succeed(found)

/** The SSE events of a body read whole (its length declared and within the limit). */
const WHOLE_SSE_LIMIT = 64 * 1024

const readSse = (
  context: Context,
  response: HttpClientResponse.HttpClientResponse,
  request: JsonRpc.JsonRpcRequest
): Effect.Effect<JsonRpc.JsonRpcResponse, ReadError> => {
  const declared = Http.declaredLength(response)
  if (declared !== undefined && declared <= Math.min(context.maxBytes, WHOLE_SSE_LIMIT)) {
    return Effect.flatMap(Http.readText(response, context.maxBytes), (text) => {
      for (const event of SseReader.parseWhole(text, SseReader.makeCursor())) {
        if (!SseReader.isMessageEvent(event)) continue
        const found = responseIn(event.data, request)
        if (found !== undefined) return settle(found, request)
      }
      return Effect.fail(noResponse(request))
    })
  }
  return readSseStream(context, response, request)
}

/**
 * After the response arrived, the rest of a streamed SSE body is read on in
 * the background for at most this long: a body read to its end lets the
 * HTTP client reuse the connection, one dropped early costs a new one per
 * call. Servers end the stream right after the response, so the bound only
 * matters for one that does not.
 */
const DRAIN_TIMEOUT_MS = 1_000

/**
 * Reads a streamed SSE body up to the response to `request`, which the
 * caller gets at once; a detached fiber reads the rest (bounded by
 * DRAIN_TIMEOUT). Interrupting the caller before the response aborts the body.
 */
const readSseStream = (
  context: Context,
  response: HttpClientResponse.HttpClientResponse,
  request: JsonRpc.JsonRpcRequest
): Effect.Effect<JsonRpc.JsonRpcResponse, ReadError> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const outcome = yield* Deferred.make<JsonRpc.JsonRpcResponse, ReadError>()
      let answered = false
      const reading = SseReader.read(response.stream, SseReader.makeCursor(), {
        maxEventBytes: context.maxBytes,
        idleTimeoutMs: undefined,
        onEvent: (event: Sse.Event) => {
          if (answered || !SseReader.isMessageEvent(event)) return Effect.succeed(false)
          const found = responseIn(event.data, request)
          if (found === undefined) return Effect.succeed(false)
          answered = true
          return Effect.as(
            found instanceof MalformedMessage ? Deferred.fail(outcome, found) : Deferred.succeed(outcome, found),
            false
          )
        }
      })
      let drainTimer: ReturnType<typeof setTimeout> | undefined
      const fiber = yield* Effect.forkDetach(
        Effect.exit(reading).pipe(
          Effect.flatMap((exit) => {
            if (drainTimer !== undefined) clearTimeout(drainTimer)
            return Exit.isSuccess(exit) ? Deferred.fail(outcome, noResponse(request)) : Deferred.failCause(outcome, exit.cause)
          }),
          Effect.ensuring(Deferred.interrupt(outcome))
        )
      )
      return yield* restore(Deferred.await(outcome)).pipe(
        Effect.onInterrupt(() => Fiber.interrupt(fiber)),
        // The rest of the body is read on for a bounded time: a plain timer, as most bodies have ended already.
        Effect.ensuring(Effect.sync(() => {
          if (fiber.pollUnsafe() === undefined) drainTimer = setTimeout(() => fiber.interruptUnsafe(), DRAIN_TIMEOUT_MS)
        }))
      )
    })
  )

/** Reads the answer to a request: a 2xx body (JSON or SSE), or the body of a refusal. */
const readAnswer = (
  context: Context,
  response: HttpClientResponse.HttpClientResponse,
  request: JsonRpc.JsonRpcRequest
): Effect.Effect<Answer, ReadError> => {
  const status = response.status
  if (!Http.isSuccess(status)) {
    return Http.readText(response, REFUSAL_BODY_LIMIT).pipe(
      Effect.orElseSucceed(() => ""),
      Effect.map((body): Answer => ({
        _tag: "Refused",
        status,
        body,
        error: new HttpError({
          status,
          body: truncate(body.trim()),
          method: request.method,
          wwwAuthenticate: response.headers["www-authenticate"],
          mcpAuthServer: response.headers["mcp-auth-server"]
        })
      }))
    )
  }
  const type = Http.mediaType(response)
  const answered = (found: JsonRpc.JsonRpcResponse): Answer => ({ _tag: "Response", response: found })
  if (type === "text/event-stream") return Effect.map(readSse(context, response, request), answered)
  if (status === 202 || status === 204) return Effect.andThen(Http.discard(response), Effect.fail(noResponse(request)))
  return Effect.flatMap(Http.readText(response, context.maxBytes), (text) => {
    if (type !== "application/json" && !type.endsWith("+json")) {
      if (text.length === 0) return Effect.fail(noResponse(request))
      return Effect.fail(MalformedMessage.answering(text, `unexpected Content-Type "${type}"`, request.method, request.id))
    }
    if (text.trim().length === 0) return Effect.fail(noResponse(request))
    return Effect.map(settle(responseIn(text, request), request), answered)
  })
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

const nextRequest = (context: Context, method: string, params: unknown): JsonRpc.JsonRpcRequest => {
  const request = JsonRpc.request(context.ids.next(), method, params)
  context.current = request
  return request
}

// ---------------------------------------------------------------------------
// The stateless revision

/** The refusal that sends an `auto` call to the session era, with what the server said. */
class FallBack extends Data.TaggedError("FallBack")<{ readonly error: HttpError }> {}

const withMeta = (context: Context, version: string, params: unknown): Record<string, unknown> => {
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
  context: Context,
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

/** Looks the tool up in `tools/list` (following pages) and returns its `inputSchema`, if listed. */
const lookUpSchema = (
  context: Context,
  version: string,
  name: string
): Effect.Effect<unknown, ReadError | RedirectRefused | HttpError | RpcError | AuthError> =>
  Effect.gen(function*() {
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

/** A result of the stateless revision: complete (or without `resultType`), or a typed error. */
const completeResult = (
  result: unknown,
  method: string
): Effect.Effect<unknown, InputRequired | UnknownResultType> => {
  const resultType = typeof result === "object" && result !== null
    ? (result as { resultType?: unknown }).resultType
    : undefined
  if (resultType === undefined || resultType === "complete") return Effect.succeed(result)
  if (resultType === "input_required") {
    return Effect.fail(new InputRequired({ method, inputRequests: (result as { inputRequests?: unknown }).inputRequests }))
  }
  return Effect.fail(new UnknownResultType({ method, resultType }))
}

/**
 * A call on the stateless revision, with its one retry for each thing a
 * server may ask to change: another stateless revision we speak (`-32022`), or `Mcp-Param-*` headers for `tools/call` (`-32020`). With
 * `fallback`, a refusal that says the server is of the session era fails
 * with `FallBack`.
 */
const callModern = (
  context: Context,
  origin: string,
  first: string,
  method: string,
  params: unknown,
  schema: unknown,
  auto: boolean,
  fallback: boolean
): Effect.Effect<unknown, FlatOneShotError | FallBack> =>
  Effect.gen(function*() {
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
        // Credentials and server failures stay HTTP errors, whatever their body: the status is what matters.
        const status = answer.status
        const inBody = status === 401 || status === 403 || status >= 500 ? undefined : rpcErrorIn(answer.body)
        if (inBody === undefined) return yield* answer.error
        error = inBody
      } else if ("error" in answer.response) {
        error = answer.response.error
      } else {
        if (auto && ProtocolVersion.isStateless(version)) Negotiation.set(context.eras, origin, { era: "modern", version })
        return yield* completeResult(answer.response.result, method)
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

// ---------------------------------------------------------------------------
// The session era

/** The session-era server refused `initialize`: what it said, for a re-probe. */
class InitializeRefused extends Data.TaggedError("InitializeRefused")<{ readonly answer: Answer & { _tag: "Refused" } }> {}

const validSession = (id: string | undefined): string | undefined =>
  id !== undefined && Http.isValidSessionId(id) ? id : undefined

/**
 * `initialize`, `notifications/initialized`, the request, in a scope whose
 * close ends the session with a DELETE (bounded by `closeTimeout`), however
 * the call ends: with its answer, an error, a timeout or an interruption.
 */
const callLegacy = (
  context: Context,
  origin: string,
  requested: string,
  method: string,
  params: unknown,
  auto: boolean
): Effect.Effect<unknown, FlatOneShotError | InitializeRefused> =>
  Effect.scoped(Effect.gen(function*() {
    let session: string | undefined
    let versionHeader: string | undefined
    yield* Effect.addFinalizer(() => session === undefined ? Effect.void : deleteSession(context, session, versionHeader))

    const initialize = nextRequest(context, "initialize", {
      protocolVersion: requested,
      capabilities: context.capabilities,
      clientInfo: context.clientInfo
    })
    const response = yield* post(context, initialize, {})
    // Adopted before the body is read: a call interrupted while reading it still ends the session.
    if (Http.isSuccess(response.status)) session = validSession(response.headers["mcp-session-id"])
    const answer = yield* readAnswer(context, response, initialize)
    if (answer._tag === "Refused") return yield* new InitializeRefused({ answer })
    if ("error" in answer.response) return yield* RpcError.fromObject(answer.response.error, "initialize", initialize.id)
    const negotiated = (answer.response.result as { protocolVersion?: unknown } | null)?.protocolVersion
    if (!ProtocolVersion.isSupported(negotiated)) {
      return yield* new UnsupportedProtocolVersion({
        requested,
        received: typeof negotiated === "string" ? negotiated : String(negotiated),
        supported: ProtocolVersion.SUPPORTED
      })
    }
    if (auto) Negotiation.set(context.eras, origin, { era: "legacy", version: negotiated })
    versionHeader = negotiated >= FIRST_VERSION_WITH_HEADER ? negotiated : undefined
    const own = { "mcp-session-id": session, "mcp-protocol-version": versionHeader }

    const initialized = yield* post(context, JsonRpc.notification("notifications/initialized"), own)
    if (!Http.isSuccess(initialized.status)) {
      return yield* Effect.flatMap(Http.httpError(initialized, "notifications/initialized"), Effect.fail)
    }
    yield* Http.discard(initialized)

    const request = nextRequest(context, method, params)
    const reply = yield* readAnswer(context, yield* post(context, request, own), request)
    if (reply._tag === "Refused") return yield* reply.error
    if ("error" in reply.response) return yield* RpcError.fromObject(reply.response.error, method, request.id)
    return reply.response.result
  }))

/** Ends the session with the token the call holds; a refusal is not worth a sign-in. */
const deleteSession = (context: Context, session: string, versionHeader: string | undefined): Effect.Effect<void> =>
  Authorized.headers(context.auth, context.url, { method: "DELETE", url: context.url }).pipe(
    Effect.flatMap((auth) =>
      Http.assemble({ headers: context.baseHeaders, requestHeaders: context.hook }, { verb: "DELETE", url: context.url }, {
        "mcp-session-id": session,
        "mcp-protocol-version": versionHeader,
        ...auth
      })
    ),
    Effect.flatMap((headers) => Http.execute(context.client, HttpClientRequest.delete(context.url, { headers }), "DELETE")),
    Effect.flatMap(Http.discard),
    Effect.interruptible,
    Effect.timeoutOption(context.closeTimeout),
    Effect.ignore
  )

// ---------------------------------------------------------------------------
// Choosing the era

const refusedError = (error: InitializeRefused): HttpError => error.answer.error

const legacyOnly = (context: Context, origin: string, version: string, method: string, params: unknown, auto: boolean) =>
  callLegacy(context, origin, version, method, params, auto).pipe(
    Effect.catchTag("InitializeRefused", (refused) => Effect.fail(refusedError(refused)))
  )

const run = (
  context: Context,
  origin: string,
  protocol: string,
  method: string,
  params: unknown,
  schema: unknown
): Effect.Effect<unknown, FlatOneShotError> => {
  if (protocol !== "auto") {
    return ProtocolVersion.eraOf(protocol) === "modern"
      ? callModern(context, origin, protocol, method, params, schema, false, false).pipe(
        Effect.catchTag("FallBack", (refused) => Effect.fail(refused.error))
      )
      : legacyOnly(context, origin, protocol, method, params, false)
  }
  const known = Negotiation.get(context.eras, origin)
  const modernFirst = (version: string, fallback: boolean) =>
    callModern(context, origin, version, method, params, schema, true, fallback).pipe(
      Effect.catchTag("FallBack", () => legacyOnly(context, origin, ProtocolVersion.LATEST, method, params, true))
    )
  if (known?.era === "legacy") {
    // The cached era is checked by the handshake itself: a refused initialize (other than for
    // credentials) means the server changed, so it is probed afresh, stateless first, without a second fallback.
    return callLegacy(context, origin, ProtocolVersion.LATEST, method, params, true).pipe(
      Effect.catchTag("InitializeRefused", (refused) => {
        const { status } = refused.answer
        if (status < 400 || status >= 500 || status === 401 || status === 403) return Effect.fail(refusedError(refused))
        Negotiation.invalidate(context.eras, origin)
        return modernFirst(ProtocolVersion.LATEST_STATELESS, false)
      })
    )
  }
  return modernFirst(known?.version ?? ProtocolVersion.LATEST_STATELESS, true)
}

// ---------------------------------------------------------------------------
// Public

const originOf = (url: string): string => {
  try {
    return new URL(url).origin
  } catch {
    return url
  }
}

/**
 * Calls one MCP method on a Streamable HTTP endpoint and returns its result.
 * A JSON-RPC error fails with `RpcError` (or the typed error of a
 * stateless-era code); see `Options` for the revision, timeout and headers.
 *
 * @example
 * ```ts
 * import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
 * import * as Effect from "effect/Effect"
 * import * as OneShot from "effect-mcp-transport/client/OneShot"
 *
 * const tools = OneShot.call("http://127.0.0.1:8421/mcp", "tools/list").pipe(
 *   Effect.provide(NodeHttpClient.layerUndici)
 * )
 * ```
 *
 * @since 0.1.0
 * @category calls
 */
export const call = (
  url: string | URL,
  method: string,
  params?: unknown,
  options?: Options
): Effect.Effect<unknown, OneShotError, HttpClient.HttpClient> =>
  Effect.contextWith((services: Services.Context<HttpClient.HttpClient>) => {
    const client = Services.get(services, HttpClient.HttpClient)
    const target = url.toString()
    const opts = options ?? {}
    const context: Context = {
      client,
      url: target,
      maxBytes: opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
      baseHeaders: lowerKeys(opts.headers),
      hook: opts.requestHeaders,
      auth: opts.auth,
      clientInfo: opts.clientInfo ?? DEFAULT_CLIENT_INFO,
      capabilities: opts.clientCapabilities ?? EMPTY_CAPABILITIES,
      closeTimeout: opts.closeTimeout ?? DEFAULT_CLOSE_TIMEOUT,
      eras: Services.get(services, CurrentEras),
      ids: Services.get(services, RequestIds),
      current: { method, id: 0 }
    }
    const timeout = opts.timeout === undefined ? DEFAULT_TIMEOUT : Duration.fromInputUnsafe(opts.timeout)
    const running: Effect.Effect<unknown, FlatOneShotError> = ClientSpans.oneShot(
      target,
      method,
      params,
      run(context, originOf(target), opts.protocol ?? "auto", method, params, opts.inputSchema)
    ).pipe(
      // Nobody observes a span per HTTP request of a one-shot call; skipping it keeps the call cheap.
      Effect.provideService(HttpClient.TracerDisabledWhen, constTrue)
    )
    if (!Duration.isFinite(timeout)) return Effect.mapError(running, group)
    const timeoutMs = Duration.toMillis(timeout)
    return Effect.mapError(
      within(running, timeoutMs, () => new RequestTimeout({ method: context.current.method, id: context.current.id, timeoutMs })),
      group
    )
  })

/**
 * `effect`, failing with `onTimeout()` once `ms` have passed. The call runs
 * in a fiber of its own which a plain timer interrupts: one fork and one
 * timer per call, where `Effect.timeout` races two fibers and a sleep. The
 * interruption runs the call's finalizers (a session's DELETE) before the
 * timeout is reported.
 */
const within = <A, E, E2>(
  effect: Effect.Effect<A, E>,
  ms: number,
  onTimeout: () => E2
): Effect.Effect<A, E | E2> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkChild(restore(effect), { startImmediately: true }), (fiber) => {
      let timedOut = false
      const timer = setTimeout(() => {
        timedOut = true
        fiber.interruptUnsafe()
      }, ms)
      return restore(Fiber.await(fiber)).pipe(
        Effect.onInterrupt(() => Effect.andThen(Effect.sync(() => clearTimeout(timer)), Fiber.interrupt(fiber))),
        Effect.flatMap((exit): Effect.Effect<A, E | E2> => {
          clearTimeout(timer)
          if (Exit.isSuccess(exit)) return Effect.succeed(exit.value)
          if (timedOut && Cause.hasInterruptsOnly(exit.cause)) return Effect.fail(onTimeout())
          return Effect.failCause(exit.cause)
        })
      )
    })
  )

const isToolResult = (u: unknown): u is ToolResult => {
  if (typeof u !== "object" || u === null) return false
  const content = (u as { content?: unknown }).content
  if (!Array.isArray(content)) return false
  for (const block of content) {
    if (typeof block !== "object" || block === null || typeof (block as { type?: unknown }).type !== "string") return false
  }
  return true
}

/**
 * Calls one tool (`tools/call`) and returns its result. A tool that failed
 * is a result with `isError: true`, not an error; a result without a
 * `content` array of typed blocks fails with `InvalidPayload`.
 *
 * @example
 * ```ts
 * import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
 * import * as Effect from "effect/Effect"
 * import * as OneShot from "effect-mcp-transport/client/OneShot"
 *
 * const weather = OneShot.callTool("http://127.0.0.1:8421/mcp", "get_weather", { city: "Oslo" }, {
 *   headers: { authorization: "Bearer secret" }
 * }).pipe(Effect.provide(NodeHttpClient.layerUndici))
 * ```
 *
 * @since 0.1.0
 * @category calls
 */
export const callTool = (
  url: string | URL,
  name: string,
  args?: Readonly<Record<string, unknown>>,
  options?: Options
): Effect.Effect<ToolResult, OneShotError, HttpClient.HttpClient> =>
  Effect.flatMap(
    call(url, "tools/call", args === undefined ? { name } : { name, arguments: args }, options),
    (result) =>
      isToolResult(result)
        ? Effect.succeed(result)
        : Effect.fail(
          new McpProtocolError({
            reason: new InvalidPayload({ method: "tools/call", kind: "result", reason: "content must be an array of blocks with a type" })
          })
        )
  )
