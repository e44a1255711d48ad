/**
 * A POST of the handshake era on the Streamable HTTP endpoint (a session's,
 * or one without a session): the session found or made for it, the slots
 * its requests take, the handling of its messages as the session's work,
 * and its answer, JSON or an SSE stream. The stream is opened up front or,
 * for a single message answered with JSON, on first use (PostRoute).
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as BatchLimit from "../../internal/BatchLimit.ts"
import * as JsonRpc from "../../JsonRpc.ts"
import type { Env } from "./Guard.ts"
import * as InFlightWork from "./InFlightWork.ts"
import type { OutStream } from "./OutStream.ts"
import * as OwedReplies from "./OwedReplies.ts"
import type { Queued } from "./OutStreamShape.ts"
import type * as RequestBody from "./RequestBody.ts"
import * as ResponseHeaders from "./ResponseHeaders.ts"
import * as Security from "./Security.ts"
import * as SessionAdmission from "./SessionAdmission.ts"
import { badVersion, find, lookup, missingSession, primes, sessionHeader, unknownSession } from "./SessionHeaders.ts"
import {
  completesHandshake,
  isRefused,
  newStreamId,
  type RequestRoute,
  runHoldingSlotsUnsafe,
  type Session,
  type Sessions
} from "./Sessions.ts"
import * as SharedSessions from "./SharedSessions.ts"
import * as SlotRefusal from "./SlotRefusal.ts"
import * as SseWire from "./SseWire.ts"
import { WakeOnce } from "./WakeOnce.ts"

const batchTooLarge = (limit: number, size: number) =>
  Security.errorResponse(413, JsonRpc.ErrorCode.InvalidRequest, `Invalid Request: ${BatchLimit.reason(limit)}`, { limit, size })

const isInitializedNotification = (m: JsonRpc.Classified) =>
  m._tag === "Notification" && m.message.method === "notifications/initialized"

const isInitialize = (m: JsonRpc.Classified) => m._tag === "Request" && m.message.method === "initialize"

const negotiatedVersion = (reply: JsonRpc.JsonRpcResponse): string | undefined => {
  if (!("result" in reply)) return undefined
  const v = (reply.result as { protocolVersion?: unknown } | null)?.protocolVersion
  return typeof v === "string" ? v : undefined
}

/**
 * A POST of the handshake era (a session's, or one without a session).
 *
 * One generator function for every POST (`fnUntraced`), not one made per
 * POST: see docs/design.md, "Per-request code and the old generation".
 */
