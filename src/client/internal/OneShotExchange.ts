/**
 * One request of a one-shot call on the wire: its POST (through the
 * exchange the transport uses too) and the reading of its answer, the
 * response to the request or the body of a refusal.
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Scope from "effect/Scope"
import type { AuthError } from "../../AuthError.ts"
import type { Implementation } from "../../Implementation.ts"
import * as JsonRpc from "../../JsonRpc.ts"
import {
  type HeaderMismatch,
  type HttpError,
  type InvalidPayload,
  MalformedMessage,
  type MessageTooLarge,
  type MissingClientCapability,
  type NoResponse,
  type RedirectRefused,
  type RequestTimeout,
  type RpcError,
  TransportClosed,
  type UnsupportedProtocolVersion
} from "../../McpError.ts"
import type * as Negotiation from "../Negotiation.ts"
import * as ClientSpans from "./ClientSpans.ts"
import * as Http from "./HttpExchange.ts"
import * as PostExchange from "./PostExchange.ts"

/** The failures of a call's requests, before they are grouped. */
export type ExchangeError =
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
  | AuthError

export const ACCEPT = "application/json, text/event-stream"

/** One call's context. */
export interface CallContext {
  readonly endpoint: PostExchange.Endpoint
  readonly clientInfo: Implementation
  readonly capabilities: Readonly<Record<string, unknown>>
  readonly closeTimeout: Duration.Input
  /** What `auto` calls learnt, per origin. */
  readonly eras: Negotiation.EraCache
  readonly ids: { readonly next: () => JsonRpc.RequestId }
  /** Where the rest of a streamed answer is read after its response. */
  readonly drains: FiberSet.FiberSet<unknown, unknown>
  /** The request that is (or was last) on the wire: what a timeout reports. */
  current: { method: string; id: JsonRpc.RequestId }
}

/**
 * Where one-shot calls read the rest of a streamed answer after its
 * response (a body read to its end lets the HTTP client reuse the
 * connection): a fiber set of the whole process unless one is provided, as
 * a call ends before its body does.
 */
export class Drains extends Context.Reference<FiberSet.FiberSet<unknown, unknown>>(
  "effect-mcp-transport/client/OneShot/Drains",
  { defaultValue: () => Effect.runSync(Effect.provideService(FiberSet.make(), Scope.Scope, Scope.makeUnsafe())) }
) {}

/**
 * After the response arrived, the rest of a streamed SSE body is read on for
 * at most this long. Servers end the stream right after the response, so
 * the bound only matters for one that does not.
 */
const DRAIN_TIMEOUT_MS = 1_000

/** Bound on the body of a refusal: enough for any JSON-RPC error, read whole for the decision. */
const REFUSAL_BODY_LIMIT = 64 * 1024

/**
 * POSTs `message` with the call's own headers over the user's. The body
 * carries the trace context of the call's span (when tracing); its size is
 * checked without it.
 */
export const post = (
  context: CallContext,
  message: JsonRpc.JsonRpcMessage,
  own: Readonly<Record<string, string | undefined>>
): Effect.Effect<HttpClientResponse.HttpClientResponse, PostExchange.PostError> => {
  const body = PostExchange.encode(context.endpoint, message)
  if (!("contentLength" in body)) return Effect.fail(body)
  return ClientSpans.sending(message, (traced) =>
    PostExchange.post(
      context.endpoint,
      traced,
      traced === message ? body : PostExchange.encodeUnchecked(traced),
      { accept: ACCEPT, ...own }
    ))
}

/** What came back for a request: its response, or an HTTP refusal with the body read. */
export type Answer =
  | { readonly _tag: "Response"; readonly response: JsonRpc.JsonRpcResponse }
  | { readonly _tag: "Refused"; readonly status: number; readonly body: string; readonly error: HttpError }

export type ReadError = PostExchange.AnswerError

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

const SETTLED = Effect.succeed(true)
const UNSETTLED = Effect.succeed(false)
const ignoreLate = () => Effect.void

/** Reads the answer to a request: a 2xx body (JSON or SSE), or the body of a refusal. */
export const readAnswer = (
  context: CallContext,
  response: HttpClientResponse.HttpClientResponse,
  request: JsonRpc.JsonRpcRequest
): Effect.Effect<Answer, ReadError> => {
  const status = response.status
  if (!Http.isSuccess(status)) {
    return Http.readText(response, REFUSAL_BODY_LIMIT).pipe(
      Effect.orElseSucceed(() => ""),
      Effect.flatMap((body) =>
        Effect.clockWith((clock) =>
          Effect.succeed<Answer>({ _tag: "Refused", status, body, error: Http.refusal(response, body, request.method, clock) })
        )
      )
    )
  }
  let found: JsonRpc.JsonRpcResponse | undefined
  const answering: PostExchange.Answering<MalformedMessage> = {
    request,
    maxBytes: context.endpoint.maxBytes,
    frame: (text) => {
      const response = responseIn(text, request)
      if (response === undefined) return UNSETTLED
      if (response instanceof MalformedMessage) return Effect.fail(response)
      found = response
      return SETTLED
    },
    late: ignoreLate,
    drains: context.drains,
    drainTimeout: DRAIN_TIMEOUT_MS,
    idleMs: undefined,
    unexpected: (text, type) => MalformedMessage.answering(text, `unexpected Content-Type "${type}"`, request.method, request.id),
    unexpectedBytes: context.endpoint.maxBytes
  }
  return Effect.flatMap(PostExchange.readAnswer(response, answering, undefined), (ending): Effect.Effect<Answer, ReadError> => {
    if (found !== undefined) return Effect.succeed<Answer>({ _tag: "Response", response: found })
    // A body read whole that broke is the connection's failure; a stream that stopped early has no response.
    if (ending._tag === "Broken" && ending.cause instanceof TransportClosed) return Effect.fail(ending.cause)
    return Effect.fail(PostExchange.noResponse(request))
  })
}

/** The next request of the call, which becomes the one a timeout reports. */
export const nextRequest = (context: CallContext, method: string, params: unknown): JsonRpc.JsonRpcRequest => {
  const request = JsonRpc.request(context.ids.next(), method, params)
  context.current = request
  return request
}
