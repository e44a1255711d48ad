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
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as BatchLimit from "../../internal/BatchLimit.ts"
import * as JsonRpc from "../../JsonRpc.ts"
import * as Metrics from "../../observability/Metrics.ts"
import * as ServerSpans from "../internal/ServerSpans.ts"
import * as EraRouting from "./EraRouting.ts"
import type { Env, Guarded } from "./Guard.ts"
import * as InFlightWork from "./InFlightWork.ts"
import * as RequestBody from "./RequestBody.ts"
import * as Security from "./Security.ts"
import * as SessionAdmission from "./SessionAdmission.ts"
import * as SharedSessions from "./SharedSessions.ts"
import type { OutStream } from "./OutStream.ts"
import {
  completesHandshake,
  isRefused,
  newStreamId,
  mayResume,
  type RequestRoute,
  runHoldingSlots,
  type Session,
  type Sessions
} from "./Sessions.ts"
import { WakeOnce } from "./WakeOnce.ts"
import * as SlotRefusal from "./SlotRefusal.ts"
import * as SseWire from "./SseWire.ts"
import * as StatelessPost from "./StatelessPost.ts"

const SESSION_HEADER = "mcp-session-id"

/** Revisions whose clients understand a priming event (an id with empty data). */
const primes = (version: string | undefined) => version !== undefined && version >= "2025-11-25"

const sessionHeader = (session: Session): Record<string, string> =>
  session.id === undefined ? {} : { [SESSION_HEADER]: session.id }

const batchTooLarge = (limit: number, size: number) =>
  Security.errorResponse(413, JsonRpc.ErrorCode.InvalidRequest, `Invalid Request: ${BatchLimit.reason(limit)}`, { limit, size })

const badVersion = (env: Env, request: HttpServerRequest.HttpServerRequest) => {
  const version = request.headers["mcp-protocol-version"]
  return version !== undefined && !env.config.protocolVersions.includes(version)
    ? Option.some(Security.errorResponse(400, JsonRpc.ErrorCode.InvalidRequest, "Unsupported MCP-Protocol-Version", {
      requested: version,
      supported: env.config.protocolVersions
    }))
    : Option.none()
}

/** The named session, if it exists and belongs to this principal (anything else is 404: no hint it exists). */
const lookup = (env: Env, request: HttpServerRequest.HttpServerRequest, principal: Security.Principal) => {
  const id = request.headers[SESSION_HEADER]
  if (id === undefined) return { _tag: "Missing" } as const
  const session = env.sessions.get(id)
  if (session === undefined || session.closed || session.principalId !== principal.id) return { _tag: "Unknown" } as const
  if (principal.auth !== undefined) session.auth = principal.auth
  return { _tag: "Found", session } as const
}

/** `lookup`, and in a fleet the registry's word: a session held elsewhere is adopted, one ended elsewhere is unknown. */
const find = (
  env: Env,
  request: HttpServerRequest.HttpServerRequest,
  principal: Security.Principal
): Effect.Effect<
  ReturnType<typeof lookup> | { readonly _tag: "Respond"; readonly response: Effect.Effect<HttpServerResponse.HttpServerResponse> },
  never,
  Scope.Scope
> => {
  const id = request.headers[SESSION_HEADER]
  if (env.shared === undefined || id === undefined) return Effect.succeed(lookup(env, request, principal))
  return Effect.map(SharedSessions.resolve(env.shared, env.sessions, env.handler, id, principal.id), (found) => {
    switch (found._tag) {
      case "Found":
        if (principal.auth !== undefined) found.session.auth = principal.auth
        return found
      case "Unknown":
        return found
      case "Refused":
        return { _tag: "Respond", response: SessionAdmission.refuse(found.refused) } as const
      case "Unavailable":
        return { _tag: "Respond", response: Effect.succeed(found.response) } as const
    }
  })
}

const isInitializedNotification = (m: JsonRpc.Classified) =>
  m._tag === "Notification" && m.message.method === "notifications/initialized"

const missingSession = () => Security.invalid(400, "Bad Request: Mcp-Session-Id header is required")
const unknownSession = () => Security.invalid(404, "Session not found")

