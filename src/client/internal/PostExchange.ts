/**
 * One POST of a JSON-RPC message and the reading of its answer, as both
 * HTTP clients make it (the Streamable HTTP transport and the one-shot
 * call): the size bound on what is sent, the user's headers under the
 * exchange's own, the OAuth provider in the loop, the redirect policy; then
 * a JSON body or an SSE stream whose frames the caller routes. The GETs
 * and DELETEs of the transports go through the same provider loop. Once the
 * request is settled, the rest of a streamed SSE body is read on in a fiber
 * set the caller owns, for a bounded time on the `Clock`, so that the
 * connection goes back to the pool.
 *
 * The SSE reader is loaded with the first SSE answer: a client whose
 * server answers with JSON never loads it.
 */
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as HttpBody from "effect/http/HttpBody"
import type * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import type { AuthError } from "../../AuthError.ts"
import type * as JsonRpc from "../../JsonRpc.ts"
import { MalformedMessage, MessageTooLarge, NoResponse, type RedirectRefused, type TransportClosed } from "../../McpError.ts"
import type { AuthRequest, OAuthProviderShape } from "../auth/OAuthProvider.ts"
import type * as AuthorizedRetry from "./AuthorizedRetry.ts"
import * as Http from "./HttpExchange.ts"
import type * as SseReader from "./SseReader.ts"
import * as UnavailableRetry from "./UnavailableRetry.ts"

type Response = HttpClientResponse.HttpClientResponse

// ---------------------------------------------------------------------------
// The provider in the loop

/** The headers a request carries for the provider: none without one. */
export const authHeaders = (
  auth: OAuthProviderShape | undefined,
  serverUrl: string,
  request: AuthRequest
): Effect.Effect<Readonly<Record<string, string>>, AuthError> =>
  auth === undefined ? Effect.succeed(NONE) : auth.headers(serverUrl, request)

/** The auth headers of a request without a provider: the same record every time, so callers can skip a merge. */
export const NONE: Readonly<Record<string, string>> = {}

let loaded: typeof AuthorizedRetry | undefined

const retry: Effect.Effect<typeof AuthorizedRetry> = Effect.suspend(() =>
  loaded !== undefined
    ? Effect.succeed(loaded)
    : Effect.promise(() => import("./AuthorizedRetry.ts")).pipe(Effect.tap((module) => Effect.sync(() => loaded = module)))
)

/**
 * One HTTP exchange with an OAuth provider in the loop: `attempt` sends the
 * request with the given auth headers merged into its own (`NONE` without a
 * provider); the provider's answers to a 401 or a 403 send it once more
 * (`AuthorizedRetry`, loaded with the first exchange that has a provider).
 * `request` is what a DPoP proof is bound to: the method and URL actually
 * requested (default: a POST to `serverUrl`).
 */
export const authorized = <E>(
  auth: OAuthProviderShape | undefined,
  serverUrl: string,
  attempt: (headers: Readonly<Record<string, string>>) => Effect.Effect<Response, E>,
  request?: Partial<AuthRequest>
): Effect.Effect<Response, E | AuthError> => {
  if (auth === undefined) return attempt(NONE)
  const target: AuthRequest = { method: request?.method ?? "POST", url: request?.url ?? serverUrl }
  return Effect.flatMap(retry, (module) => module.send(auth, serverUrl, attempt, target))
}

// ---------------------------------------------------------------------------
// The POST

/** Where and how the POSTs of one client go. */
export interface Endpoint {
  readonly client: HttpClient.HttpClient
  readonly url: string
  /** Largest message sent or accepted (JSON body or SSE event). */
  readonly maxBytes: number
  /** The user's static headers, lower-cased once. */
  readonly headers: Readonly<Record<string, string>>
  readonly requestHeaders: Http.HeaderHook | undefined
  readonly auth: OAuthProviderShape | undefined
  /** When a POST refused for now is sent again (`retryUnavailable`); `undefined`: never. */
  readonly retry: UnavailableRetry.Policy | undefined
}

