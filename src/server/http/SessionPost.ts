/**
 * A POST of the handshake era on the Streamable HTTP endpoint (a session's,
 * or one without a session): the session found or made for it, the slots
 * its requests take, the handling of its messages as the session's work,
 * and its answer, JSON or an SSE stream. The stream is opened up front or,
 * for a single message answered with JSON, on first use (PostRoute).
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as BatchLimit from "../../internal/BatchLimit.ts"
import * as JsonRpc from "../../JsonRpc.ts"
import type { LeaseLost } from "../InstanceLease.ts"
import type { Env } from "./Guard.ts"
import * as InFlightWork from "./InFlightWork.ts"
import * as OwedReplies from "./OwedReplies.ts"
import type { Queued } from "./OutStreamShape.ts"
import type * as RequestBody from "./RequestBody.ts"
import type { RequestHeaders } from "./RequestHeaders.ts"
import { isInitialize, negotiatedVersion, PostRoute } from "./PostRoute.ts"
import * as ResponseHeaders from "./ResponseHeaders.ts"
import * as Security from "./Security.ts"
import * as SessionAdmission from "./SessionAdmission.ts"
import { badVersion, find, lookup, missingSession, primes, sessionHeader, unknownSession } from "./SessionHeaders.ts"
import {
  completesHandshake,
  enterSlotsThen,
  type Grant,
  isRefused,
  newStreamId,
  runHoldingSlotsUnsafe,
  type Session
} from "./Sessions.ts"
import * as SharedSessions from "./SharedSessions.ts"
import * as SlotRefusal from "./SlotRefusal.ts"
import * as SseWire from "./SseWire.ts"

const batchTooLarge = (limit: number, size: number) =>
  Security.errorResponse(413, JsonRpc.ErrorCode.InvalidRequest, `Invalid Request: ${BatchLimit.reason(limit)}`, { limit, size })

const isInitializedNotification = (m: JsonRpc.Classified) =>
  m._tag === "Notification" && m.message.method === "notifications/initialized"

type Response = Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope>
type Decoded = Exclude<JsonRpc.Decoded, { readonly _tag: "ParseError" }>

/**
 * A POST of the handshake era (a session's, or one without a session).
 *
 * The common one, a single request of a session this instance holds, with
 * no fleet, is answered by plain functions: through the generator
 * (`admitAny`) it cost a fifth more instructions (BENCHMARKS.md, "A
 * session's request without a generator").
 */
export const postToSession = (
  env: Env,
  request: HttpServerRequest.HttpServerRequest,
  headers: RequestHeaders,
  principal: Security.Principal,
  accepts: RequestBody.Accepts,
  decoded: Decoded,
  messages: ReadonlyArray<JsonRpc.Classified>
): Response => {
  const only = decoded._tag === "Single" ? messages[0] : undefined
  if (
    only?._tag === "Request" && !isInitialize(only) && isLazy(env, accepts) && env.config.stateful &&
    env.shared === undefined && env.inFlight === undefined
  ) {
    const versionError = badVersion(env, headers)
    if (Option.isSome(versionError)) return Effect.succeed(versionError.value)
    const found = lookup(env, headers, principal)
    if (found._tag === "Unknown") return Effect.succeed(unknownSession())
    // Its id free and the session taking work; anything else is the generator's to tell apart.
    if (
      found._tag === "Found" && !found.session.requestRoutes.has(only.message.id) &&
      found.session.work.state._tag === "Open"
    ) {
      const s = found.session
      const forbidden = env.authorize?.(principal, messages)
      if (forbidden !== undefined) return Effect.succeed(forbidden)
      return Effect.withFiber((exchange) =>
        enterSlotsThen(env.sessions.enterSlotsUnsafe, exchange, principal.id, s, 1, (grant): Response => {
          if (grant.granted === 0) return SlotRefusal.refuse(grant.short!)
          if (!s.initialized && completesHandshake(only)) s.initialized = true
          return beginAndRespond(admittedOf(env, request, headers, accepts, decoded, messages, s, grant, false, false), exchange)
        })
      )
    }
  }
  return admitAny(env, request, headers, principal, accepts, decoded, messages)
}