/** A stateless endpoint has neither the standalone stream nor sessions to end. */
const modernOnly = () =>
  Security.invalid(405, "Method Not Allowed: this endpoint serves protocol revision 2026-07-28 over POST only", {
    allow: "POST"
  })

const isInitialize = (m: JsonRpc.Classified) => m._tag === "Request" && m.message.method === "initialize"

const negotiatedVersion = (reply: JsonRpc.JsonRpcResponse): string | undefined => {
  if (!("result" in reply)) return undefined
  const v = (reply.result as { protocolVersion?: unknown } | null)?.protocolVersion
  return typeof v === "string" ? v : undefined
}

export const post = (env: Env): Guarded => (request, principal) =>
  ServerSpans.withHttpPeer(request, postMessages(env, request, principal))

type Response = Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope>

/**
 * The checks every POST passes, then its era's path. Plain functions and one
 * step for the body, not a generator: every request of either era runs it.
 */
const postMessages = (env: Env, request: HttpServerRequest.HttpServerRequest, principal: Security.Principal): Response => {
  if (!RequestBody.isJsonContent(request.headers["content-type"])) {
    return Effect.succeed(Security.invalid(415, "Unsupported Media Type: Content-Type must be application/json"))
  }
  const accepts = RequestBody.accepts(request.headers["accept"])
  if (!accepts.json && !accepts.sse) {
    return Effect.succeed(Security.invalid(406, "Not Acceptable: Accept must include application/json or text/event-stream"))
  }
  const repeated = EraRouting.repeatedHeader(request)
  if (repeated !== undefined) return Effect.succeed(repeated)
  return Effect.matchEffect(RequestBody.read(request, env.config.maxBodyBytes), {
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
      const era = EraRouting.decide(env, request.headers, messages)
      if (era._tag === "Refused") return Effect.succeed(era.response)
      if (era._tag === "Stateless") return StatelessPost.post(env, request, principal, accepts, decoded)
      return postToSession(env, request, principal, accepts, decoded, messages)
    }
  })
}

