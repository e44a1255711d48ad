/**
 * One client connection on the server side, whatever carries it: runs the
 * handler for incoming requests (concurrently, each in its own fiber so that
 * `notifications/cancelled` can interrupt it), routes responses to requests
 * the server sent the client, and applies the error rules of the server
 * transports (-32700 for unparsable frames, -32600 for invalid messages,
 * -32603 when the handler fails or dies, nothing for notifications).
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"
import { buildNow } from "../../internal/BuildNow.ts"
import * as JsonRpc from "../../JsonRpc.ts"
import { ClientRequestUnavailable, type RequestError, TransportClosed, truncate } from "../../McpError.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import type { HandlerContext } from "../Handler.ts"
import * as BatchLimit from "../../internal/BatchLimit.ts"
import * as Correlation from "../../internal/Correlation.ts"
import * as Metrics from "../../observability/Metrics.ts"
import * as EarlyCancels from "./EarlyCancels.ts"
import * as HandlerServices from "./HandlerServices.ts"
import * as MiddlewareChain from "./MiddlewareChain.ts"
import * as RequestFibers from "./RequestFibers.ts"
import type { Reply, ServerSession, ServerSessionOptions } from "./ServerSessionShape.ts"

export type { Reply, ServerSession, ServerSessionOptions }

/** An interrupted handler (the client cancelled) gets no reply. */
const replyOf = (exit: Exit.Exit<JsonRpc.JsonRpcResponse | null> | undefined): JsonRpc.JsonRpcResponse | null =>
  exit !== undefined && exit._tag === "Success" ? exit.value : null

/**
 * Whether a batch holds a request or notification whose `_meta` names a
 * protocol version, i.e. one of the stateless era: that era has no batches,
 * so such a batch is refused whole (none of it runs), as on Streamable HTTP.
 */
export const holdsStatelessMessage = (messages: ReadonlyArray<JsonRpc.Classified>): boolean =>
  messages.some((m) =>
    (m._tag === "Request" || m._tag === "Notification") && RequestMeta.readMeta(m.message.params)._tag !== "Absent"
  )

export const statelessBatch = (): JsonRpc.JsonRpcResponse =>
  JsonRpc.invalidRequest(null, "protocol revision 2026-07-28 takes no batches: a request whose _meta names a protocol version is sent on its own")

const SESSIONLESS_REASON = "the request came in a POST without a session, so no answer could reach it"

type Send = (message: JsonRpc.JsonRpcMessage) => Effect.Effect<void, TransportClosed>
type CallClient = (
  method: string,
  params: unknown,
  send: Send,
  options: { readonly timeout?: Duration.Input | undefined } | undefined
) => Effect.Effect<unknown, RequestError | ClientRequestUnavailable>

/**
 * The context a handler gets. One is built for every request, and most
 * handlers send nothing to the client, so `notify` and `request` are made on
 * first use (bound: destructuring them works).
 */
class LiveHandlerContext implements HandlerContext {
  readonly sessionId: string | undefined
  readonly requestId: JsonRpc.RequestId | undefined
  readonly closeSseStream: HandlerContext["closeSseStream"]
  readonly ephemeral: boolean | undefined
  readonly observed: boolean | undefined
  readonly #send: Send
  readonly #call: CallClient
  readonly #identity: (() => Pick<HandlerContext, "principal" | "auth">) | undefined
  #notify: HandlerContext["notify"] | undefined
  #request: HandlerContext["request"] | undefined

  constructor(
    sessionId: string | undefined,
    requestId: JsonRpc.RequestId | undefined,
    send: Send,
    call: CallClient,
    closeSseStream: HandlerContext["closeSseStream"],
    ephemeral: boolean | undefined,
    identity: (() => Pick<HandlerContext, "principal" | "auth">) | undefined,
    observed: boolean | undefined
  ) {
    this.sessionId = sessionId
    this.requestId = requestId
    this.closeSseStream = closeSseStream
    this.ephemeral = ephemeral
    this.observed = observed
    this.#send = send
    this.#call = call
    this.#identity = identity
  }