/**
 * A single message answered with JSON needs no response stream unless its handler sends the client
 * something on the way (or cuts the stream): the stream opens then, and the exchange waits for that
 * or for the answer, whichever comes first.
 */
const isLazy = (env: Env, accepts: RequestBody.Accepts) => accepts.json && env.config.responseMode !== "sse"

/** A POST whose slots are taken: what its work and its answer need. */
interface Admitted {
  readonly env: Env
  readonly request: HttpServerRequest.HttpServerRequest
  readonly requestHeaders: RequestHeaders
  readonly accepts: RequestBody.Accepts
  readonly decoded: Decoded
  readonly messages: ReadonlyArray<JsonRpc.Classified>
  readonly session: Session
  readonly grant: Grant
  /** The headers naming the session, for the answer. */
  readonly headers: Record<string, string>
  readonly initialize: boolean
  /** A session made for this POST alone, ended with its exchange. */
  readonly ephemeral: boolean
  /** The fleet's store, for a session it shares. */
  readonly shared: SharedSessions.Shared | undefined
  /** Whether the response stream opens on first use only (`isLazy`). */
  readonly lazy: boolean
}

/** The record of a POST whose slots are taken, for either path. */
const admittedOf = (
  env: Env,
  request: HttpServerRequest.HttpServerRequest,
  requestHeaders: RequestHeaders,
  accepts: RequestBody.Accepts,
  decoded: Decoded,
  messages: ReadonlyArray<JsonRpc.Classified>,
  session: Session,
  grant: Grant,
  initialize: boolean,
  ephemeral: boolean
): Admitted => ({
  env,
  request,
  requestHeaders,
  accepts,
  decoded,
  messages,
  session,
  grant,
  headers: sessionHeader(session),
  initialize,
  ephemeral,
  shared: ephemeral ? undefined : env.shared,
  lazy: decoded._tag === "Single" && !initialize && isLazy(env, accepts)
})

/**
 * Any POST of the handshake era: its session found or made, the checks it
 * passes, its slots taken, then its work and answer as the common POST's.
 *
 * One generator function for every POST (`fnUntraced`), not one made per
 * POST: see docs/design.md, "Per-request code and the old generation".
 */
