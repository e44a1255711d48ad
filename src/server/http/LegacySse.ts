/**
 * The 2024-11-05 HTTP+SSE transport: `GET /sse` opens a session whose first
 * event, `endpoint`, names the URL to POST to; each POST is answered 202 and
 * its reply travels on the SSE stream. The session lives as long as that SSE
 * connection.
 *
 * A posted request is answered before its handler ends, so its slot (see
 * `Sessions.enterSlots`) is held by the handler: without it a client could
 * start any number of handlers. Past a limit the POST is refused instead of
 * accepted.
 *
 * A client that POSTs faster than it reads its stream is held back: while
 * the stream holds more than half of `maxBufferedBytesPerStream` for it, a
 * POST that would add a reply gets 503 with `Retry-After` (its messages that
 * add nothing, responses and notifications, still pass). Replies of requests
 * already running can still fill the stream to the limit; past it the
 * connection is cut and the session ends.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as JsonRpc from "../../JsonRpc.ts"
import * as EraRouting from "./EraRouting.ts"
import { type Env, type Guarded, withPeer } from "./Guard.ts"
import * as OwedReplies from "./OwedReplies.ts"
import * as RequestBody from "./RequestBody.ts"
import type { RequestHeaders } from "./RequestHeaders.ts"
import * as Security from "./Security.ts"
import * as SessionAdmission from "./SessionAdmission.ts"
import { completesHandshake, isRefused, runHoldingSlots } from "./Sessions.ts"
import * as SlotRefusal from "./SlotRefusal.ts"
import * as SseWire from "./SseWire.ts"

export const open = (env: Env): Guarded => (request, principal, headers) => openOf(env, request, principal, headers)

// One generator function for every legacy GET and POST (docs/design.md, "Per-request code and the old generation").

const openOf = Effect.fnUntraced(function*(
  env: Env,
  request: HttpServerRequest.HttpServerRequest,
  principal: Security.Principal,
  headers: RequestHeaders
): Effect.fn.Return<HttpServerResponse.HttpServerResponse, never, Scope.Scope> {
  const refusal = RequestBody.eventStreamRefusal(headers)
  if (refusal !== undefined) return refusal
  const created = yield* env.sessions.create("legacy", principal.id)
  if (isRefused(created)) return yield* SessionAdmission.refuse(created)
  const session = created
  session.auth = principal.auth
  // The session ends with this connection, however it ends.
  yield* Effect.addFinalizer(() => env.sessions.close(session))
  const admission = yield* env.sessions.enter(principal.id, session, true)
  if (admission !== "ok") return yield* SlotRefusal.refuse(admission)
  const endpoint = `${env.config.legacyMessagesPath}?sessionId=${encodeURIComponent(session.id!)}`
  return SseWire.response(
    session.standalone.attach({
      priming: false,
      retryMs: undefined,
      lastEventId: undefined,
      preamble: [SseWire.event(endpoint, undefined, "endpoint")],
      cut: SseWire.cutter(request)
    }),
    {}
  )
})

const sessionIdOf = (url: string): string | undefined => {
  const query = url.indexOf("?")
  if (query < 0) return undefined
  return new URLSearchParams(url.slice(query + 1)).get("sessionId") ?? undefined
}

export const message = (env: Env): Guarded =>
  withPeer(env, (request, principal, headers) => messageOf(env, request, principal, headers))

const messageOf = Effect.fnUntraced(function*(
  env: Env,
  request: HttpServerRequest.HttpServerRequest,
  principal: Security.Principal,
  headers: RequestHeaders
): Effect.fn.Return<HttpServerResponse.HttpServerResponse, never, Scope.Scope> {
  const id = sessionIdOf(request.url)
  if (id === undefined) return Security.invalid(400, "Bad Request: sessionId query parameter is required")
  const session = env.sessions.getLegacy(id)
  // A stream that ended (its reader was dropped) is a session on its way out.
  if (session === undefined || session.closed || session.standalone.isEnded() || session.principalId !== principal.id) {
    return Security.invalid(404, "Session not found")
  }
  if (!RequestBody.isJsonContent(headers["content-type"])) {
    return Security.invalid(415, "Unsupported Media Type: Content-Type must be application/json")
  }
  yield* env.sessions.enter(principal.id, session, false)
  const body = yield* Effect.result(RequestBody.read(request, headers, env.config.maxBodyBytes))
  if (body._tag === "Failure") {
    return body.failure._tag === "BodyTooLarge" ? RequestBody.tooLarge(body.failure) : RequestBody.unreadable()
  }
  const decoded = JsonRpc.decode(body.success)
  if (decoded._tag === "ParseError") {
    return Security.errorResponse(400, JsonRpc.ErrorCode.ParseError, "Parse error", decoded.reason)
  }
  if (decoded._tag === "Batch") {
    return Security.invalid(400, "Invalid Request: protocol revision 2024-11-05 has no batches")
  }
  const message = decoded.message
  const mismatch = EraRouting.checkSessionOnly(env, headers, [message])
  if (mismatch !== undefined) return mismatch
  const forbidden = env.authorize?.(principal, [message])
  if (forbidden !== undefined) return forbidden
  if (principal.auth !== undefined) session.auth = principal.auth
  const replies = message._tag === "Request" || message._tag === "Invalid"
  if (replies && session.standalone.bufferedBytes() > env.config.maxBufferedBytesPerStream / 2) {
    return Security.invalid(503, "Service unavailable: the SSE stream is not being read", { "retry-after": "1" })
  }
  // A request left without a reply by the server's shutdown is told so on the stream, before the stream
  // ends: its client would otherwise learn only that the stream ended.
  const work = session.server.handleMessage(message).pipe(
    Effect.flatMap((answer) => {
      const reply = answer ??
        (message._tag === "Request" && env.drain?.draining() === true ? OwedReplies.interruptedByShutdown(message.message.id) : null)
      return reply === null ? Effect.void : Effect.asVoid(session.standalone.offer(reply))
    })
  )
  if (message._tag !== "Request") {
    // Notifications and responses are handled before the 202, so they keep the order the client sent them in.
    if (completesHandshake(message)) session.initialized = true
    yield* work
    return HttpServerResponse.text("Accepted", { status: 202 })
  }
  const grant = yield* env.sessions.enterSlots(principal.id, session, 1)
  if (grant.granted === 0) return yield* SlotRefusal.refuse(grant.short!)
  if (completesHandshake(message)) session.initialized = true
  // Requests run in the background (their replies go to the stream).
  yield* runHoldingSlots(session, grant, work)
  return HttpServerResponse.text("Accepted", { status: 202 })
})
