/**
 * The Streamable HTTP endpoint (2025-03-26 … 2025-11-25): POST carries
 * client messages, GET opens (or resumes) a server-to-client SSE stream,
 * DELETE ends the session.
 *
 * A POST of the stateless era (2026-07-28) is served on its own, without a
 * session (see StatelessPost), when the endpoint's `eras` allow it; which
 * era serves a POST is decided from its header and body together (see
 * EraRouting).
 *
 * The same path also serves a plain `POST /mcp`: a single message or
 * a batch answered with JSON. Batches are accepted where a revision allows
 * them (a 2025-03-26 session, or a request without a session that names no
 * later revision in `MCP-Protocol-Version`).
 *
 * A POST of the handshake era is served by SessionPost; the session and
 * revision a request names in its headers are read by SessionHeaders.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as JsonRpc from "../../JsonRpc.ts"
import * as Metrics from "../../observability/Metrics.ts"
import * as EraRouting from "./EraRouting.ts"
import { type Env, type Guarded, withPeer } from "./Guard.ts"
import * as RequestBody from "./RequestBody.ts"
import type { RequestHeaders } from "./RequestHeaders.ts"
import * as Security from "./Security.ts"
import { badVersion, find, missingSession, primes, sessionHeader, unknownSession } from "./SessionHeaders.ts"
import { postToSession } from "./SessionPost.ts"
import { mayResume } from "./Sessions.ts"
import * as SharedSessions from "./SharedSessions.ts"
import * as SlotRefusal from "./SlotRefusal.ts"
import * as SseWire from "./SseWire.ts"
import * as StatelessPost from "./StatelessPost.ts"

/** A stateless endpoint has neither the standalone stream nor sessions to end. */
const modernOnly = () =>
  Security.invalid(405, "Method Not Allowed: this endpoint serves protocol revision 2026-07-28 over POST only", {
    allow: "POST"
  })

export const post = (env: Env): Guarded =>
  withPeer(env, (request, principal, headers) => postMessages(env, request, principal, headers))

type Response = Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope>

/**
 * The checks every POST passes, then its era's path. Plain functions and one
 * step for the body, not a generator: every request of either era runs it.
 */
const postMessages = (
  env: Env,
  request: HttpServerRequest.HttpServerRequest,
  principal: Security.Principal,
  headers: RequestHeaders
): Response => {
  if (!RequestBody.isJsonContent(headers["content-type"])) {
    return Effect.succeed(Security.invalid(415, "Unsupported Media Type: Content-Type must be application/json"))
  }
  const accepts = RequestBody.accepts(headers["accept"])
  if (!accepts.json && !accepts.sse) {
    return Effect.succeed(Security.invalid(406, "Not Acceptable: Accept must include application/json or text/event-stream"))
  }
  const repeated = EraRouting.repeatedHeader(request)
  if (repeated !== undefined) return Effect.succeed(repeated)
  return Effect.matchEffect(RequestBody.read(request, headers, env.config.maxBodyBytes), {
    onFailure: (failure) =>
      Effect.succeed(failure._tag === "BodyTooLarge" ? RequestBody.tooLarge(failure) : RequestBody.unreadable()),
    onSuccess: (text): Response => {
      const decoded = JsonRpc.decode(text)
      if (decoded._tag === "ParseError") {
        return Effect.succeed(Security.errorResponse(400, JsonRpc.ErrorCode.ParseError, "Parse error", decoded.reason))
      }
      const messages = decoded._tag === "Single" ? [decoded.message] : decoded.messages
      // One decision from header and body together, before any session rule: a stateless request
      // carries no session, and a session id on it means nothing.
      const era = EraRouting.decide(env, headers, messages)
      if (era._tag === "Refused") return Effect.succeed(era.response)
      if (era._tag === "Stateless") return StatelessPost.post(env, request, headers, principal, accepts, decoded)
      return postToSession(env, request, headers, principal, accepts, decoded, messages)
    }
  })
}

export const get = (env: Env): Guarded => (request, principal, headers) => getStandalone(env, request, principal, headers)

