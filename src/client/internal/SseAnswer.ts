/**
 * Reading the answer to a POST that carried a request (a JSON body or an
 * SSE stream, through the exchange's reader): the messages the server sends
 * on the way are routed, the response settles the request, and an SSE
 * stream that stops early is resumed with GET + `Last-Event-ID` when the
 * server gave event ids and the mode allows it (the stateless revisions have
 * no resumption).
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as FiberSet from "effect/FiberSet"
import * as Result from "effect/Result"
import type * as Schedule from "effect/Schedule"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import type * as JsonRpc from "../../JsonRpc.ts"
import {
  type HttpError,
  type MalformedMessage,
  type MessageTooLarge,
  type NoResponse,
  type RedirectRefused,
  RequestTimeout,
  type SessionExpired,
  type TransportClosed
} from "../../McpError.ts"
import { dispatchFor, noResponse } from "./AnswerRouting.ts"
import type * as ClientCore from "./ClientCore.ts"
import * as PostExchange from "./PostExchange.ts"
import type { AuthError } from "../../AuthError.ts"
import type { OpenGet } from "./HttpGetListener.ts"
import * as SseReader from "./SseReader.ts"
import * as SseReconnect from "./SseReconnect.ts"
import * as UnavailableRetry from "./UnavailableRetry.ts"

/**
 * After a POST's response arrived, its SSE body is read on in the background
 * for at most this long. A body read to its end lets the HTTP client put the
 * connection back in its pool; one dropped early costs a new TCP connection
 * per request (and a TIME_WAIT socket). Servers close the stream right after
 * the last response, so this bound only matters for misbehaving servers.
 */
const POST_DRAIN_TIMEOUT = Duration.seconds(3)
/** A body of an unexpected media type is read this far, for the error. */
const UNEXPECTED_BODY_LIMIT = 4096

/** What the reader is built from. */
export interface SseAnswerContext {
  readonly core: ClientCore.ClientCore
  /** Bound on one event, and on a body read whole. */
  readonly maxBytes: number
  /** Reconnect policy for resuming a broken answer. */
  readonly schedule: Schedule.Schedule<unknown, unknown>
  /** Where a body is read on after its response arrived; cleared when the transport closes. */
  readonly background: FiberSet.FiberSet<unknown, unknown>
  /** Opens the GET that resumes an answer after its last event id. */
  readonly openGet: OpenGet
  /** Which refusals for now of that GET are waited out (`retryUnavailable`); `undefined`: none. */
  readonly retry: UnavailableRetry.Policy | undefined
}

/** Why reading an answer failed. */
export type SseAnswerError =
  | MalformedMessage
  | MessageTooLarge
  | RequestTimeout
  | NoResponse
  | HttpError
  | RedirectRefused
  | SessionExpired
  | TransportClosed
  | AuthError

/**
 * Reads a request's answer (a 2xx response, JSON or SSE) until its response; `idleMs` bounds the
 * silence on the stream (`undefined`: none); `resumable` false fails a
 * stream that stops early at once, whatever event ids it gave.
 */
export type ReadSseAnswer = (
  response: HttpClientResponse.HttpClientResponse,
  request: JsonRpc.JsonRpcRequest,
  idleMs: number | undefined,
  resumable: boolean
) => Effect.Effect<void, SseAnswerError>

/** The reader of one transport's SSE answers. */
export const make = (context: SseAnswerContext): ReadSseAnswer => {
  const { background, core, maxBytes } = context

  /**
   * Reads a request's SSE answer until its response (the first body through
   * the exchange's reader, which drains it in `background` once the
   * response is in). A stream that stops early is resumed with GET +
   * `Last-Event-ID` when the server gave event ids and `resumable` allows
   * it; otherwise the request fails with `NoResponse` (or `RequestTimeout`
   * when the stream fell silent).
   */
  const readStreamAnswer: ReadSseAnswer = (response, request, idleMs, resumable) => {
    const cursor = SseReader.makeCursor()
    const first = PostExchange.readAnswer(response, {
      request,
      maxBytes,
      frame: (text) => dispatchFor(core, request, text),
      late: core.dispatchFrame,
      drains: background,
      drainTimeout: POST_DRAIN_TIMEOUT,
      idleMs,
      unexpected: PostExchange.unexpectedType(request),
      unexpectedBytes: UNEXPECTED_BODY_LIMIT
    }, cursor)
    return Effect.flatMap(first, (ending) =>
      ending._tag === "Stopped" ? Effect.void : resume(context, request, ending, cursor, idleMs, resumable))
  }

  return readStreamAnswer
}

/**
 * After the first body stopped short of the response: GET + `Last-Event-ID` while the schedule allows.
 * One generator function for every resumed answer (docs/design.md, "Per-request code and the old generation").
 */
const resume = Effect.fnUntraced(function*(
  context: SseAnswerContext,
  request: JsonRpc.JsonRpcRequest,
  first: SseReader.Ending,
  cursor: SseReader.Cursor,
  idleMs: number | undefined,
  resumable: boolean
): Effect.fn.Return<void, SseAnswerError> {
  const { core, maxBytes, openGet, schedule } = context
  let ending = first
  let backoff: SseReconnect.Backoff | undefined
  // The wait the last refusal asked for, which wins over the stream's own `retry:` once.
  let askedMs: number | undefined
  const readOptions: SseReader.ReadOptions<MalformedMessage, never> = {
    maxEventBytes: maxBytes,
    idleTimeoutMs: idleMs,
    onEvent: (event) =>
      SseReader.isMessageEvent(event)
        ? dispatchFor(core, request, event.data)
        : Effect.succeed(false)
  }
  while (ending._tag !== "Stopped" && core.correlation.isPending(request.id)) {
    if (!resumable || cursor.lastEventId === undefined) {
      if (ending._tag === "Idle") {
        return yield* new RequestTimeout({
          method: request.method,
          id: request.id,
          timeoutMs: ending.idleMs,
          phase: "SSE stream silent"
        })
      }
      return yield* noResponse(request)
    }
    backoff ??= yield* SseReconnect.make(schedule)
    if (cursor.bytes > 0) yield* backoff.reset
    const delay = yield* backoff.next(ending, askedMs ?? cursor.retryMs)
    askedMs = undefined
    if (delay === undefined) return yield* noResponse(request)
    yield* Effect.sleep(Duration.millis(delay))
    cursor.bytes = 0
    const opened = yield* Effect.result(openGet(cursor.lastEventId))
    if (Result.isFailure(opened)) {
      const error = opened.failure
      // The connection itself failed: worth another attempt. An answer is final.
      if (error._tag === "TransportClosed") {
        ending = { _tag: "Broken", cause: error }
        continue
      }
      if (error._tag === "HttpError" && error.status === 405) return yield* noResponse(request)
      // Refused for now (a draining instance): after the wait, another instance may resume it.
      askedMs = UnavailableRetry.resumeDelay(context.retry, error)
      if (askedMs !== undefined) {
        ending = { _tag: "Broken", cause: error }
        continue
      }
      return yield* error
    }
    ending = yield* SseReader.read(opened.success.stream, cursor, readOptions)
  }
})