const admitAny = Effect.fnUntraced(function*(
  env: Env,
  request: HttpServerRequest.HttpServerRequest,
  requestHeaders: RequestHeaders,
  principal: Security.Principal,
  accepts: RequestBody.Accepts,
  decoded: Decoded,
  messages: ReadonlyArray<JsonRpc.Classified>
) {
  const { config, sessions } = env
  const versionError = badVersion(env, requestHeaders)
  if (Option.isSome(versionError)) return versionError.value

  let session: Session | undefined
  if (config.stateful) {
    const found = yield* find(env, requestHeaders, principal)
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
    const version = ephemeral ? requestHeaders["mcp-protocol-version"] : s.protocolVersion
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
  const admitted = admittedOf(env, request, requestHeaders, accepts, decoded, messages, s, grant, initialize, ephemeral)
  const { headers, shared } = admitted
  if (!s.initialized && messages.some(completesHandshake)) s.initialized = true
  // The fleet learns the handshake is over before the client does (the 202), so its next request may go anywhere.
  if (shared !== undefined && messages.some(isInitializedNotification) && !(yield* SharedSessions.recordReady(shared, s))) {
    return SharedSessions.unavailable(shared)
  }

  if (!hasReplies) {
    // Notifications and responses only: handled (a cancel has interrupted its target) before the 202.
    yield* Effect.forEach(messages, (m) => handle(shared, s, m), { discard: true })
    return HttpServerResponse.empty({ status: 202, headers })
  }

  return yield* beginAndRespond(admitted, Fiber.getCurrent()!)
})

const handle = (shared: SharedSessions.Shared | undefined, s: Session, m: JsonRpc.Classified) =>
  shared === undefined ? s.server.handleMessage(m) : SharedSessions.handleMessage(shared, s, m)

/** What the fleet must know before the client reads the answer: the new session, the level set. */
const record = (
  shared: SharedSessions.Shared,
  s: Session,
  m: JsonRpc.Classified,
  reply: JsonRpc.JsonRpcResponse | null
): Effect.Effect<JsonRpc.JsonRpcResponse | null> => {
  if (reply === null || m._tag !== "Request") return Effect.succeed(reply)
  if (m.message.method === "initialize") {
    s.protocolVersion = negotiatedVersion(reply)
    return Effect.flatMap(Clock.currentTimeMillis, (now) => SharedSessions.recordInitialize(shared, s, m.message, reply, now))
  }
  return m.message.method === "logging/setLevel"
    ? Effect.as(SharedSessions.recordLevel(shared, s, m.message, reply), reply)
    : Effect.succeed(reply)
}

/** A POST's work under way: where its replies go, and its fiber (none when it was over as it started). */
interface Started {
  readonly route: PostRoute
  readonly fiber: Fiber.Fiber<void> | undefined
  /** What a work over as it started left for the exchange to run (its stream's end). */
  readonly ending: Effect.Effect<void> | undefined
}

/**
 * Starts a POST's work in the step of `exchange` that took its slots: its
 * requests claimed in the session, their handlers started, and the work
 * given a fiber of the session's unless it was over as it started.
 */
const begin = (a: Admitted, exchange: Fiber.Fiber<unknown, unknown>): Started => {
  const { env, messages, session: s, grant, shared } = a
  // Named before it opens, so the in-flight registry can say where the answer goes.
  const streamId = env.inFlight !== undefined && !a.ephemeral ? newStreamId(s.id) : undefined
  const route = new PostRoute(a.accepts.sse, env.sessions, s, !a.ephemeral, streamId)
  if (!a.lazy) route.open()
  const claimed = new Set<JsonRpc.RequestId>()
  // Requests past the slots granted, in batch order: answered with the refusal, never run (made only for those).
  let refused: Set<JsonRpc.Classified> | undefined
  // Requests whose id an earlier entry of this batch claimed: never run, since the session would drop them unanswered.
  let repeated: Set<JsonRpc.Classified> | undefined
  let slots = grant.granted
  for (const m of messages) {
    if (m._tag !== "Request") continue
    if (slots === 0) (refused ??= new Set()).add(m)
    else {
      slots--
      if (!s.requestRoutes.has(m.message.id)) {
        s.requestRoutes.set(m.message.id, route)
        claimed.add(m.message.id)
      } else if (claimed.has(m.message.id)) (repeated ??= new Set()).add(m)
    }
  }
  // A request this POST runs: not one refused a slot, nor one whose id is taken.
  const runs = (m: JsonRpc.Classified): m is JsonRpc.Classified & { readonly _tag: "Request" } =>
    m._tag === "Request" && refused?.has(m) !== true && claimed.has(m.message.id) && repeated?.has(m) !== true
  const answer = (m: JsonRpc.Classified): Effect.Effect<JsonRpc.JsonRpcResponse | null> => {
    if (m._tag !== "Request") return handle(shared, s, m)
    if (refused?.has(m) === true) return SlotRefusal.refuseEntry(m.message.id, grant.short!)
    if (!claimed.has(m.message.id)) {
      return Effect.succeed(JsonRpc.invalidRequest(m.message.id, "a request with this id is still running"))
    }
    if (repeated?.has(m) === true) {
      return Effect.succeed(JsonRpc.invalidRequest(m.message.id, "another request of this batch has this id"))
    }
    return s.server.handleMessage(m)
  }
  // Without a fleet there is nothing to record: the reply goes straight on, from the step that reads it.
  const answerOne = (m: JsonRpc.Classified) =>
    shared !== undefined
      ? Effect.flatMap(Effect.flatMap(answer(m), (reply) => record(shared, s, m, reply)), (reply) => route.delivered(m, reply))
      : runs(m)
      ? s.server.handleRequest(m.message, (reply) => route.delivered(m, reply))
      : Effect.flatMap(answer(m), (reply) => route.delivered(m, reply))
  // One request of a session here alone: its handler starts in this step, and one that answers while it
  // starts leaves no work for a fiber of the session to do.
  const only = messages.length === 1 ? messages[0] : undefined
  const answering = only === undefined
    ? OwedReplies.answerEach(messages, answerOne)
    : shared === undefined && env.inFlight === undefined && runs(only) && s.work.state._tag === "Open"
    ? s.server.handleRequestIn(exchange, only.message, (reply) => route.delivered(only, reply))
    : answerOne(only)
  // Refused by the in-flight registry, the requests recorded there get its refusal; the rest are answered as usual.
  const others = env.inFlight === undefined ? undefined : () => {
    const rest = messages.filter((m) =>
      m._tag !== "Request" || refused?.has(m) === true || !claimed.has(m.message.id) || repeated?.has(m) === true
    )
    return rest.length === 0 ? Effect.void : OwedReplies.answerEach(rest, answerOne)
  }
  // A stream that opens on first use is recorded only if it opens: a JSON answer never reaches the event log.
  const recordLater = a.lazy && env.inFlight !== undefined
    ? (record: Effect.Effect<void, LeaseLost>) => route.recordBeforeOpening(record)
    : undefined
  const tracked = InFlightWork.tracked(
    env.inFlight,
    s.id,
    streamId,
    claimed,
    answering,
    (r) => route.deliver(r),
    others,
    recordLater
  )
  // What the work's end leaves to do, however it ends (`cause` when it failed or was interrupted).
  const finish = (cause: Cause.Cause<never> | undefined): Effect.Effect<void> => {
    for (const id of claimed) if (s.requestRoutes.get(id) === route) s.requestRoutes.delete(id)
    const out = route.opened
    // No route left to open the stream through: a stream not open by now never will be.
    if (out === undefined) {
      route.settle()
      return Effect.void
    }
    // A client that reads this stream itself (the answer is SSE) is owed its missing replies before the stream
    // ends; a JSON answer, made from the stream once it ended, after (`owedReplies`). Work only interrupted
    // owes nothing (a cancelled request, a DELETE, a closing session get no reply), unless the server is
    // shutting down (its handlers interrupted, the work ends without their replies): that client would
    // otherwise wait, or resume the stream elsewhere, for an answer no instance will give.
    const failed = cause !== undefined && !Cause.hasInterruptsOnly(cause)
    if (
      (failed || env.drain?.draining() === true) && a.accepts.sse &&
      (env.config.responseMode === "sse" || !a.accepts.json || out.isStreaming())
    ) {
      return Effect.uninterruptible(OwedReplies.onStream(env, out, route.unanswered(messages), failed ? cause : undefined))
    }
    return Effect.uninterruptible(out.end)
  }
  if (Exit.isExit(tracked) && Exit.isSuccess(tracked)) {
    const ending = finish(undefined)
    return { route, fiber: undefined, ending: Exit.isExit(ending) ? undefined : ending }
  }
  // One continuation for either end, not `onExit`'s several steps: an interruption takes the failure's
  // branch too, and the work's fiber keeps its exit (a failure is what `owedReplies` reads).
  const work = Effect.matchCauseEffect(tracked, {
    onSuccess: () => finish(undefined),
    onFailure: (cause) => Effect.andThen(finish(cause), Effect.failCause(cause))
  })
  // The work belongs to the session: a client that disconnects does not cancel it,
  // and it keeps the slots taken until it ends.
  return { route, fiber: runHoldingSlotsUnsafe(exchange, s, grant, work), ending: undefined }
}

/** `begin`, then `respond` once what a work over as it started left to run has run. */
const beginAndRespond = (a: Admitted, exchange: Fiber.Fiber<unknown, unknown>): Response => {
  const started = begin(a, exchange)
  return started.ending === undefined
    ? respond(a, started.route, started.fiber)
    : Effect.andThen(started.ending, Effect.suspend(() => respond(a, started.route, started.fiber)))
}

/** A POST's answer once its work is under way: the reply at once if the work gave it already. */
const respond = (a: Admitted, route: PostRoute, fiber: Fiber.Fiber<void> | undefined): Response =>
  a.lazy && route.opened === undefined && route.direct !== undefined && route.settled
    ? Effect.succeed(jsonAnswer(JSON.stringify(route.direct), a.headers))
    : awaitAnswer(a, route, fiber)

/** `respond` for an answer not known yet, or not a single JSON reply. */
const awaitAnswer = Effect.fnUntraced(function*(a: Admitted, route: PostRoute, fiber: Fiber.Fiber<void> | undefined) {
  const { accepts, env, headers, initialize, messages, request, requestHeaders, session: s } = a
  const { config, sessions } = env
  if (a.lazy) {
    // A handler done by now (it started at once) answered without a stream: no wait.
    if (!route.settled) yield* route.openedOrAnswered
    if (route.opened === undefined) {
      if (route.direct !== undefined) return jsonAnswer(JSON.stringify(route.direct), headers)
      // The work is over (the stream can no longer open): what it left unanswered is owed now.
      const owed = yield* OwedReplies.owedReplies(env, fiber, messages, [])
      if (!Array.isArray(owed)) return owed
      return owed.length === 0
        ? HttpServerResponse.empty({ status: 202, headers })
        : jsonAnswer(JSON.stringify(owed[0]), headers)
    }
  }
  const out = route.opened!

  // Answered already (a quick handler) with responses only: the whole SSE body in one write.
  const stream = Effect.suspend(() => {
    const opening = {
      priming: !a.ephemeral && primes(s.protocolVersion ?? requestHeaders["mcp-protocol-version"]),
      retryMs: a.ephemeral ? undefined : config.retryMs,
      lastEventId: undefined,
      cut: SseWire.cutter(request)
    }
    return Effect.map(out.takeWhole(opening), (body) =>
      body === undefined ? SseWire.response(out.attach(opening), headers) : SseWire.whole(body, headers))
  })

  // An initialize is answered once its reply is known, whatever the wire: a failed one hands out no session
  // (below, with the JSON answer's own cleanup).
  if (initialize) yield* out.awaitEnded
  if (!initialize || route.initializeSucceeded) {
    if (config.responseMode === "sse" && accepts.sse) return yield* stream
    // A JSON-only client waits for the end whatever the handler sends on the way.
    const streams = accepts.sse ? yield* out.awaitStreamingOrEnd : yield* Effect.as(out.awaitEnded, false)
    if (streams || (accepts.sse && out.isStreaming())) return yield* stream
    if (!accepts.json) return yield* stream
  }
  const queued = yield* out.takeQueued
  s.liveStreams.delete(out.streamId)
  yield* env.store.removeStream(out.streamId)
  s.ownedStreams.delete(out.streamId)
  const owed = yield* OwedReplies.owedReplies(env, fiber, messages, queued)
  if (!Array.isArray(owed)) {
    if (initialize) yield* sessions.close(s)
    return owed
  }
  const replies = owed.length === 0 ? queued : [...queued, ...owed.map(toQueued)]
  const initializeReply = initialize ? replies.find((r) => JsonRpc.isResponse(r.message)) : undefined
  if (initialize && (initializeReply === undefined || !("result" in initializeReply.message))) {
    // A failed initialize leaves no session behind. What its handler sent on the way goes only on SSE.
    yield* sessions.close(s)
    if (initializeReply === undefined) return HttpServerResponse.empty({ status: 202 })
    return accepts.json
      ? jsonAnswer(initializeReply.json, {})
      : SseWire.whole(replies.map((r) => SseWire.event(r.json)).join(""), {})
  }
  if (replies.length === 0) return HttpServerResponse.empty({ status: 202, headers })
  // The replies' JSON was computed when they were queued (to size them): not serialized again.
  return jsonAnswer(a.decoded._tag === "Single" ? replies[0].json : `[${replies.map((r) => r.json).join(",")}]`, headers)
})

const toQueued = (reply: JsonRpc.JsonRpcResponse): Queued => ({ message: reply, json: JSON.stringify(reply) })

const jsonAnswer = (json: string, headers: Record<string, string>) =>
  ResponseHeaders.add(HttpServerResponse.text(json, { contentType: "application/json" }), headers)