/** An endpoint's fields from a client's options. */
export const endpoint = (
  client: HttpClient.HttpClient,
  url: string,
  maxBytes: number,
  options: Http.HeaderSource & {
    readonly auth?: OAuthProviderShape | undefined
    readonly retryUnavailable?: UnavailableRetry.RetryUnavailableOptions | false | undefined
  }
): Endpoint => ({
  client,
  url,
  maxBytes,
  headers: Http.lowerKeys(options.headers),
  requestHeaders: options.requestHeaders,
  auth: options.auth,
  retry: UnavailableRetry.policy(options.retryUnavailable)
})

export type PostError = TransportClosed | RedirectRefused | MessageTooLarge | AuthError

/** The body of `message`, or `MessageTooLarge` when it is over the endpoint's bound. */
export const encode = (target: Endpoint, message: JsonRpc.JsonRpcMessage): HttpBody.Uint8Array | MessageTooLarge => {
  const body = HttpBody.text(JSON.stringify(message), "application/json")
  return body.contentLength > target.maxBytes
    ? new MessageTooLarge({ limit: target.maxBytes, size: body.contentLength, direction: "outgoing" })
    : body
}

/** The body of `message` without the bound (a message checked before something was added to it). */
export const encodeUnchecked = (message: JsonRpc.JsonRpcMessage): HttpBody.Uint8Array =>
  HttpBody.text(JSON.stringify(message), "application/json")

/** The user's headers, then the hook's, then the exchange's own (`undefined` values left out). */
export const headersFor = (
  target: Endpoint,
  context: Http.HeaderContext,
  own: Readonly<Record<string, string | undefined>>
): Effect.Effect<Record<string, string>> => {
  if (target.requestHeaders !== undefined) {
    return Http.assemble({ headers: target.headers, requestHeaders: target.requestHeaders }, context, own)
  }
  const out: Record<string, string> = { ...target.headers }
  for (const key in own) {
    const value = own[key]
    if (value !== undefined) out[key] = value
  }
  return Effect.succeed(out)
}

/**
 * POSTs `message` (its `body`, from `encode`) with the exchange's own
 * headers `own`, and returns the answer whatever its status (but for the 401
 * and 403 the provider, when there is one, answers by signing in and
 * sending once more, and a refusal for now the endpoint's policy waits for
 * is sent again after the wait).
 */
export const post = (
  target: Endpoint,
  message: JsonRpc.JsonRpcMessage,
  body: HttpBody.HttpBody,
  own: Readonly<Record<string, string | undefined>>
): Effect.Effect<Response, PostError> => {
  const method = "method" in message ? message.method : undefined
  const context: Http.HeaderContext = { verb: "POST", url: target.url, message }
  return authorized(target.auth, target.url, (auth) =>
    Http.executeResending(
      target.client,
      headersFor(target, context, auth === NONE ? own : { ...own, ...auth }),
      (headers) => HttpClientRequest.post(target.url, { headers, body }),
      method,
      target.retry
    ))
}

/** Ends a session with a DELETE, bounded by `timeout`; a refusal or a failure is not worth reporting. */
export const deleteSession = (
  target: Endpoint,
  own: Readonly<Record<string, string | undefined>>,
  timeout: Duration.Input
): Effect.Effect<void> =>
  authHeaders(target.auth, target.url, { method: "DELETE", url: target.url }).pipe(
    Effect.flatMap((auth) => headersFor(target, { verb: "DELETE", url: target.url }, { ...own, ...auth })),
    Effect.flatMap((headers) => Http.execute(target.client, HttpClientRequest.delete(target.url, { headers }), "DELETE")),
    Effect.flatMap(Http.discard),
    Effect.interruptible,
    Effect.timeoutOption(timeout),
    Effect.ignore
  )

// ---------------------------------------------------------------------------
// The answer

