/**
 * Streamable HTTP client transport (MCP 2025-03-26 … 2025-11-25, and the
 * stateless 2026-07-28 revision).
 *
 * Every message is its own POST. A request's answer comes back as one JSON
 * body or as an SSE stream that may carry notifications and server requests
 * before the response. Sessions (`Mcp-Session-Id`) start with the initialize
 * answer and end with a DELETE when the transport's scope closes. An optional
 * standalone GET stream carries server-initiated messages and reconnects with
 * `Last-Event-ID` under a user-supplied `Schedule`; when it gives up, only the
 * listener is marked failed and POSTs keep working.
 *
 * A stateless protocol version (set up front or by `setProtocolVersion`)
 * switches to the stateless mode: every POST carries the routing headers,
 * and there is no session, no GET stream, no resumption and no
 * `notifications/cancelled` (closing a request's stream cancels it).
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import { constTrue } from "effect/Function"
import * as Layer from "effect/Layer"
import type * as Schedule from "effect/Schedule"
import type * as SubscriptionRef from "effect/SubscriptionRef"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as JsonRpc from "../JsonRpc.ts"
import {
  type MalformedMessage,
  type MessageTooLarge,
  type NoResponse,
  type RequestTimeout,
  TransportClosed
} from "../McpError.ts"
import * as ClientCore from "./internal/ClientCore.ts"
import * as Http from "./internal/HttpExchange.ts"
import * as HttpGetListener from "./internal/HttpGetListener.ts"
import * as SseAnswer from "./internal/SseAnswer.ts"
import * as SseReader from "./internal/SseReader.ts"
import * as SseReconnect from "./internal/SseReconnect.ts"
import * as SessionChannel from "./internal/SessionChannel.ts"
import * as UnavailableRetry from "./internal/UnavailableRetry.ts"
import { DEFAULT_MAX_MESSAGE_BYTES } from "../Defaults.ts"
import type { OAuthProviderShape } from "./auth/OAuthProvider.ts"
import {
  ClientTransport,
  type ClientTransportShape,
  Diagnostic,
  type RequestOptions
} from "./ClientTransport.ts"

export type { HeaderContext, HeaderHook } from "./internal/HttpExchange.ts"
export type { RetryUnavailableOptions } from "./internal/UnavailableRetry.ts"
export { defaultSchedule as defaultReconnectSchedule } from "./internal/SseReconnect.ts"

/**
 * The options of the Streamable HTTP client: `url` is the MCP endpoint; the rest
 * are headers, limits, timeouts, reconnection and tracing.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends Http.TransportOptions {
  /** Open the standalone GET stream once `notifications/initialized` is accepted. Default false. */
  readonly listen?: boolean | undefined
  /**
   * Reconnect policy for SSE streams (the GET listener, and resuming a broken
   * POST stream). The schedule's delays are used unless the server sent
   * `retry:`; its end is the retry budget. Default: `defaultReconnectSchedule`.
   */
  readonly reconnectSchedule?: Schedule.Schedule<unknown, unknown> | undefined
  /** Bound on the session DELETE sent when the scope closes. Default 2 seconds. */
  readonly closeTimeout?: Duration.Input | undefined
  /** Continue an existing session instead of waiting for an initialize answer. Ignored in the stateless mode. */
  readonly sessionId?: string | undefined
  /**
   * Negotiated protocol version of a continued session, or a stateless
   * revision (2026-07-28 on) to start in the stateless mode: routing headers
   * on every POST, no session, no GET stream, no resumption. Default: none
   * (session mode until `setProtocolVersion` says otherwise).
   */
  readonly protocolVersion?: string | undefined
  /**
   * effect/http tracing of the transport's own HTTP requests:
   * - `"off"` (default): no client span per request and no trace headers on the wire;
   * - `"span"`: a client span per request (a child of the caller's span), no headers;
   * - `"propagate"`: the span, and W3C `traceparent` plus B3 `b3` headers so the server can join the trace.
   * An exchange otherwise pays for a span nobody may observe and sends random trace ids to every server.
   */
  readonly httpTracing?: HttpTracing | undefined
  /**
   * OAuth 2.1 for a server behind the MCP authorization spec: every request
   * carries the provider's bearer token, a 401 runs discovery and sign-in (or
   * a refresh) and sends the request once more, a 403 `insufficient_scope`
   * steps up. Default none: a 401 fails as `HttpError` with the server's hints.
   */
  readonly auth?: OAuthProviderShape | undefined
}