  get principal(): HandlerContext["principal"] {
    return this.#identity?.().principal
  }

  get auth(): HandlerContext["auth"] {
    return this.#identity?.().auth
  }

  get notify(): HandlerContext["notify"] {
    return this.#notify ??= (method, params) => this.#send(JsonRpc.notification(method, params))
  }

  get request(): HandlerContext["request"] {
    return this.#request ??= (method, params, o) => this.#call(method, params, this.#send, o)
  }
}

export const make = Effect.fnUntraced(function*<R>(
  options: ServerSessionOptions<R>
): Effect.fn.Return<ServerSession, never, R | Scope.Scope> {
  const services = yield* Effect.context<R>()
  // Handlers that run with these services alone: whether anything can record their requests is known now.
  const observed = options.servicesOnly === true ? MiddlewareChain.observedIn(services as Context.Context<never>) : undefined
  if (options.ephemeral !== true) yield* Metrics.serverSession
  const maxBatchSize = options.maxBatchSize ?? BatchLimit.DEFAULT_MAX_BATCH_SIZE
  const serving = RequestFibers.make<JsonRpc.JsonRpcResponse | null>()
  const correlation = Correlation.make({
    idPrefix: options.idPrefix ?? "s",
    cancel: (id, reason) =>
      options.send(JsonRpc.notification("notifications/cancelled", { requestId: id, reason })).pipe(Effect.ignore)
  })

  /**
   * The connection's era, decided by its first request: 2026-07-28 `_meta`
   * makes it stateless, anything else the handshake era; an `initialize`
   * later switches it to the handshake era (a dual-era client falling back).
   * A stateless connection never carries requests from the server.
   */
  let era: "undecided" | "legacy" | "modern" = "undecided"
  const observe = (request: JsonRpc.JsonRpcRequest): void => {
    if (options.decideEra !== true) return
    if (request.method === "initialize") era = "legacy"
    else if (era === "undecided") era = RequestMeta.readMeta(request.params)._tag === "Absent" ? "legacy" : "modern"
  }

  const ephemeral = options.ephemeral === true ? true : undefined
  const callClient: CallClient = (method, params, send, o) =>
    era === "modern"
      ? Effect.fail(
        new ClientRequestUnavailable({ method, reason: "the connection speaks the stateless era (2026-07-28)" })
      )
      : ephemeral
      ? Effect.fail(new ClientRequestUnavailable({ method, reason: SESSIONLESS_REASON }))
      : correlation.call(method, params, send, { timeoutMs: o?.timeout === undefined ? options.defaultRequestTimeoutMs ?? 60_000 : Duration.toMillis(o.timeout) })

  const context: HandlerContext = new LiveHandlerContext(
    options.sessionId,
    undefined,
    options.send,
    callClient,
    undefined,
    ephemeral,
    options.identity,
    observed
  )

  const earlyCancels = EarlyCancels.make(options.earlyCancels, (id) => serving.has(id))

  const withServices = HandlerServices.make(services, {
    sharedDispatcher: options.sharedDispatcher,
    servicesOnly: options.servicesOnly
  })

  const recover = (message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification) =>
    Effect.catchCause((cause: Cause.Cause<unknown>) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.interrupt
        : Effect.as(
          options.onHandlerError === undefined ? Effect.void : Effect.ignore(options.onHandlerError(message, cause)),
          "id" in message ? JsonRpc.internalError(message.id) : null
        )
    )

  const runHandler = (
    message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification,
    ctx: HandlerContext
  ): Effect.Effect<JsonRpc.JsonRpcResponse | null> =>
    Effect.suspend(() => options.handler(message, ctx)).pipe(
      Effect.updateContext(withServices),
      recover(message)
    )

  /**
   * `runHandler` for a fiber that already runs with the session's services
   * (`serve` and `handleMessage` fork a request's fiber so).
   */
  const runHandlerWithServices = (
    request: JsonRpc.JsonRpcRequest,
    ctx: HandlerContext
  ): Effect.Effect<JsonRpc.JsonRpcResponse | null> => {
    // The fiber runs with the session's services (`R`), as `runHandler` provides them.
    const handled = buildNow(() => options.handler(request, ctx) as Effect.Effect<JsonRpc.JsonRpcResponse | null, unknown>)
    // An answer the handler gave at once has nothing to recover from: no step for it.
    return Exit.isExit(handled) && Exit.isSuccess(handled)
      ? handled as Exit.Exit<JsonRpc.JsonRpcResponse | null>
      : recover(request)(handled)
  }

  const requestContext = (request: JsonRpc.JsonRpcRequest): HandlerContext =>
    new LiveHandlerContext(
      options.sessionId,
      request.id,
      options.sendFor?.(request.id) ?? options.send,
      callClient,
      options.extendContext?.(request.id).closeSseStream,
      ephemeral,
      options.identity,
      observed
    )

  // Started at once: the handler runs now, not on the scheduler's next turn, and one that answered
  // while it started is read at once. A second request with the id of one still running gets no reply.
  // The fiber starts with the session's services, as `serve` starts one: no step to set them.
  const runIn = <B>(
    parent: Fiber.Fiber<unknown, unknown>,
    request: JsonRpc.JsonRpcRequest,
    onReply: (reply: JsonRpc.JsonRpcResponse | null) => Effect.Effect<B>
  ) =>
    serving.runIn(
      parent,
      request.id,
      () => runHandlerWithServices(request, requestContext(request)),
      (exit) => onReply(replyOf(exit)),
      withServices
    )

  const handleRequest = <B>(
    request: JsonRpc.JsonRpcRequest,
    onReply: (reply: JsonRpc.JsonRpcResponse | null) => Effect.Effect<B>
  ): Effect.Effect<B> => {
    observe(request)
    // Most sessions have no early cancel on record: nothing to consult first.
    return Effect.withFiber((parent) =>
      earlyCancels.none()
        ? runIn(parent, request, onReply)
        : Effect.flatMap(
          earlyCancels.consume(request.id),
          (cancelled) => cancelled ? onReply(null) : Effect.withFiber((parent) => runIn(parent, request, onReply))
        )
    )
  }

  const handleRequestIn = <B>(
    parent: Fiber.Fiber<unknown, unknown>,
    request: JsonRpc.JsonRpcRequest,
    onReply: (reply: JsonRpc.JsonRpcResponse | null) => Effect.Effect<B>
  ): Effect.Effect<B> => {
    if (!earlyCancels.none()) return handleRequest(request, onReply)
    observe(request)
    return runIn(parent, request, onReply)
  }

  const handleMessage = (classified: JsonRpc.Classified): Effect.Effect<JsonRpc.JsonRpcResponse | null> => {
    switch (classified._tag) {
      case "Request":
        return handleRequest(classified.message, Effect.succeed)
      case "Notification": {
        const n = classified.message
        if (n.method === "notifications/cancelled") {
          const id = (n.params as { requestId?: unknown } | undefined)?.requestId
          if (typeof id === "string" || typeof id === "number") {
            return earlyCancels.remember(id).pipe(
              Effect.andThen(serving.interrupt(id)),
              Effect.andThen(runHandler(n, context)),
              Effect.as(null)
            )
          }
        }
        return runHandler(n, context).pipe(Effect.as(null), Effect.catchCause(() => Effect.succeed(null)))
      }
      case "Success":
      case "Failure":
        correlation.complete(classified.message)
        return Effect.succeed(null)
      case "Invalid":
        return Effect.succeed(JsonRpc.invalidRequest(classified.id, classified.reason))
    }
  }

  const serve = (
    request: JsonRpc.JsonRpcRequest,
    onReply: (reply: JsonRpc.JsonRpcResponse) => Effect.Effect<void>
  ): Effect.Effect<void> => {
    observe(request)
    // A second request with the id of one still running gets no reply, as in `handleMessage`.
    if (serving.has(request.id)) {
      return Effect.flatMap(handleMessage({ _tag: "Request", message: request }), (r) => r === null ? Effect.void : onReply(r))
    }
    // Interruption (a cancel) can only end the handler: once it answered, the reply is written.
    const work = Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(restore(runHandlerWithServices(request, requestContext(request))), (reply) =>
        reply === null ? Effect.succeed(null) : Effect.as(onReply(reply), null))
    )
    // Without early cancels kept (an ordered stream), none can be waiting for this id.
    if (options.earlyCancels === undefined) return serving.start(request.id, work, withServices)
    return Effect.flatMap(
      earlyCancels.consume(request.id),
      (cancelled) => cancelled ? Effect.void : serving.start(request.id, work, withServices)
    )
  }

  const handleFrame = (text: string): Effect.Effect<Reply> => handleDecoded(JsonRpc.decode(text), text)

  const handleDecoded = (decoded: JsonRpc.Decoded, text: string): Effect.Effect<Reply> => {
    switch (decoded._tag) {
      case "ParseError":
        return Effect.succeed(JsonRpc.parseError({ reason: decoded.reason, text: truncate(text, 200) }))
      case "Single":
        return handleMessage(decoded.message)
      case "Batch": {
        if (options.allowBatch === false) {
          return Effect.succeed(JsonRpc.invalidRequest(null, "batches are not supported by this protocol revision"))
        }
        if (decoded.messages.length === 0) return Effect.succeed(JsonRpc.invalidRequest(null, "empty batch"))
        if (decoded.messages.length > maxBatchSize) {
          return Effect.succeed(BatchLimit.tooLarge(maxBatchSize, decoded.messages.length))
        }
        if (holdsStatelessMessage(decoded.messages)) return Effect.succeed(statelessBatch())
        return Effect.forEach(decoded.messages, handleMessage, { concurrency: "unbounded" }).pipe(
          Effect.map((replies) => {
            const kept = replies.filter((r): r is JsonRpc.JsonRpcResponse => r !== null)
            return kept.length === 0 ? null : kept
          })
        )
      }
    }
  }

  const close = (error: TransportClosed) =>
    Effect.suspend(() => {
      correlation.close(error)
      return serving.interruptAll
    })

  // A sessionless POST is no session: the handler keeps nothing for it.
  let ended = options.ephemeral === true || options.handler.sessionEnded === undefined
  const tellEnded = Effect.suspend(() => {
    if (ended) return Effect.void
    ended = true
    // The handler's defects are its own: the session has ended either way.
    return Effect.ignoreCause(options.handler.sessionEnded!(options.sessionId))
  })
  const end = (error: TransportClosed) => Effect.andThen(close(error), tellEnded)

  yield* Effect.addFinalizer(() =>
    Effect.andThen(close(new TransportClosed({ reason: "server session closed" })), serving.close).pipe(
      Effect.andThen(tellEnded)
    )
  )

  const closeOutgoing = (error: TransportClosed) => Effect.sync(() => correlation.close(error))

  return {
    handleFrame,
    handleDecoded,
    handleMessage,
    handleRequest,
    handleRequestIn,
    serve,
    awaitIdle: serving.awaitEmpty,
    context,
    allowBatch: options.allowBatch !== false,
    maxBatchSize,
    inFlight: Effect.sync(serving.size),
    close,
    end,
    closeOutgoing,
    isServing: (id) => serving.has(id),
    cancelRemote: (id) => Effect.andThen(earlyCancels.remember(id), serving.interrupt(id))
  }
})
