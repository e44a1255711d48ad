/**
 * The part of every client transport that is not framing or I/O: routing
 * incoming messages (responses to the correlator, notifications to
 * subscribers, server requests to the handler), the connection state, the
 * diagnostics feed and the close protocol. Transports own the bytes.
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import { DEFAULT_REQUEST_TIMEOUT_MS } from "../../Defaults.ts"
import {
  type ClientTransportShape,
  ConnectionState,
  Diagnostic,
  type RequestHandler,
  type RequestOptions
} from "../ClientTransport.ts"
import * as JsonRpc from "../../JsonRpc.ts"
import { type MessageTooLarge, RpcError, TransportClosed, truncate } from "../../McpError.ts"
import * as Correlation from "../../internal/Correlation.ts"
import * as ListenedPubSub from "../../internal/ListenedPubSub.ts"
import * as NotificationListener from "./NotificationListener.ts"

export interface ClientCoreOptions {
  /** Writes one message to the peer (responses to server requests, cancellations). */
  readonly send: (message: JsonRpc.JsonRpcMessage) => Effect.Effect<void, unknown>
  readonly defaultTimeout?: Duration.Input | undefined
  /** Per-subscriber buffer of notifications before the oldest are dropped. */
  readonly notificationBuffer?: number | undefined
  readonly idPrefix?: string | undefined
}

export interface ClientCore {
  readonly correlation: Correlation.Correlation
  /** Routes one classified incoming message. Cheap for responses and notifications. */
  readonly dispatch: (message: JsonRpc.Classified, text?: string) => Effect.Effect<void>
  /** Decodes and routes one frame (an NDJSON line, an SSE `data` payload). */
  readonly dispatchFrame: (text: string) => Effect.Effect<void>
  readonly diagnose: (diagnostic: Diagnostic) => void
  /** Fails everything pending, publishes `Closed`, completes `awaitClosed`. First reason wins. */
  readonly close: (error: TransportClosed) => Effect.Effect<void>
  readonly timeoutMsFor: (options: RequestOptions | undefined) => number | undefined
  /** A request's options as the correlator takes them: the timeout, and the hook that lets the caller restart it. */
  readonly callOptions: (options: RequestOptions | undefined) => Correlation.CallOptions
  readonly state: SubscriptionRef.SubscriptionRef<ConnectionState>
  /** Builds the service from the transport-specific request and notify paths. */
  readonly service: <A>(parts: {
    readonly kind: ClientTransportShape["kind"]
    readonly request: ClientTransportShape<A>["request"]
    readonly notify: ClientTransportShape<A>["notify"]
    readonly stderr?: Stream.Stream<string> | undefined
    readonly setProtocolVersion?: ClientTransportShape["setProtocolVersion"] | undefined
  }) => ClientTransportShape<A>
}

export const defaultRequestHandler: RequestHandler = (request) =>
  request.method === "ping"
    ? Effect.succeed({})
    : Effect.fail(
      new RpcError({ code: JsonRpc.ErrorCode.MethodNotFound, rpcMessage: "Method not found", data: { method: request.method } })
    )

const toMillis = (input: Duration.Input | undefined): number | undefined => {
  if (input === undefined) return undefined
  const d = Duration.fromInputUnsafe(input)
  return Duration.isFinite(d) ? Duration.toMillis(d) : Number.POSITIVE_INFINITY
}