/** A POST of the handshake era (a session's, or one without a session). */
const postToSession = (
  env: Env,
  request: HttpServerRequest.HttpServerRequest,
  principal: Security.Principal,
  accepts: RequestBody.Accepts,
  decoded: Exclude<JsonRpc.Decoded, { readonly _tag: "ParseError" }>,
  messages: ReadonlyArray<JsonRpc.Classified>
) =>
  Effect.gen(function*() {
    const { config, sessions } = env
    const versionError = badVersion(env, request)
    if (Option.isSome(versionError)) return versionError.value

    let session: Session | undefined
    if (config.stateful) {
      const found = yield* find(env, request, principal)
      if (found._tag === "Unknown") return unknownSession()
      if (found._tag === "Respond") return yield* found.response
      if (found._tag === "Found") session = found.session
    }
    if (messages.length === 0) return Security.invalid(400, "Invalid Request: empty batch")
    if (decoded._tag === "Batch" && messages.length > config.maxBatchSize) {
      return batchTooLarge(config.maxBatchSize, messages.length)
    }
    const initialize = messages.some(isInitialize)
    if (initialize && decoded._tag === "Batch") {
      return Security.invalid(400, "Invalid Request: initialize must not be part of a batch")
    }
    const forbidden = env.authorize?.(principal, messages)
    if (forbidden !== undefined) return forbidden

    let ephemeral = false
    if (session === undefined) {
      if (config.stateful && initialize) {
        const created = yield* sessions.create("streamable", principal.id)
        if (isRefused(created)) return yield* SessionAdmission.refuse(created)
        session = created
        session.auth = principal.auth
      } else if (config.stateful && config.sessionlessPost === "reject") {
        return missingSession()
      } else {
        const created = yield* sessions.create("ephemeral", principal.id)
        if (isRefused(created)) return yield* SessionAdmission.refuse(created)
        session = created
        session.auth = principal.auth
        ephemeral = true
      }
    } else if (initialize) {
      return Security.invalid(400, "Invalid Request: session already initialized")
    }
    const s = session
    // An ephemeral session lives exactly as long as this HTTP exchange (the answer included).
    if (ephemeral) yield* Effect.addFinalizer(() => sessions.close(s))

    if (decoded._tag === "Batch") {
      const version = ephemeral ? request.headers["mcp-protocol-version"] : s.protocolVersion
      if (version !== undefined && version !== "2025-03-26") {
        return Security.invalid(400, `Invalid Request: batches are not supported by protocol revision ${version}`)
      }
    }

    const hasReplies = messages.some((m) => m._tag === "Request" || m._tag === "Invalid")
    // Each request takes a slot, as it would in a POST of its own; the exchange takes one in any case.
    const requests = messages.reduce((n, m) => m._tag === "Request" ? n + 1 : n, 0)
    const wanted = hasReplies ? Math.max(1, requests) : 0
    const grant = yield* sessions.enterSlots(principal.id, s, wanted)
    if (wanted > 0 && grant.granted === 0) {
      // A session made for this initialize must not outlive the refusal.
      if (initialize) yield* sessions.close(s)
      return yield* SlotRefusal.refuse(grant.short!)
    }
    const headers = sessionHeader(s)
    if (!s.initialized && messages.some(completesHandshake)) s.initialized = true
    const shared = ephemeral ? undefined : env.shared
    // The fleet learns the handshake is over before the client does (the 202), so its next request may go anywhere.
    if (shared !== undefined && messages.some(isInitializedNotification) && !(yield* SharedSessions.recordReady(shared, s))) {
      return SharedSessions.unavailable(shared)
    }
    const handle = (m: JsonRpc.Classified) =>
      shared === undefined ? s.server.handleMessage(m) : SharedSessions.handleMessage(shared, s, m)
    // What the fleet must know before the client reads the answer: the new session, the level set.
    const record = (m: JsonRpc.Classified, reply: JsonRpc.JsonRpcResponse | null) => {
      if (shared === undefined || reply === null || m._tag !== "Request") return Effect.succeed(reply)
      if (isInitialize(m)) {
        s.protocolVersion = negotiatedVersion(reply)
        return Effect.flatMap(Clock.currentTimeMillis, (now) => SharedSessions.recordInitialize(shared, s, m.message, reply, now))
      }
      return m.message.method === "logging/setLevel"
        ? Effect.as(SharedSessions.recordLevel(shared, s, m.message, reply), reply)
        : Effect.succeed(reply)
    }

    if (!hasReplies) {
      // Notifications and responses only: handled (a cancel has interrupted its target) before the 202.
      yield* Effect.forEach(messages, handle, { discard: true })
      return HttpServerResponse.empty({ status: 202, headers })
    }

    // A single message answered with JSON needs no response stream unless its handler sends the client
    // something on the way (or cuts the stream): the stream opens then, and this exchange waits for that
    // or for the answer, whichever comes first.
    const lazy = decoded._tag === "Single" && !initialize && accepts.json && config.responseMode !== "sse"
    // Named before it opens, so the in-flight registry can say where the answer goes.
    const streamId = env.inFlight !== undefined && !ephemeral ? newStreamId(s.id) : undefined
    const route = new PostRoute(accepts.sse, sessions, s, !ephemeral, streamId)
    if (!lazy) route.open()
    const claimed = new Set<JsonRpc.RequestId>()
    // Requests past the slots granted, in batch order: answered with the refusal, never run.
    const refused = new Set<JsonRpc.Classified>()
    let slots = grant.granted
    for (const m of messages) {
      if (m._tag !== "Request") continue
      if (slots === 0) refused.add(m)
      else {
        slots--
        if (!s.requestRoutes.has(m.message.id)) {
          s.requestRoutes.set(m.message.id, route)
          claimed.add(m.message.id)
        }
      }
    }
    const answer = (m: JsonRpc.Classified): Effect.Effect<JsonRpc.JsonRpcResponse | null> => {
      if (m._tag !== "Request") return handle(m)
      if (refused.has(m)) return SlotRefusal.refuseEntry(m.message.id, grant.short!)
      if (!claimed.has(m.message.id)) {
        return Effect.succeed(JsonRpc.invalidRequest(m.message.id, "a request with this id is still running"))
      }
      return s.server.handleMessage(m)
    }
    // The answer of a lazy exchange whose stream never opened.
    let direct: JsonRpc.JsonRpcResponse | undefined
    const deliver = (reply: JsonRpc.JsonRpcResponse) => {
      if (route.opened === undefined) {
        direct = reply
        return Effect.void
      }
      return route.opened.offer(reply)
    }
    const answerOne = (m: JsonRpc.Classified) =>
      answer(m).pipe(
        Effect.flatMap((reply) => record(m, reply)),
        Effect.flatMap((reply) => {
          if (reply !== null && isInitialize(m)) s.protocolVersion = negotiatedVersion(reply)
          if (reply === null) return Effect.void
          return deliver(reply)
        })
      )
    const answering = messages.length === 1
      ? answerOne(messages[0])
      : Effect.forEach(messages, answerOne, { concurrency: "unbounded", discard: true })
    const work = InFlightWork.tracked(env.inFlight, s.id, streamId, claimed, answering, deliver).pipe(
        Effect.ensuring(Effect.suspend(() => {
          for (const id of claimed) if (s.requestRoutes.get(id) === route) s.requestRoutes.delete(id)
          // No route left to open the stream through: a stream not open by now never will be.
          if (route.opened === undefined) {
            route.settle()
            return Effect.void
          }
          return route.opened.end
        }))
      )
    // The work belongs to the session: a client that disconnects does not cancel it,
    // and it keeps the slots taken until it ends.
    yield* runHoldingSlots(s, grant, work)

    if (lazy) {
      // A handler done by now (it started at once) answered without a stream: no wait.
      if (!route.settled) yield* route.openedOrAnswered
      if (route.opened === undefined) {
        if (direct === undefined && env.drain?.draining() === true && messages[0]._tag === "Request") {
          // Interrupted by shutdown past its grace period: an answer, so the client does not wait for one.
          return jsonAnswer(JSON.stringify(interruptedByShutdown(messages[0].message.id)), headers)
        }
        return direct === undefined
          ? HttpServerResponse.empty({ status: 202, headers })
          : jsonAnswer(JSON.stringify(direct), headers)
      }
    }
    const out = route.opened!

    // Answered already (a quick handler) with responses only: the whole SSE body in one write.
    const stream = Effect.suspend(() => {
      const opening = {
        priming: !ephemeral && primes(s.protocolVersion ?? request.headers["mcp-protocol-version"]),
        retryMs: ephemeral ? undefined : config.retryMs,
        lastEventId: undefined,
        cut: SseWire.cutter(request)
      }
      return Effect.map(out.takeWhole(opening), (body) =>
        body === undefined ? SseWire.response(out.attach(opening), headers) : SseWire.whole(body, headers))
    })

    if (config.responseMode === "sse" && accepts.sse) return yield* stream
    // A JSON-only client waits for the end whatever the handler sends on the way.
    const streams = accepts.sse ? yield* out.awaitStreamingOrEnd : yield* Effect.as(out.awaitEnded, false)
    if (streams || (accepts.sse && out.isStreaming())) return yield* stream
    if (!accepts.json) return yield* stream
    const replies = yield* out.takeQueued
    s.liveStreams.delete(out.streamId)
    yield* env.store.removeStream(out.streamId)
    s.ownedStreams.delete(out.streamId)
    if (initialize && (replies.length === 0 || !("result" in replies[0].message))) {
      // A failed initialize leaves no session behind.
      yield* sessions.close(s)
      return replies.length === 0 ? HttpServerResponse.empty({ status: 202 }) : jsonAnswer(replies[0].json, {})
    }
    if (replies.length === 0) return HttpServerResponse.empty({ status: 202, headers })
    // The replies' JSON was computed when they were queued (to size them): not serialized again.
    return jsonAnswer(decoded._tag === "Single" ? replies[0].json : `[${replies.map((r) => r.json).join(",")}]`, headers)
  })

