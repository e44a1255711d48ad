/**
 * How a stream-oriented server transport (stdio, the in-memory pair) feeds
 * frames to a ServerSession. Requests run concurrently, so a slow tool call
 * never holds up a ping behind it. Notifications are handled one at a time in
 * arrival order, and a request starts only after the notifications that
 * arrived before it were handled (`notifications/initialized` is seen before
 * the first `tools/list`), all through one lane. A batch keeps that promise
 * too: its notifications are handled in array order in the lane, its
 * requests start (in order, concurrently with each other) once the entries
 * before them were handled, and the lane moves past the batch only then.
 * Responses to the server's own requests (single or inside a batch), and
 * frames that only need an error reply, bypass the lane, so a notification
 * handler waiting for the client's answer cannot deadlock it.
 */
import type * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as JsonRpc from "../../JsonRpc.ts"
import { holdsStatelessMessage, type Reply, type ServerSession } from "./ServerSession.ts"

export interface ServerDispatchOptions {
  readonly session: ServerSession
  /** Writes a reply (never called with `null`). */
  readonly reply: (reply: JsonRpc.JsonRpcResponse | ReadonlyArray<JsonRpc.JsonRpcResponse>) => Effect.Effect<void>
  /** Frames waiting for the lane before the reader waits (backpressure). Default 1024. */
  readonly laneCapacity?: number | undefined
}

export interface ServerDispatch {
  /**
   * Routes one frame. Returns once the frame is queued or answered; it waits
   * only when the lane is full. A request is registered with the session
   * before any notification that arrived after it is handled, so a
   * `notifications/cancelled` always finds it.
   */
  readonly push: (text: string) => Effect.Effect<void>
  /**
   * Input has ended: lets the lane empty and the requests in flight finish
   * and write their replies, waiting at most `grace`. Returns whether
   * everything finished in time; the caller interrupts what is left.
   */
  readonly drain: (grace: Duration.Input) => Effect.Effect<boolean>
  /** Work in progress: requests being served, batches in flight and frames waiting in the lane. */
  readonly busy: Effect.Effect<number>
}

type LaneItem =
  | { readonly _tag: "Notification"; readonly message: JsonRpc.Classified }
  | { readonly _tag: "Start"; readonly request: JsonRpc.JsonRpcRequest }
  | { readonly _tag: "Batch"; readonly messages: ReadonlyArray<JsonRpc.Classified> }

/**
 * A batch's entries in array order: notifications awaited, requests started
 * without waiting; `started` once every entry was handled or started, then
 * the replies in one write. One generator function for every batch
 * (`fnUntraced`), not one made per batch: see docs/design.md, "Per-request code and the old generation".
 */
const runBatch = Effect.fnUntraced(function*(
  session: ServerSession,
  reply: ServerDispatchOptions["reply"],
  messages: ReadonlyArray<JsonRpc.Classified>,
  started: Deferred.Deferred<void>
) {
  const pending: Array<Effect.Effect<JsonRpc.JsonRpcResponse | null>> = []
  for (const message of messages) {
    if (message._tag === "Request") {
      pending.push(Fiber.join(yield* Effect.forkChild(session.handleMessage(message), { startImmediately: true })))
    } else {
      pending.push(Effect.succeed(yield* session.handleMessage(message)))
    }
  }
  yield* Deferred.succeed(started, undefined)
  const replies = yield* Effect.all(pending)
  const kept = replies.filter((r): r is JsonRpc.JsonRpcResponse => r !== null)
  if (kept.length > 0) yield* reply(kept)
})