export const make = Effect.fnUntraced(function*(
  options: ClientCoreOptions
): Effect.fn.Return<ClientCore, never, Scope.Scope> {
  const state = yield* SubscriptionRef.make<ConnectionState>(ConnectionState.Connecting())
  const notifications = yield* ListenedPubSub.sliding<JsonRpc.JsonRpcNotification>(options.notificationBuffer ?? 1024)
  const diagnostics = yield* ListenedPubSub.sliding<Diagnostic>(256)
  const serving = yield* FiberMap.make<JsonRpc.RequestId>()
  const closedSignal = yield* Deferred.make<TransportClosed>()
  let handler: RequestHandler = defaultRequestHandler
  const defaultTimeoutMs = toMillis(options.defaultTimeout) ?? DEFAULT_REQUEST_TIMEOUT_MS

  const correlation = Correlation.make({
    idPrefix: options.idPrefix,
    clock: yield* Effect.clockWith(Effect.succeed),
    cancel: (id, reason) =>
      options.send(JsonRpc.notification("notifications/cancelled", { requestId: id, reason })).pipe(Effect.ignore)
  })

  const diagnose = (d: Diagnostic) => {
    diagnostics.publish(d)
  }

  // See NotificationListener: called in the routing of each notification, before its subscribers hear of it.
  let listeners: ReadonlyArray<(n: JsonRpc.JsonRpcNotification) => void> = []
  const notifyListeners = (n: JsonRpc.JsonRpcNotification) => {
    for (const listener of listeners) {
      try {
        listener(n)
      } catch (error) {
        diagnose(Diagnostic.ListenerError({ error }))
      }
    }
  }
  const listen: NotificationListener.Listen = (listener) =>
    Effect.acquireRelease(
      Effect.sync(() => void (listeners = [...listeners, listener])),
      () => Effect.sync(() => void (listeners = listeners.filter((l) => l !== listener)))
    )

  const serve = (request: JsonRpc.JsonRpcRequest) =>
    FiberMap.run(
      serving,
      request.id,
      Effect.suspend(() => handler(request)).pipe(
        Effect.matchCauseEffect({
          onSuccess: (result) => options.send(JsonRpc.success(request.id, result)),
          onFailure: (cause) => {
            const rpc = cause.reasons.find((r) => r._tag === "Fail")
            if (rpc === undefined && cause.reasons.every((r) => r._tag === "Interrupt")) return Effect.void
            const reply = rpc !== undefined && rpc._tag === "Fail"
              ? JsonRpc.failure(request.id, rpc.error.code, rpc.error.rpcMessage, rpc.error.data)
              : JsonRpc.internalError(request.id)
            return options.send(reply)
          }
        }),
        Effect.ignore
      ),
      { onlyIfMissing: true }
    ).pipe(Effect.asVoid)

  const dispatch = (message: JsonRpc.Classified, text?: string): Effect.Effect<void> => {
    switch (message._tag) {
      case "Success":
        if (!correlation.complete(message.message)) diagnose(Diagnostic.UnknownResponse({ id: message.message.id }))
        return Effect.void
      case "Failure": {
        const response = message.message
        // A peer that could not parse what we sent cannot name the request; with one waiting, it is that one.
        const sole = response.id === null && response.error.code === JsonRpc.ErrorCode.ParseError
          ? correlation.sole()
          : undefined
        if (!correlation.complete(sole === undefined ? response : { ...response, id: sole })) {
          diagnose(Diagnostic.UnknownResponse({ id: response.id }))
        }
        return Effect.void
      }
      case "Notification": {
        const n = message.message
        if (n.method === "notifications/cancelled") {
          const id = (n.params as { requestId?: unknown } | undefined)?.requestId
          if (typeof id === "string" || typeof id === "number") {
            // Whoever hears of the cancellation finds our handler for it already interrupted.
            return Effect.andThen(
              FiberMap.remove(serving, id),
              Effect.sync(() => {
                if (listeners.length > 0) notifyListeners(n)
                notifications.publish(n)
              })
            )
          }
        }
        if (listeners.length > 0) notifyListeners(n)
        notifications.publish(n)
        return Effect.void
      }
      case "Request":
        return serve(message.message)
      case "Invalid":
        // A broken answer to a request we can name fails that request now rather than leave it to its timeout.
        const named = message.response ? message.id : null
        if (named !== null && correlation.completeMalformed(named, text ?? "", message.reason)) return Effect.void
        diagnose(Diagnostic.InvalidMessage({ text: truncate(text ?? "", 200), reason: message.reason }))
        return Effect.void
    }
  }

  const dispatchFrame = (text: string): Effect.Effect<void> => {
    const decoded = JsonRpc.decode(text)
    switch (decoded._tag) {
      case "Single":
        return dispatch(decoded.message, text)
      case "Batch":
        return Effect.forEach(decoded.messages, (m) => dispatch(m, text), { discard: true })
      case "ParseError":
        diagnose(Diagnostic.MalformedFrame({ text: truncate(text, 200), reason: decoded.reason }))
        return Effect.void
    }
  }

  const close = (error: TransportClosed): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (correlation.closedWith() !== undefined) return Effect.void
      correlation.close(error)
      return Effect.andThen(
        SubscriptionRef.set(state, ConnectionState.Closed({ error })),
        Deferred.succeed(closedSignal, error)
      )
    })

  yield* Effect.addFinalizer(() =>
    close(new TransportClosed({ reason: "transport scope closed" })).pipe(
      Effect.andThen(FiberMap.clear(serving)),
      Effect.andThen(notifications.shutdown),
      Effect.andThen(diagnostics.shutdown)
    )
  )

  // The protocol layer passes the same timeout (one Duration value) with
  // every request: remember the last conversion. Only immutable inputs.
  let lastTimeout: Duration.Input | undefined
  let lastTimeoutMs: number | undefined
  const timeoutMsFor = (o: RequestOptions | undefined): number | undefined => {
    const timeout = o?.timeout
    if (timeout === undefined) return defaultTimeoutMs === Number.POSITIVE_INFINITY ? undefined : defaultTimeoutMs
    if (timeout === lastTimeout) return lastTimeoutMs
    const converted = toMillis(timeout)
    const ms = converted === Number.POSITIVE_INFINITY ? undefined : converted
    if (typeof timeout !== "object" || Duration.isDuration(timeout)) {
      lastTimeout = timeout
      lastTimeoutMs = ms
    }
    return ms
  }

  // Options with nothing but a timeout come with every call: one shared object per timeout.
  let plainOptions: Correlation.CallOptions = { timeoutMs: undefined }
  const callOptions = (o: RequestOptions | undefined): Correlation.CallOptions => {
    const timeoutMs = timeoutMsFor(o)
    if (o?.onDeadline !== undefined || o?.onId !== undefined) return { timeoutMs, onDeadline: o.onDeadline, onId: o.onId }
    if (plainOptions.timeoutMs !== timeoutMs) plainOptions = { timeoutMs }
    return plainOptions
  }

  const service: ClientCore["service"] = (parts) => ({
    [NotificationListener.key]: listen,
    kind: parts.kind,
    request: parts.request,
    notify: parts.notify,
    notifications: notifications.stream,
    subscribeNotifications: notifications.subscribe,
    diagnostics: diagnostics.stream,
    stderr: parts.stderr ?? Stream.empty,
    setRequestHandler: (h) => Effect.sync(() => void (handler = h)),
    setProtocolVersion: parts.setProtocolVersion ?? (() => Effect.void),
    state,
    awaitClosed: Deferred.await(closedSignal),
    pendingCount: Effect.sync(() => correlation.pending())
  })

  return { correlation, dispatch, dispatchFrame, diagnose, close, timeoutMsFor, callOptions, state, service }
})

export type SendError = TransportClosed | MessageTooLarge