/** How the frames of one request's answer are handled. */
export interface Answering<E> {
  readonly request: JsonRpc.JsonRpcRequest
  readonly maxBytes: number
  /** One frame on the request's channel (the JSON body, an SSE event's data): whether it settles the request. */
  readonly frame: (text: string) => Effect.Effect<boolean, E>
  /** A frame that comes after the request is settled. */
  readonly late: (text: string) => Effect.Effect<void>
  /** Where the rest of a streamed SSE body is read after the response: the caller's, cleared when it closes. */
  readonly drains: FiberSet.FiberSet<unknown, unknown>
  /** How long that reading may go on. */
  readonly drainTimeout: Duration.Input
  /** Bound on the silence of an SSE stream (`undefined`: none). */
  readonly idleMs: number | undefined
  /** The failure for a body of an unexpected media type (read up to `unexpectedBytes`). */
  readonly unexpected: (text: string, type: string) => MalformedMessage
  readonly unexpectedBytes: number
}

export type AnswerError = MalformedMessage | MessageTooLarge | NoResponse | TransportClosed

/** The failure of a request whose channel ended without its response. */
export const noResponse = (request: JsonRpc.JsonRpcRequest): NoResponse =>
  new NoResponse({ id: request.id, method: request.method })

const STOPPED: SseReader.Ending = { _tag: "Stopped" }
const ENDED: SseReader.Ending = { _tag: "Ended" }

/**
 * Reads the body of a 2xx answer to a request. A JSON body settles it or
 * fails with `NoResponse`; an SSE body is read up to the frame that settles
 * it (`Stopped`), or to how it ended otherwise (`Ended`, `Broken`, `Idle`),
 * with `cursor` (a fresh one when not given) moved past its events: the
 * caller decides whether to resume.
 */
export const readAnswer = <E>(
  response: Response,
  answering: Answering<E>,
  cursor: SseReader.Cursor | undefined
): Effect.Effect<SseReader.Ending, E | AnswerError> => {
  const { request } = answering
  const status = response.status
  if (status === 202 || status === 204) return Effect.andThen(Http.discard(response), Effect.fail(noResponse(request)))
  const type = Http.mediaType(response)
  if (type === "text/event-stream") return Effect.flatMap(sseReader, (reader) => readSse(reader, response, answering, cursor ?? reader.makeCursor()))
  if (type === "application/json" || type.endsWith("+json")) {
    return Effect.flatMap(Http.readText(response, answering.maxBytes), (text) => {
      if (text.trim().length === 0) return Effect.fail(noResponse(request))
      return Effect.flatMap(answering.frame(text), (settled) => settled ? Effect.succeed(STOPPED) : Effect.fail(noResponse(request)))
    })
  }
  return Http.readText(response, answering.unexpectedBytes).pipe(
    Effect.orElseSucceed(() => ""),
    Effect.flatMap((text) => Effect.fail(text.length === 0 ? noResponse(request) : answering.unexpected(text, type)))
  )
}

let loadedReader: typeof SseReader | undefined

/** The SSE reader, loaded with the first SSE answer. */
export const sseReader: Effect.Effect<typeof SseReader> = Effect.suspend(() =>
  loadedReader !== undefined
    ? Effect.succeed(loadedReader)
    : Effect.promise(() => import("./SseReader.ts")).pipe(Effect.tap((module) => Effect.sync(() => loadedReader = module)))
)

/** SSE answers up to this many bytes with a declared length are read whole. */
const WHOLE_BODY_LIMIT = 64 * 1024

const readSse = <E>(
  reader: typeof SseReader,
  response: Response,
  answering: Answering<E>,
  cursor: SseReader.Cursor
): Effect.Effect<SseReader.Ending, E | MalformedMessage | MessageTooLarge> => {
  // A small body whose length is declared (an answer complete when the server sent it) is read
  // whole: no stream, no drain, and no abort of the exchange when the body ends. Large ones are
  // streamed, which holds fewer copies of them at once.
  const declared = Http.declaredLength(response)
  return declared !== undefined && declared <= Math.min(answering.maxBytes, WHOLE_BODY_LIMIT)
    ? readWhole(reader, response, answering, cursor)
    : readStream(reader, response, answering, cursor)
}