export const postToSession = Effect.fnUntraced(function*(
  env: Env,
  request: HttpServerRequest.HttpServerRequest,
  principal: Security.Principal,
  accepts: RequestBody.Accepts,
  decoded: Exclude<JsonRpc.Decoded, { readonly _tag: "ParseError" }>,
  messages: ReadonlyArray<JsonRpc.Classified>
) {
  const { config, sessions } = env
  const versionError = badVersion(env, request)
  if (Option.isSome(versionError)) return versionError.value
  // The fiber this generator runs in: what is known at once is done here as plain code, since every
  // `yield*`, even of an answer ready at once, is a step of the exchange.
  const exchange = Fiber.getCurrent()!

  let session: Session | undefined
  if (config.stateful) {
    // Without a fleet the session is in this instance's table: no registry to ask.
    const found = env.shared === undefined ? lookup(env, request, principal) : yield* find(env, request, principal)
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
  // The slots' way out is registered before they are taken, and they are taken in the step that reads
  // the registration: no step in between where the exchange could end holding them.
  let leave: Effect.Effect<void> | undefined
  yield* Scope.addFinalizerExit(Context.getUnsafe(exchange.context, Scope.Scope), () => leave ?? Effect.void)
  const entry = sessions.enterSlotsUnsafe(principal.id, s, wanted, exchange.getRef(Clock.Clock))
  leave = entry.leave
  const grant = entry.grant
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
    if (m._tag !== "Request") return handle(m)
    if (refused?.has(m) === true) return SlotRefusal.refuseEntry(m.message.id, grant.short!)
    if (!claimed.has(m.message.id)) {
      return Effect.succeed(JsonRpc.invalidRequest(m.message.id, "a request with this id is still running"))
    }
    if (repeated?.has(m) === true) {
      return Effect.succeed(JsonRpc.invalidRequest(m.message.id, "another request of this batch has this id"))
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
    route.replied(reply.id)
    return route.opened.offer(reply)
  }
  // Whether an initialize got its result (not `s.initialized`, the client's `initialized`): until then, no
  // answer may carry the session's id.
  let initializeSucceeded = false
  const delivered = (m: JsonRpc.Classified, reply: JsonRpc.JsonRpcResponse | null) => {
    if (reply !== null && isInitialize(m)) {
      s.protocolVersion = negotiatedVersion(reply)
      initializeSucceeded = "result" in reply
    }
    if (reply === null) return Effect.void
    return deliver(reply)
  }
  // Without a fleet there is nothing to record: the reply goes straight on, from the step that reads it.
  const answerOne = (m: JsonRpc.Classified) =>
    shared !== undefined
      ? Effect.flatMap(Effect.flatMap(answer(m), (reply) => record(m, reply)), (reply) => delivered(m, reply))
      : runs(m)
      ? s.server.handleRequest(m.message, (reply) => delivered(m, reply))
      : Effect.flatMap(answer(m), (reply) => delivered(m, reply))
  // One request of a session here alone: its handler starts in this step, and one that answers while it
  // starts leaves no work for a fiber of the session to do.
  const only = messages.length === 1 ? messages[0] : undefined
  const answering = only === undefined
    ? OwedReplies.answerEach(messages, answerOne)
    : shared === undefined && env.inFlight === undefined && runs(only) && s.work.state._tag === "Open"
    ? s.server.handleRequestIn(exchange, only.message, (reply) => delivered(only, reply))
    : answerOne(only)
  // Refused by the in-flight registry, the requests recorded there get its refusal; the rest are answered as usual.
  const others = env.inFlight === undefined ? undefined : () => {
    const rest = messages.filter((m) =>
      m._tag !== "Request" || refused?.has(m) === true || !claimed.has(m.message.id) || repeated?.has(m) === true
    )
    return rest.length === 0 ? Effect.void : OwedReplies.answerEach(rest, answerOne)
  }
  const tracked = InFlightWork.tracked(env.inFlight, s.id, streamId, claimed, answering, deliver, others)
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
      (failed || env.drain?.draining() === true) && accepts.sse &&
      (config.responseMode === "sse" || !accepts.json || out.isStreaming())
    ) {
      return Effect.uninterruptible(OwedReplies.onStream(env, out, route.unanswered(messages), failed ? cause : undefined))
    }
    return Effect.uninterruptible(out.end)
  }
  // The work's fiber; none when the work was over as it started (its end is then done here).
  let fiber: Fiber.Fiber<void> | undefined
  if (Exit.isExit(tracked) && Exit.isSuccess(tracked)) {
    const ending = finish(undefined)
    if (!Exit.isExit(ending)) yield* ending
  } else {
    // One continuation for either end, not `onExit`'s several steps: an interruption takes the failure's
    // branch too, and the work's fiber keeps its exit (a failure is what `owedReplies` reads).
    const work = Effect.matchCauseEffect(tracked, {
      onSuccess: () => finish(undefined),
      onFailure: (cause) => Effect.andThen(finish(cause), Effect.failCause(cause))
    })
    // The work belongs to the session: a client that disconnects does not cancel it,
    // and it keeps the slots taken until it ends.
    fiber = runHoldingSlotsUnsafe(exchange, s, grant, work)
  }

  if (lazy) {
    // A handler done by now (it started at once) answered without a stream: no wait.
    if (!route.settled) yield* route.openedOrAnswered
    if (route.opened === undefined) {
      if (direct !== undefined) return jsonAnswer(JSON.stringify(direct), headers)
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
      priming: !ephemeral && primes(s.protocolVersion ?? request.headers["mcp-protocol-version"]),
      retryMs: ephemeral ? undefined : config.retryMs,
      lastEventId: undefined,
      cut: SseWire.cutter(request)
    }
    return Effect.map(out.takeWhole(opening), (body) =>
      body === undefined ? SseWire.response(out.attach(opening), headers) : SseWire.whole(body, headers))
  })

  // An initialize is answered once its reply is known, whatever the wire: a failed one hands out no session
  // (below, with the JSON answer's own cleanup).
  if (initialize) yield* out.awaitEnded
  if (!initialize || initializeSucceeded) {
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
  // The ids of the replies offered to the stream, which a failed work reads to know what it still owes:
  // the first apart, so that a POST of one request pays for no array.
  #replies = 0
  #firstReply: JsonRpc.RequestId | null = null
  #moreReplies: Array<JsonRpc.RequestId | null> | undefined = undefined
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
  /** A reply with this id went into the stream. */
  replied(id: JsonRpc.RequestId | null): void {
    if (this.#replies++ === 0) this.#firstReply = id
    else (this.#moreReplies ??= []).push(id)
  }
  /** The ids of `messages` owed a reply that the stream got none for, in the POST's order. */
  unanswered(messages: ReadonlyArray<JsonRpc.Classified>): Array<JsonRpc.RequestId | null> {
    const ids = this.#replies === 0 ? [] : [this.#firstReply, ...(this.#moreReplies ?? [])]
    return OwedReplies.unansweredOnStream(messages, ids)
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

const toQueued = (reply: JsonRpc.JsonRpcResponse): Queued => ({ message: reply, json: JSON.stringify(reply) })

const jsonAnswer = (json: string, headers: Record<string, string>) =>
  ResponseHeaders.add(HttpServerResponse.text(json, { contentType: "application/json" }), headers)