/**
 * How much of effect/http's tracing an exchange pays for: none, a span, or a span
 * with `traceparent`/`b3` headers for the server.
 *
 * @since 0.1.0
 * @category models
 */
export type HttpTracing = "off" | "span" | "propagate"

/**
 * The standalone GET stream's own state, separate from the POST channel's.
 *
 * @since 0.1.0
 * @category models
 */
export type ListenerState = HttpGetListener.ListenerState
/**
 * Constructors and matchers (`$is`, `$match`) for `ListenerState`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const ListenerState = HttpGetListener.ListenerState

/**
 * The `ClientTransport` service plus the Streamable HTTP specifics: the session id,
 * the negotiated protocol version and the standalone GET listener.
 *
 * @since 0.1.0
 * @category models
 */
export interface StreamableHttpClientTransport extends ClientTransportShape {
  readonly kind: "streamable-http"
  /** Opens the standalone GET stream now; does nothing while one is running, nor in the stateless mode. */
  readonly listen: Effect.Effect<void>
  readonly listenerState: SubscriptionRef.SubscriptionRef<ListenerState>
  /** The current `Mcp-Session-Id`; always `undefined` in the stateless mode. */
  readonly sessionId: Effect.Effect<string | undefined>
  readonly protocolVersion: Effect.Effect<string | undefined>
}

const DEFAULT_CLOSE_TIMEOUT = Duration.seconds(2)