/**
 * Every message of a body read whole, in order, the settling frame among
 * them. One generator function for every body (`fnUntraced`), not one made
 * per body: each made generator function gets an old-generation hidden
 * class that keeps what it reaches alive through scavenges.
 */
const readWhole = Effect.fnUntraced(function*<E>(
  reader: typeof SseReader,
  response: Response,
  answering: Answering<E>,
  cursor: SseReader.Cursor
): Effect.fn.Return<SseReader.Ending, E | MessageTooLarge> {
  const text = yield* Http.readText(response, answering.maxBytes).pipe(
    Effect.map((text): string | SseReader.Ending => text),
    // As when a streamed body breaks.
    Effect.catchTag("TransportClosed", (cause) => Effect.succeed<SseReader.Ending>({ _tag: "Broken", cause }))
  )
  if (typeof text !== "string") return text
  let settled = false
  for (const event of reader.parseWhole(text, cursor)) {
    if (!reader.isMessageEvent(event)) continue
    if (settled) yield* answering.late(event.data)
    else settled = yield* answering.frame(event.data)
  }
  return settled ? STOPPED : ENDED
})

/**
 * Reads a streamed body up to the frame that settles the request, which the
 * caller gets at once (`Stopped`) while the same fiber, in `drains`, reads
 * the rest and hands late frames on. Interrupting the caller before then
 * aborts the body.
 */
const readStream = <E>(
  reader: typeof SseReader,
  response: Response,
  answering: Answering<E>,
  cursor: SseReader.Cursor
): Effect.Effect<SseReader.Ending, E | MalformedMessage | MessageTooLarge> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.suspend(() => {
      const outcome = Deferred.makeUnsafe<SseReader.Ending, E | MalformedMessage | MessageTooLarge>()
      let settled = false
      const reading = reader.read(response.stream, cursor, {
        maxEventBytes: answering.maxBytes,
        idleTimeoutMs: answering.idleMs,
        onEvent: (event) => {
          if (!reader.isMessageEvent(event)) return Effect.succeed(false)
          if (settled) return Effect.as(answering.late(event.data), false)
          return Effect.map(answering.frame(event.data), (done) => {
            if (done) {
              settled = true
              Deferred.doneUnsafe(outcome, Exit.succeed(STOPPED))
            }
            return false
          })
        }
      })
      return Effect.flatMap(
        FiberSet.run(
          answering.drains,
          Effect.exit(reading).pipe(
            Effect.flatMap((exit) => Deferred.done(outcome, exit)),
            Effect.ensuring(Deferred.interrupt(outcome))
          )
        ),
        (fiber) =>
          restore(Deferred.await(outcome)).pipe(
            Effect.onInterrupt(() => Fiber.interrupt(fiber)),
            Effect.tap(() => boundDrain(fiber, answering))
          )
      )
    })
  )

/**
 * Once the request is settled, the rest of its body is read for at most
 * `drainTimeout` (on the `Clock`): a second fiber, started only when the body
 * has not ended by the time the caller has its answer, and stopped when the
 * body ends. (A race of the read against a sleep, from the start, cost two
 * fibers more per answer.)
 */
const boundDrain = (reading: Fiber.Fiber<unknown, unknown>, answering: Answering<unknown>): Effect.Effect<void> => {
  if (reading.pollUnsafe() !== undefined) return Effect.void
  return Effect.flatMap(
    FiberSet.run(answering.drains, Effect.andThen(Effect.sleep(answering.drainTimeout), Fiber.interrupt(reading))),
    (bound) =>
      Effect.sync(() => {
        reading.addObserver(() => bound.interruptUnsafe())
      })
  )
}

/** A body of another media type than the answer's, as the transport reports it. */
export const unexpectedType = (request: JsonRpc.JsonRpcRequest) => (text: string, type: string): MalformedMessage =>
  MalformedMessage.make(text, `unexpected Content-Type "${type}" in the answer to ${request.method}`)