/** One generator function for every GET (see `postToSession`): none made per request. */
const getStandalone = Effect.fnUntraced(function*(
  env: Env,
  request: HttpServerRequest.HttpServerRequest,
  principal: Security.Principal,
  headers: RequestHeaders
): Effect.fn.Return<HttpServerResponse.HttpServerResponse, never, Scope.Scope> {
  const { config, sessions, store } = env
  if (config.eras === "modern") return modernOnly()
  if (!config.stateful || !config.standaloneStream) {
    return Security.invalid(405, "Method Not Allowed: this server offers no standalone SSE stream", {
      allow: config.stateful ? "POST, DELETE" : "POST"
    })
  }
  const refusal = RequestBody.eventStreamRefusal(headers)
  if (refusal !== undefined) return refusal
  const versionError = badVersion(env, headers)
  if (Option.isSome(versionError)) return versionError.value
  const found = yield* find(env, headers, principal)
  if (found._tag === "Missing") return missingSession()
  if (found._tag === "Unknown") return unknownSession()
  if (found._tag === "Respond") return yield* found.response
  const session = found.session
  const lastEventId = headers["last-event-id"]

  if (lastEventId === undefined && session.standalone.hasReader()) {
    return Security.invalid(409, "Conflict: this session already has a standalone SSE stream")
  }
  let frames: Stream.Stream<Uint8Array>
  if (lastEventId !== undefined) {
    const streamId = yield* store.streamOf(lastEventId)
    if (Option.isNone(streamId) || !mayResume(session, streamId.value, store)) {
      return Security.invalid(400, "Bad Request: unknown Last-Event-ID")
    }
    const live = session.liveStreams.get(streamId.value)
    // Not live here, in a fleet: followed in the shared store until it ends.
    const followed = live === undefined ? sessions.follow(session, streamId.value, lastEventId) : undefined
    if (live !== undefined) {
      frames = live.attach({ priming: false, retryMs: undefined, lastEventId, cut: SseWire.cutter(request) })
    } else if (followed !== undefined) {
      frames = followed
    } else {
      // The stream finished while the client was away: replay what it missed, then end.
      const replay = yield* store.replayAfter(lastEventId)
      if (Option.isSome(replay)) yield* Metrics.eventsReplayed(replay.value.events.length)
      const text = Option.match(replay, {
        onNone: () => "",
        onSome: (r) => r.events.map((e) => SseWire.event(e.data, e.id, e.event)).join("")
      })
      frames = text === "" ? Stream.empty : Stream.make(SseWire.encode(text))
    }
  } else {
    frames = session.standalone.attach({
      priming: primes(session.protocolVersion ?? headers["mcp-protocol-version"]),
      retryMs: config.retryMs,
      lastEventId: undefined,
      cut: SseWire.cutter(request)
    })
  }
  const admission = yield* sessions.enter(principal.id, session, true)
  if (admission !== "ok") return yield* SlotRefusal.refuse(admission)
  return SseWire.response(frames, sessionHeader(session))
})

export const del = (env: Env): Guarded => (_request, principal, headers) => deleteSession(env, principal, headers)

/** One generator function for every DELETE (see `postToSession`). */
const deleteSession = Effect.fnUntraced(function*(
  env: Env,
  principal: Security.Principal,
  headers: RequestHeaders
): Effect.fn.Return<HttpServerResponse.HttpServerResponse, never, Scope.Scope> {
  if (env.config.eras === "modern") return modernOnly()
  if (!env.config.stateful) {
    return Security.invalid(405, "Method Not Allowed: stateless server has no sessions", { allow: "POST" })
  }
  const versionError = badVersion(env, headers)
  if (Option.isSome(versionError)) return versionError.value
  const found = yield* find(env, headers, principal)
  if (found._tag === "Missing") return missingSession()
  if (found._tag === "Unknown") return unknownSession()
  if (found._tag === "Respond") return yield* found.response
  if (env.shared === undefined) yield* env.sessions.close(found.session)
  else if (!(yield* SharedSessions.end(env.shared, env.sessions, found.session))) return SharedSessions.unavailable(env.shared)
  return HttpServerResponse.empty({ status: 204 })
})