/**
 * Makes the transport for one MCP endpoint. Nothing is sent until the first
 * request; the session (if the server issues one) is deleted when the current
 * `Scope` closes.
 *
 * @example
 * ```ts
 * import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
 * import * as Effect from "effect/Effect"
 * import * as StreamableHttpClientTransport from "effect-mcp-transport/client/StreamableHttpClientTransport"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const transport = yield* StreamableHttpClientTransport.make({ url: "http://127.0.0.1:8421/mcp" })
 *   console.log(yield* transport.request("ping", {}))
 * })).pipe(Effect.provide(NodeHttpClient.layerUndici))
 * ```
 *
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(options: Options) {
  const client = withTracing(yield* HttpClient.HttpClient, options.httpTracing ?? "off")
  const url = options.url.toString()
  const maxBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
  const idleTimeoutMs = Http.millis(options.sseIdleTimeout, Http.DEFAULT_SSE_IDLE)
  const schedule = options.reconnectSchedule ?? SseReconnect.defaultSchedule
  let closedError: TransportClosed | undefined

  const inflight = yield* FiberSet.make<unknown, unknown>()
  const background = yield* FiberSet.make<unknown, unknown>()

  /**
   * Replies to server requests and cancellations. The stateless mode sends
   * neither: its client never POSTs a response, and closing a request's
   * stream (which aborting the exchange does) is what cancels it.
   */
  const sendFromCore = (message: JsonRpc.JsonRpcMessage): Effect.Effect<void> =>
    closedError !== undefined || channel.stateless() !== undefined ? Effect.void : FiberSet.run(
      background,
      Effect.flatMap(channel.post(message, undefined, undefined), consumeStray).pipe(
        Effect.timeoutOption(Http.BACKGROUND_SEND_TIMEOUT),
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause)
            ? Effect.void
            : Effect.logWarning("MCP HTTP: sending a reply or cancellation failed", Cause.squash(cause))
        )
      )
    ).pipe(Effect.asVoid)

  const core = yield* ClientCore.make({
    send: sendFromCore,
    defaultTimeout: options.defaultTimeout,
    notificationBuffer: options.notificationBuffer
  })

  const channel = SessionChannel.make({
    client,
    url,
    maxBytes,
    headers: options.headers,
    requestHeaders: options.requestHeaders,
    auth: options.auth,
    state: core.state,
    sessionId: options.sessionId,
    protocolVersion: options.protocolVersion,
    closeTimeout: options.closeTimeout ?? DEFAULT_CLOSE_TIMEOUT,
    retryUnavailable: options.retryUnavailable
  })
  const { markReady, openGet } = channel

  /**
   * Runs one HTTP exchange in a fiber the transport owns, so that closing the
   * scope aborts it (and the caller sees `TransportClosed`), while the
   * caller's interruption still aborts it too.
   */
  const exchange = Http.owned(inflight, () => closedError)

  // ---------------------------------------------------------------------------
  // Requests

  const readAnswer = SseAnswer.make({
    core,
    maxBytes,
    schedule,
    background,
    openGet,
    retry: UnavailableRetry.policy(options.retryUnavailable)
  })

  const exchangeRequest = (
    request: JsonRpc.JsonRpcRequest,
    idleMs: number | undefined,
    extra: Readonly<Record<string, string>> | undefined
  ) =>
    Effect.suspend(() => {
      const modern = channel.stateless()
      const initialize = request.method === "initialize"
      return Effect.flatMap(channel.post(request, modern, extra), (response) => {
        const read = Effect.andThen(markReady(initialize), readAnswer(response, request, idleMs, modern === undefined))
        // A session id from a server answering in the stateless mode is ignored: not adopted, never echoed.
        return initialize && modern === undefined ? Effect.andThen(channel.adoptSession(response), read) : read
      })
    })

  /**
   * The correlator runs a send in a fiber of its own, which the caller joins
   * (so that its deadline can cut a slow send short). That fiber is all an
   * exchange needs to be abortable at close: it joins `inflight` instead of
   * forking another one per request. Should the send ever run in the
   * caller's own fiber, the exchange gets its fiber as before, since closing
   * the transport must not interrupt a caller.
   */
  const sendRequest = (
    caller: Fiber.Fiber<unknown, unknown>,
    message: JsonRpc.JsonRpcRequest,
    idleMs: number | undefined,
    extra: Readonly<Record<string, string>> | undefined
  ) =>
    Effect.withFiber<
      void,
      SessionChannel.PostError | MalformedMessage | MessageTooLarge | NoResponse | RequestTimeout | TransportClosed
    >(
      (current) => {
        if (current === caller) return exchange(exchangeRequest(message, idleMs, extra))
        if (closedError !== undefined) return Effect.fail(closedError)
        FiberSet.addUnsafe(inflight, current)
        return exchangeRequest(message, idleMs, extra)
      }
    )

  /**
   * The idle timeout for the SSE answer to a request. The request's deadline
   * covers its whole exchange, so when that deadline is fixed and comes no
   * later than the idle timeout could, watching for silence adds nothing but
   * a timer race on every read of the stream.
   */
  const answerIdleMs = (requestOptions: RequestOptions | undefined): number | undefined => {
    if (idleTimeoutMs === undefined || requestOptions?.onDeadline !== undefined) return idleTimeoutMs
    const deadlineMs = core.timeoutMsFor(requestOptions)
    return deadlineMs !== undefined && deadlineMs > 0 && deadlineMs <= idleTimeoutMs ? undefined : idleTimeoutMs
  }

  /** An exchange aborted by the close surfaces as the close's error, not as an interruption. */
  const closedIfInterrupted = <E>(cause: Cause.Cause<E>): Effect.Effect<never, E | TransportClosed> =>
    closedError !== undefined && Cause.hasInterruptsOnly(cause) ? Effect.fail(closedError) : Effect.failCause(cause)

  const request: ClientTransportShape["request"] = (method, params, requestOptions) =>
    Effect.withFiber((caller) =>
      core.correlation.call(
        method,
        params,
        (message) => sendRequest(caller, message, answerIdleMs(requestOptions), requestOptions?.headers),
        core.callOptions(requestOptions)
      ).pipe(Effect.catchCause(closedIfInterrupted))
    )

  // ---------------------------------------------------------------------------
  // Notifications

  /** Messages on a stream that answers no request of ours (GET listener, stray answers). */
  const dispatchUnrelated = (event: { readonly event: string; readonly data: string }) =>
    SseReader.isMessageEvent(event) ? Effect.as(core.dispatchFrame(event.data), false) : Effect.succeed(false)

  const oversized = (limit: number) => core.diagnose(Diagnostic.MessageTooLarge({ size: limit + 1, limit }))

  /** How a stream that answers no request of ours is read: an oversized message is reported and skipped. */
  const unrelatedEvents: SseReader.ReadOptions<never, never> = {
    maxEventBytes: maxBytes,
    idleTimeoutMs,
    onEvent: dispatchUnrelated,
    onOversized: oversized
  }

  const consumeStray = (response: HttpClientResponse.HttpClientResponse): Effect.Effect<void> =>
    Http.mediaType(response) === "text/event-stream"
      ? FiberSet.run(
        background,
        SseReader.read(response.stream, SseReader.makeCursor(), unrelatedEvents).pipe(Effect.ignore)
      ).pipe(Effect.asVoid)
      : Http.discard(response)

  // Combinators, not `Effect.gen` (docs/design.md, "Per-request code and the old generation").
  const notify: ClientTransportShape["notify"] = (method, params) =>
    exchange(Effect.suspend(() =>
      Effect.flatMap(channel.post(JsonRpc.notification(method, params), channel.stateless(), undefined), (response) =>
        markReady(false).pipe(
          Effect.andThen(consumeStray(response)),
          Effect.andThen(method === "notifications/initialized" && options.listen === true ? listen : Effect.void)
        ))
    ))

  // ---------------------------------------------------------------------------
  // Standalone GET listener

  const listener = yield* HttpGetListener.make({ core, openGet, schedule, events: unrelatedEvents })

  /** The stateless mode has no standalone stream: the listener stays `Idle`. */
  const listen: Effect.Effect<void> = Effect.suspend(() =>
    closedError !== undefined || channel.stateless() !== undefined ? Effect.void : listener.start
  )

  // ---------------------------------------------------------------------------
  // Protocol version: the mode follows its era

  const setProtocolVersion = (version: string): Effect.Effect<void> =>
    Effect.suspend(() =>
      // No session in the stateless mode, and no GET stream: a running one stops.
      channel.setProtocolVersion(version) ? Effect.andThen(listener.interrupt, listener.showClosed) : Effect.void
    )

  // ---------------------------------------------------------------------------
  // Close: abort everything in flight, then end the session

  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      closedError = new TransportClosed({ reason: "transport scope closed" })
      yield* core.close(closedError)
      yield* listener.interrupt
      yield* FiberSet.clear(inflight)
      yield* FiberSet.clear(background)
      yield* listener.showClosed
      yield* channel.endSession
    })
  )

  const transport: StreamableHttpClientTransport = {
    ...core.service({
      kind: "streamable-http",
      request,
      notify,
      setProtocolVersion
    }),
    kind: "streamable-http",
    url,
    listen,
    listenerState: listener.state,
    sessionId: Effect.sync(channel.session),
    protocolVersion: Effect.sync(channel.protocolVersion)
  }
  return transport
})

/**
 * The client with effect/http's tracing set to `mode`. The settings are
 * references read by the client per request, so they are provided on each
 * request effect (the patched context is remembered, see `withPatchedContext`);
 * a user's own setting inside the caller's context does not reach the
 * transport's requests.
 */
const withTracing = (client: HttpClient.HttpClient, mode: HttpTracing): HttpClient.HttpClient => {
  const settings = mode === "off"
    ? Http.withPatchedContext((context) => Context.add(context, HttpClient.TracerDisabledWhen, constTrue))
    : Http.withPatchedContext((context) => Context.add(context, HttpClient.TracerPropagationEnabled, mode === "propagate"))
  return HttpClient.transformResponse(client, settings)
}

/**
 * Provides `ClientTransport` over Streamable HTTP; needs an `HttpClient` (e.g. `NodeHttpClient.layerUndici`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<ClientTransport, never, HttpClient.HttpClient> =>
  Layer.effect(ClientTransport, make(options))
