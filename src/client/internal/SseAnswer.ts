/**
 * Reading the SSE answer to a POST that carried a request: the messages the
 * server sends on the way are routed, the response settles the request, and
 * a stream that stops early is resumed with GET + `Last-Event-ID` when the
 * server gave event ids and the mode allows it (the stateless revisions have
 * no resumption).
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
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
import * as Http from "./HttpExchange.ts"
import type { AuthError } from "../../AuthError.ts"
import type { OpenGet } from "./HttpGetListener.ts"
import * as SseReader from "./SseReader.ts"
import * as SseReconnect from "./SseReconnect.ts"

/**
 * After a POST's response arrived, its SSE body is read on in the background
 * for at most this long. A body read to its end lets the HTTP client put the
 * connection back in its pool; one dropped early costs a new TCP connection
 * per request (and a TIME_WAIT socket). Servers close the stream right after
 * the last response, so this bound only matters for misbehaving servers.
 */
const POST_DRAIN_TIMEOUT = Duration.seconds(3)
/** SSE answers up to this many bytes with a declared length are read whole (`readPostWhole`). */
const WHOLE_BODY_LIMIT = 64 * 1024

const STOPPED: SseReader.Ending = { _tag: "Stopped" }
const ENDED: SseReader.Ending = { _tag: "Ended" }

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
 * Reads a request's SSE answer until its response; `idleMs` bounds the
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
  const { background, core, maxBytes, openGet, schedule } = context

  /**
   * Reads the SSE body of the POST that carried `request`. Once the response
   * is in, the caller gets `Stopped` at once while a background fiber keeps
   * reading the body to its end (bounded by POST_DRAIN_TIMEOUT), so the
   * connection is reused; messages arriving meanwhile are still routed.
   * Interrupting the caller before the response aborts the body.
   */
  const readPostStream = (
    response: HttpClientResponse.HttpClientResponse,
    request: JsonRpc.JsonRpcRequest,
    cursor: SseReader.Cursor,
    idleMs: number | undefined
  ): Effect.Effect<SseReader.Ending, MalformedMessage | MessageTooLarge> => {
    // A small body whose length is declared (an answer complete when the server sent it) is read
    // whole: no stream, no background drain, and no abort of the exchange when the body ends. Large
    // ones are streamed, which holds fewer copies of them at once.
    const declared = Http.declaredLength(response)
    if (declared !== undefined && declared <= Math.min(maxBytes, WHOLE_BODY_LIMIT)) {
      return readPostWhole(response, request, cursor)
    }
    return Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        const outcome = yield* Deferred.make<SseReader.Ending, MalformedMessage | MessageTooLarge>()
        let answered = false
        const reading = SseReader.read(response.stream, cursor, {
          maxEventBytes: maxBytes,
          idleTimeoutMs: idleMs,
          onEvent: (event) => {
            if (!SseReader.isMessageEvent(event)) return Effect.succeed(false)
            if (answered) return Effect.as(core.dispatchFrame(event.data), false)
            return Effect.flatMap(dispatchFor(core, request, event.data), (settled) => {
              if (!settled) return Effect.succeed(false)
              answered = true
              return Effect.as(Deferred.succeed(outcome, STOPPED), false)
            })
          }
        })
        const drainBound = Deferred.await(outcome).pipe(
          Effect.ignore,
          Effect.andThen(Effect.sleep(POST_DRAIN_TIMEOUT))
        )
        const fiber = yield* FiberSet.run(
          background,
          Effect.raceFirst(
            Effect.exit(reading).pipe(Effect.flatMap((exit) => Deferred.done(outcome, exit))),
            drainBound
          ).pipe(Effect.ignore, Effect.ensuring(Deferred.interrupt(outcome)))
        )
        return yield* restore(Deferred.await(outcome)).pipe(
          Effect.onInterrupt(() => Fiber.interrupt(fiber))
        )
      })
    )
  }

  /** `readPostStream` for a body read whole: every message in order, the response settling the request. */
  const readPostWhole = (
    response: HttpClientResponse.HttpClientResponse,
    request: JsonRpc.JsonRpcRequest,
    cursor: SseReader.Cursor
  ): Effect.Effect<SseReader.Ending, MalformedMessage | MessageTooLarge> =>
    Effect.gen(function*() {
      const text = yield* Http.readText(response, maxBytes).pipe(
        Effect.map((text): string | SseReader.Ending => text),
        // As when a streamed body breaks: resumed if the server gave ids, else no response.
        Effect.catchTag("TransportClosed", (cause) => Effect.succeed<SseReader.Ending>({ _tag: "Broken", cause }))
      )
      if (typeof text !== "string") return text
      const events = SseReader.parseWhole(text, cursor)
      let answered = false
      for (const event of events) {
        if (!SseReader.isMessageEvent(event)) continue
        if (answered) yield* core.dispatchFrame(event.data)
        else answered = yield* dispatchFor(core, request, event.data)
      }
      return answered ? STOPPED : ENDED
    })

  /**
   * Reads a request's SSE answer until its response. A stream that stops
   * early is resumed with GET + `Last-Event-ID` when the server gave event
   * ids and `resumable` allows it; otherwise the request fails with
   * `NoResponse` (or `RequestTimeout` when the stream fell silent).
   */
  const readStreamAnswer: ReadSseAnswer = (response, request, idleMs, resumable) =>
    Effect.gen(function*() {
      const cursor = SseReader.makeCursor()
      const readOptions: SseReader.ReadOptions<MalformedMessage, never> = {
        maxEventBytes: maxBytes,
        idleTimeoutMs: idleMs,
        onEvent: (event) =>
          SseReader.isMessageEvent(event)
            ? dispatchFor(core, request, event.data)
            : Effect.succeed(false)
      }
      let ending = yield* readPostStream(response, request, cursor, idleMs)
      let backoff: SseReconnect.Backoff | undefined
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
        const delay = yield* backoff.next(ending, cursor.retryMs)
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
          return yield* error
        }
        ending = yield* SseReader.read(opened.success.stream, cursor, readOptions)
      }
    })

  return readStreamAnswer
}