export const make = Effect.fnUntraced(function*(
  options: ServerDispatchOptions
): Effect.fn.Return<ServerDispatch, never, Scope.Scope> {
  const { session } = options
  const work = yield* FiberSet.make<void, never>()
  const lane = yield* Queue.bounded<LaneItem, Cause.Done>(options.laneCapacity ?? 1024)

  const answer = (reply: Reply): Effect.Effect<void> => reply === null ? Effect.void : options.reply(reply)
  /**
   * Lane items pushed and not yet handled. While it is 0 nothing that arrived
   * earlier is still waiting, so a request may start right away from the
   * reader, which is the common case: no hop through the lane fiber, and the
   * replies to one read leave in one write.
   */
  let laneBacklog = 0
  const enqueue = (item: LaneItem): Effect.Effect<void> =>
    Effect.suspend(() => {
      laneBacklog++
      return Effect.asVoid(Queue.offer(lane, item))
    })
  const startRequest = (request: JsonRpc.JsonRpcRequest) => session.serve(request, options.reply)

  /**
   * Runs a batch in its own fiber (it counts as one frame in flight), in
   * array order: notifications awaited, requests started without waiting.
   * The lane waits for `started`, i.e. until every entry was handled or started.
   */
  const startBatch = (messages: ReadonlyArray<JsonRpc.Classified>): Effect.Effect<void> =>
    Effect.flatMap(Deferred.make<void>(), (started) =>
      FiberSet.run(
        work,
        runBatch(session, options.reply, messages, started).pipe(Effect.ensuring(Deferred.succeed(started, undefined)))
      ).pipe(Effect.andThen(Deferred.await(started))))

  const handleItem = (item: LaneItem): Effect.Effect<unknown> =>
    item._tag === "Notification"
      ? Effect.flatMap(session.handleMessage(item.message), answer)
      : item._tag === "Batch"
      ? startBatch(item.messages)
      // `serve` returns once the session registered the request, before the lane moves on.
      : startRequest(item.request)

  const laneFiber = yield* Queue.take(lane).pipe(
    Effect.flatMap((item) => Effect.ensuring(handleItem(item), Effect.sync(() => void laneBacklog--))),
    Effect.forever,
    // The lane ends with Cause.Done when input ends.
    Effect.ignore,
    Effect.forkScoped
  )

  const push = (text: string): Effect.Effect<void> => {
    const decoded = JsonRpc.decode(text)
    switch (decoded._tag) {
      case "ParseError":
        return Effect.flatMap(session.handleDecoded(decoded, text), answer)
      case "Batch": {
        // Rejected batches (empty, too long, not allowed, or holding a stateless-era message) only need an error reply.
        if (
          decoded.messages.length === 0 || !session.allowBatch || decoded.messages.length > session.maxBatchSize ||
          holdsStatelessMessage(decoded.messages)
        ) {
          return Effect.flatMap(session.handleDecoded(decoded, text), answer)
        }
        const responses = decoded.messages.filter(isResponse)
        const rest = decoded.messages.filter((m) => !isResponse(m))
        const routeResponses = Effect.forEach(responses, session.handleMessage, { discard: true })
        return rest.length === 0
          ? routeResponses
          : Effect.andThen(routeResponses, enqueue({ _tag: "Batch", messages: rest }))
      }
      case "Single": {
        const message = decoded.message
        switch (message._tag) {
          case "Notification":
            return enqueue({ _tag: "Notification", message })
          case "Request":
            return laneBacklog === 0 ? startRequest(message.message) : enqueue({ _tag: "Start", request: message.message })
          default:
            return Effect.flatMap(session.handleMessage(message), answer)
        }
      }
    }
  }

  const drain = (grace: Duration.Input): Effect.Effect<boolean> =>
    Queue.end(lane).pipe(
      Effect.andThen(Fiber.await(laneFiber)),
      Effect.andThen(FiberSet.awaitEmpty(work)),
      Effect.andThen(session.awaitIdle),
      Effect.timeoutOption(grace),
      Effect.map((o) => o._tag === "Some")
    )

  const busy = Effect.map(
    Effect.all([FiberSet.size(work), Queue.size(lane), session.inFlight]),
    ([batches, waiting, requests]) => batches + waiting + requests
  )

  return { push, drain, busy }
})

const isResponse = (m: JsonRpc.Classified): boolean => m._tag === "Success" || m._tag === "Failure"

/**
 * JSON text of a reply (no newline). A reply the handler built from values
 * JSON cannot carry becomes -32603 for its id, so the client is not left waiting.
 */
export const encodeReply = (reply: JsonRpc.JsonRpcResponse | ReadonlyArray<JsonRpc.JsonRpcResponse>): string => {
  try {
    return JSON.stringify(reply)
  } catch (error) {
    const data = { reason: "the reply could not be serialized as JSON", error: String(error) }
    if (!Array.isArray(reply)) return JSON.stringify(JsonRpc.internalError((reply as JsonRpc.JsonRpcResponse).id, data))
    return JSON.stringify(reply.map((r: JsonRpc.JsonRpcResponse) => {
      try {
        JSON.stringify(r)
        return r
      } catch {
        return JsonRpc.internalError(r.id, data)
      }
    }))
  }
}

/** The answer to an input frame over the size limit (its id cannot be read: it was never parsed). */
export const tooLarge = (limit: number, size: number): JsonRpc.JsonRpcFailure =>
  JsonRpc.invalidRequest(null, { reason: `message exceeds the size limit of ${limit} bytes`, limit, size })
