/**
 * What a handshake-era POST owes the requests its work left without a reply
 * when that work ends: a client waits for an answer to each request it sent,
 * so one that will never come has to be said.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as JsonRpc from "../../JsonRpc.ts"
import type { Env } from "./Guard.ts"
import type { OutStream, Queued } from "./OutStreamShape.ts"
import * as SharedUnavailable from "./SharedUnavailable.ts"

export const interruptedByShutdown = (id: JsonRpc.RequestId | null) =>
  JsonRpc.failure(id, JsonRpc.ErrorCode.InternalError, "The server shut down before the request finished")

/**
 * Runs each message's answer to its end whatever becomes of the others', so
 * that one whose answer fails does not take its siblings' replies with it;
 * fails afterwards with what failed.
 */
export const answerEach = (
  messages: ReadonlyArray<JsonRpc.Classified>,
  answerOne: (m: JsonRpc.Classified) => Effect.Effect<void>
): Effect.Effect<void> =>
  Effect.flatMap(Effect.forEach(messages, (m) => Effect.exit(answerOne(m)), { concurrency: "unbounded" }), (exits) => {
    let failed: Cause.Cause<never> | undefined
    for (const exit of exits) {
      if (Exit.isFailure(exit)) failed = failed === undefined ? exit.cause : Cause.combine(failed, exit.cause)
    }
    return failed === undefined ? Effect.void : Effect.failCause(failed)
  })

const owedId = (m: JsonRpc.Classified): JsonRpc.RequestId | null | undefined =>
  m._tag === "Request" ? m.message.id : m._tag === "Invalid" ? m.id : undefined

/** The id a queued message answers; `undefined` for one that answers nothing (a notification on the way). */
const answeredBy = (r: Queued): JsonRpc.RequestId | null | undefined =>
  JsonRpc.isResponse(r.message) ? r.message.id : undefined

const itself = (id: JsonRpc.RequestId | null) => id

/**
 * The ids of the messages owed a reply that none of `replies` answers
 * (`idOf`: the id a reply answers, `undefined` for none), in the POST's order.
 */
const unansweredIds = <R>(
  messages: ReadonlyArray<JsonRpc.Classified>,
  replies: ReadonlyArray<R>,
  idOf: (reply: R) => JsonRpc.RequestId | null | undefined
): Array<JsonRpc.RequestId | null> => {
  // Each message gets at most one reply through its POST: as many replies as owed means none is missing.
  let owing = 0
  for (const m of messages) if (owedId(m) !== undefined) owing++
  let responses = 0
  for (const r of replies) if (idOf(r) !== undefined) responses++
  if (responses >= owing) return []
  const answered = new Map<JsonRpc.RequestId | null, number>()
  for (const r of replies) {
    const id = idOf(r)
    if (id !== undefined) answered.set(id, (answered.get(id) ?? 0) + 1)
  }
  const missing: Array<JsonRpc.RequestId | null> = []
  for (const m of messages) {
    const id = owedId(m)
    if (id === undefined) continue
    const n = answered.get(id) ?? 0
    if (n > 0) answered.set(id, n - 1)
    else missing.push(id)
  }
  return missing
}

/**
 * What a POST still owes the requests its finished work left unanswered (a
 * client waits for each): nothing when the work ended as the session meant
 * it to (a cancelled request gets no reply, nor does work a closing session
 * interrupted); the shutdown's error past the grace period; 503 when the
 * shared store failed under the work before any reply was written, since a
 * retry may succeed (a batch with replies keeps them: a retry would run
 * their requests again); else -32603 for each.
 */
export const owedReplies = Effect.fnUntraced(function*(
  env: Env,
  fiber: Fiber.Fiber<void> | undefined,
  messages: ReadonlyArray<JsonRpc.Classified>,
  replies: ReadonlyArray<Queued>
): Effect.fn.Return<HttpServerResponse.HttpServerResponse | Array<JsonRpc.JsonRpcResponse>> {
  const missing = unansweredIds(messages, replies, answeredBy)
  if (missing.length === 0) return []
  if (env.drain?.draining() === true) return missing.map(interruptedByShutdown)
  // No fiber: the work was over, successfully, as it started.
  if (fiber === undefined) return []
  const exit = yield* Fiber.await(fiber)
  if (Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause)) return []
  if (replies.length === 0 && env.availability !== undefined && SharedUnavailable.isStoreFailure(exit.cause)) {
    return SharedUnavailable.lost(env.availability)
  }
  yield* warn(exit.cause)
  return missing.map((id) => JsonRpc.internalError(id))
})

const warn = (cause: Cause.Cause<unknown>) =>
  Effect.logWarning("HTTP server transport: a POST's work failed before it answered", Cause.pretty(cause))

/** The ids of `messages` owed a reply that none of the ids `replied` (the replies written) answers, in the POST's order. */
export const unansweredOnStream = (
  messages: ReadonlyArray<JsonRpc.Classified>,
  replied: ReadonlyArray<JsonRpc.RequestId | null>
): Array<JsonRpc.RequestId | null> => unansweredIds(messages, replied, itself)

/**
 * Ends the SSE answer of a POST whose work failed (`cause`; not only
 * interrupted), or ended while the server shuts down, after what it owes the
 * requests it left unanswered (`missing`): -32603 for each, or the shutdown's
 * error while draining. Unlike a JSON answer,
 * never 503 for the shared store's failure: the stream's 200 went out with
 * its headers, so a status can no longer say "retry"; an error reply is all
 * that is left to stop the client waiting.
 */
export const onStream = (
  env: Env,
  out: OutStream,
  missing: ReadonlyArray<JsonRpc.RequestId | null>,
  cause: Cause.Cause<unknown> | undefined
): Effect.Effect<void> => {
  if (missing.length === 0) return out.end
  const draining = env.drain?.draining() === true
  const owed = Effect.forEach(
    missing,
    (id) => out.offer(draining ? interruptedByShutdown(id) : JsonRpc.internalError(id)),
    { discard: true }
  )
  // A reply the stream cannot take (its store failing too) must not keep the stream from ending.
  return Effect.andThen(Effect.ignoreCause(cause === undefined ? owed : Effect.andThen(warn(cause), owed)), out.end)
}