/**
 * Where the messages a POST's handlers send on the way go. Its response
 * stream is made on first use (`out`, read by the session's `sendFor` and
 * `closeSseStream`), or up front with `open`.
 */
class PostRoute implements RequestRoute {
  opened: OutStream | undefined = undefined
  /** Woken when the stream opens or the work ends without it. */
  readonly #settled = new WakeOnce()
  readonly canStream: boolean
  readonly #sessions: Sessions
  readonly #session: Session
  readonly #resumable: boolean
  readonly #streamId: string | undefined
  constructor(canStream: boolean, sessions: Sessions, session: Session, resumable: boolean, streamId?: string) {
    this.canStream = canStream
    this.#sessions = sessions
    this.#session = session
    this.#resumable = resumable
    this.#streamId = streamId
  }
  get out(): OutStream {
    return this.open()
  }
  open(): OutStream {
    if (this.opened === undefined) {
      this.opened = this.#sessions.openStream(this.#session, this.#resumable, this.#streamId)
      this.settle()
    }
    return this.opened
  }
  /** Wakes `openedOrAnswered`: the stream opened, or the work ended without it. */
  settle(): void {
    this.#settled.wake()
  }
  /** The stream opened, or the work ended without it. */
  get settled(): boolean {
    return this.#settled.woken
  }
  get openedOrAnswered(): Effect.Effect<void> {
    return this.#settled.await
  }
}

const interruptedByShutdown = (id: JsonRpc.RequestId) =>
  JsonRpc.failure(id, JsonRpc.ErrorCode.InternalError, "The server shut down before the request finished")

const jsonAnswer = (json: string, headers: Record<string, string>) =>
  HttpServerResponse.text(json, { contentType: "application/json", headers })

export const get = (env: Env): Guarded => (request, principal) =>
  Effect.gen(function*() {
    const { config, sessions, store } = env
    if (config.eras === "modern") return modernOnly()
    if (!config.stateful || !config.standaloneStream) {
      return Security.invalid(405, "Method Not Allowed: this server offers no standalone SSE stream", {
        allow: config.stateful ? "POST, DELETE" : "POST"
      })
    }
    if (!RequestBody.acceptsEventStream(request.headers["accept"])) {
      return Security.invalid(406, "Not Acceptable: Accept must include text/event-stream")
    }
    const versionError = badVersion(env, request)
    if (Option.isSome(versionError)) return versionError.value
    const found = yield* find(env, request, principal)
    if (found._tag === "Missing") return missingSession()
    if (found._tag === "Unknown") return unknownSession()
    if (found._tag === "Respond") return yield* found.response
    const session = found.session
    const headers = sessionHeader(session)
    const lastEventId = request.headers["last-event-id"]

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
        priming: primes(session.protocolVersion ?? request.headers["mcp-protocol-version"]),
        retryMs: config.retryMs,
        lastEventId: undefined,
        cut: SseWire.cutter(request)
      })
    }
    const admission = yield* sessions.enter(principal.id, session, true)
    if (admission !== "ok") return yield* SlotRefusal.refuse(admission)
    return SseWire.response(frames, headers)
  })

export const del = (env: Env): Guarded => (request, principal) =>
  Effect.gen(function*() {
    if (env.config.eras === "modern") return modernOnly()
    if (!env.config.stateful) {
      return Security.invalid(405, "Method Not Allowed: stateless server has no sessions", { allow: "POST" })
    }
    const versionError = badVersion(env, request)
    if (Option.isSome(versionError)) return versionError.value
    const found = yield* find(env, request, principal)
    if (found._tag === "Missing") return missingSession()
    if (found._tag === "Unknown") return unknownSession()
    if (found._tag === "Respond") return yield* found.response
    if (env.shared === undefined) yield* env.sessions.close(found.session)
    else if (!(yield* SharedSessions.end(env.shared, env.sessions, found.session))) return SharedSessions.unavailable(env.shared)
    return HttpServerResponse.empty({ status: 204 })
  })
