/**
 * Legacy HTTP+SSE client transport (MCP 2024-11-05).
 *
 * One long GET carries everything the server sends; its first event,
 * `endpoint`, names the URL every client message is POSTed to (202 expected).
 * Responses arrive on the stream and are matched by id. When the stream ends
 * or breaks, the transport is closed and everything pending fails with
 * `TransportClosed`. Deprecated by the spec since 2025-03-26; kept for
 * servers that still speak it.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as HttpBody from "effect/http/HttpBody"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import type { AuthError } from "../AuthError.ts"
import * as JsonRpc from "../JsonRpc.ts"
import {
  type HttpError,
  MalformedMessage,
  MessageTooLarge,
  type RedirectRefused,
  TransportClosed
} from "../McpError.ts"
import type { OAuthProviderShape } from "./auth/OAuthProvider.ts"
import * as ClientCore from "./internal/ClientCore.ts"
import * as Http from "./internal/HttpExchange.ts"
import * as PostExchange from "./internal/PostExchange.ts"
import * as UnavailableRetry from "./internal/UnavailableRetry.ts"
import * as SseReader from "./internal/SseReader.ts"
import { DEFAULT_MAX_MESSAGE_BYTES } from "../Defaults.ts"
import {
  ClientTransport,
  type ClientTransportShape,
  ConnectionState,
  Diagnostic
} from "./ClientTransport.ts"

export type { HeaderContext, HeaderHook } from "./internal/HttpExchange.ts"
export type { RetryUnavailableOptions } from "./internal/UnavailableRetry.ts"

/**
 * `url` is the SSE endpoint the client GETs; the rest are headers, limits,
 * timeouts and authorization.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends Http.TransportOptions {
  /**
   * How long to wait for the stream to open and name its `endpoint`. With
   * `auth`, a sign-in after a 401 is not counted (the provider bounds it):
   * the time runs from the last GET. Default 30 seconds.
   */
  readonly connectTimeout?: Duration.Input | undefined
  /**
   * OAuth 2.1 for a server behind the MCP authorization spec: the stream's
   * GET and every POST carry the provider's bearer token; a 401 runs
   * discovery and sign-in (or a refresh) and sends the request once more, a
   * 403 `insufficient_scope` steps up. Discovery and tokens are for `url`,
   * the SSE URL (the POST endpoint the server names is on its origin).
   * Default none: a 401 fails as `HttpError` with the server's hints.
   */
  readonly auth?: OAuthProviderShape | undefined
}

/**
 * A client transport over legacy HTTP+SSE, connected: the stream is open and the server named its POST endpoint.
 *
 * @since 0.1.0
 * @category models
 */
export interface SseClientTransport extends ClientTransportShape {
  readonly kind: "sse"
  /** The POST endpoint the server named. */
  readonly endpoint: string
}

/**
 * What `make` and `layer` can fail with while connecting: the server unreachable, the GET
 * refused or redirected where the transport does not follow, no `endpoint` event before the
 * stream ended or `connectTimeout` ran out, an answer that is not an event stream or
 * names an endpoint on another origin, or (with `auth`) the sign-in failing.
 *
 * @since 0.1.0
 * @category models
 */
export type ConnectError = HttpError | RedirectRefused | TransportClosed | MalformedMessage | AuthError

const DEFAULT_CONNECT_TIMEOUT = Duration.seconds(30)
const encoder = new TextEncoder()


/**
 * Resolves the `endpoint` event against the SSE URL; another origin is refused.
 *
 * @since 0.1.0
 * @category utils
 */
export const resolveEndpoint = (data: string, base: string): URL | MalformedMessage => {
  let url: URL
  try {
    url = new URL(data.trim(), base)
  } catch {
    return MalformedMessage.make(data, "the endpoint event is not a URL")
  }
  if (url.origin !== new URL(base).origin) {
    return MalformedMessage.make(data, `the endpoint event points to another origin than ${new URL(base).origin}`)
  }
  return url
}

/** What POSTing a client message takes: the connection's HTTP client and options, and the endpoint the server named. */
interface Poster {
  readonly client: HttpClient.HttpClient
  readonly options: Options
  readonly sseUrl: string
  readonly maxBytes: number
  /** `undefined` until the server named it. */
  readonly endpoint: () => string | undefined
  /** When a refused POST or stream GET is sent again (`retryUnavailable`); `undefined`: never. */
  readonly retry: UnavailableRetry.Policy | undefined
}

/** One message POSTed to the endpoint; one generator function for every message (docs/design.md, "Per-request code and the old generation"). */
const postMessage = Effect.fnUntraced(function*(
  poster: Poster,
  message: JsonRpc.JsonRpcMessage
): Effect.fn.Return<void, HttpError | RedirectRefused | TransportClosed | MessageTooLarge | AuthError> {
  const target = poster.endpoint()
  if (target === undefined) return yield* new TransportClosed({ reason: "no endpoint yet" })
  const bytes = encoder.encode(JSON.stringify(message))
  if (bytes.length > poster.maxBytes) {
    return yield* new MessageTooLarge({ limit: poster.maxBytes, size: bytes.length, direction: "outgoing" })
  }
  const method = "method" in message ? message.method : undefined
  const body = HttpBody.uint8Array(bytes, "application/json")
  // The endpoint is on the SSE URL's origin (resolveEndpoint makes sure): its tokens are the SSE URL's.
  const response = yield* PostExchange.authorized(
    poster.options.auth,
    poster.sseUrl,
    (auth) =>
      Http.executeResending(
        poster.client,
        Http.assemble(poster.options, { verb: "POST", url: target, message }, auth),
        (headers) => HttpClientRequest.post(target, { headers, body }),
        method,
        poster.retry
      ),
    { method: "POST", url: target }
  )
  if (!Http.isSuccess(response.status)) return yield* Effect.flatMap(Http.httpError(response, method), Effect.fail)
  yield* Http.discard(response)
})

/**
 * Opens the SSE stream and waits for its `endpoint` event; the connection lives as long as the scope.
 *
 * Needs an `HttpClient`. For a server whose transport is not known, `fromConfig` with `type: "sse"`
 * tries Streamable HTTP first and falls back to this.
 *
 * @example
 * ```ts
 * import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
 * import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
 * import * as Effect from "effect/Effect"
 * import * as McpClient from "effect-mcp-transport/client/McpClient"
 * import * as SseClientTransport from "effect-mcp-transport/client/SseClientTransport"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* McpClient.connect(SseClientTransport.make({ url: "http://127.0.0.1:3001/sse" }))
 *   yield* Effect.log(client.serverInfo.name, client.protocolVersion)
 * })
 *
 * program.pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici), NodeRuntime.runMain)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(options: Options) {
  const client = yield* HttpClient.HttpClient
  const sseUrl = options.url.toString()
  const maxBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
  const idleTimeoutMs = Http.millis(options.sseIdleTimeout, Http.DEFAULT_SSE_IDLE)
  let closedError: TransportClosed | undefined
  let endpointUrl: string | undefined
  /** The URL the stream came from, after redirects: a relative `endpoint` is resolved against it. */
  let streamUrl = sseUrl

  const inflight = yield* FiberSet.make<unknown, unknown>()
  const background = yield* FiberSet.make<unknown, unknown>()
  const reader = yield* FiberSet.make<void, never>()
  const endpoint = yield* Deferred.make<string, ConnectError>()

  const poster: Poster = {
    client,
    options,
    sseUrl,
    maxBytes,
    endpoint: () => endpointUrl,
    retry: UnavailableRetry.policy(options.retryUnavailable)
  }
  const post = (message: JsonRpc.JsonRpcMessage) => postMessage(poster, message)

  const core = yield* ClientCore.make({
    send: (message) =>
      closedError !== undefined ? Effect.void : FiberSet.run(
        background,
        post(message).pipe(
          Effect.timeoutOption(Http.BACKGROUND_SEND_TIMEOUT),
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.void
              : Effect.logWarning("MCP SSE: sending a reply or cancellation failed", Cause.squash(cause))
          )
        )
      ).pipe(Effect.asVoid),
    defaultTimeout: options.defaultTimeout,
    notificationBuffer: options.notificationBuffer
  })

  /** Like the Streamable transport: closing the scope aborts the call and the caller sees TransportClosed. */
  const exchange = Http.owned(inflight, () => closedError)

  const shutDown = (error: TransportClosed) =>
    Effect.suspend(() => {
      closedError ??= error
      return Effect.andThen(Deferred.fail(endpoint, error), core.close(error))
    })

  // ---------------------------------------------------------------------------
  // The stream

  const onEvent = (event: { readonly event: string; readonly data: string }): Effect.Effect<boolean> => {
    if (event.event === "endpoint") {
      if (endpointUrl !== undefined) return Effect.succeed(false)
      const resolved = resolveEndpoint(event.data, streamUrl)
      if (resolved instanceof MalformedMessage) {
        return Effect.as(Deferred.fail(endpoint, resolved), true)
      }
      endpointUrl = resolved.toString()
      const ready = SubscriptionRef.update(core.state, (current) =>
        current._tag === "Connecting" ? ConnectionState.Ready() : current)
      return Effect.as(Effect.andThen(ready, Deferred.succeed(endpoint, endpointUrl)), false)
    }
    return SseReader.isMessageEvent(event) ? Effect.as(core.dispatchFrame(event.data), false) : Effect.succeed(false)
  }

  const read = (response: HttpClientResponse.HttpClientResponse) =>
    SseReader.read(response.stream, SseReader.makeCursor(), {
      maxEventBytes: maxBytes,
      idleTimeoutMs,
      onEvent,
      onOversized: (limit) => core.diagnose(Diagnostic.MessageTooLarge({ size: limit + 1, limit }))
    }).pipe(
      Effect.flatMap((ending) => {
        switch (ending._tag) {
          case "Stopped":
            return shutDown(new TransportClosed({ reason: "SSE endpoint refused" }))
          case "Ended":
            return shutDown(new TransportClosed({ reason: "SSE stream ended" }))
          case "Broken":
            return shutDown(new TransportClosed({ reason: "SSE stream broke", cause: ending.cause }))
          case "Idle":
            return shutDown(new TransportClosed({ reason: `SSE stream silent for ${ending.idleMs}ms` }))
        }
      }),
      Effect.catch((error) => shutDown(new TransportClosed({ reason: "SSE stream failed", cause: error })))
    )

  const connectMs = Duration.toMillis(Duration.fromInputUnsafe(options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT))
  /** When the last GET went out: the connect timeout counts from there, so a sign-in before it is not counted. */
  let lastGetAt = 0
  const withinConnectTimeout = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E | TransportClosed> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.timeoutOrElse(effect, {
        duration: Duration.millis(Math.max(0, connectMs - (now - lastGetAt))),
        orElse: () => Effect.fail(new TransportClosed({ reason: `no endpoint event within ${connectMs}ms` }))
      }))

  const open = Effect.gen(function*() {
    // A 401 before the stream opens signs in and opens it once more.
    const response = yield* PostExchange.authorized(
      options.auth,
      sseUrl,
      (auth) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          lastGetAt = now
          // A GET refused for now is sent again after the wait, within the connect timeout.
          return withinConnectTimeout(Http.executeResending(
            client,
            Http.assemble(options, { verb: "GET", url: sseUrl }, { accept: "text/event-stream", ...auth }),
            (headers) => HttpClientRequest.get(sseUrl, { headers }),
            "GET",
            poster.retry
          ))
        }),
      { method: "GET", url: sseUrl }
    )
    streamUrl = response.request.url
    if (!Http.isSuccess(response.status)) return yield* Effect.flatMap(Http.httpError(response, "GET"), Effect.fail)
    const type = Http.mediaType(response)
    if (type !== "text/event-stream") {
      const text = yield* Http.readText(response, 4096).pipe(Effect.orElseSucceed(() => ""))
      return yield* MalformedMessage.make(text, `expected text/event-stream from the SSE endpoint, got "${type}"`)
    }
    return response
  })

  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      yield* shutDown(new TransportClosed({ reason: "transport scope closed" }))
      yield* FiberSet.clear(reader)
      yield* FiberSet.clear(inflight)
      yield* FiberSet.clear(background)
    })
  )

  const connected = Effect.gen(function*() {
    const response = yield* open
    yield* FiberSet.run(reader, read(response))
    return yield* withinConnectTimeout(Deferred.await(endpoint))
  })
  const url = yield* connected.pipe(
    Effect.tapError((error) =>
      error._tag === "TransportClosed"
        ? shutDown(error)
        : shutDown(new TransportClosed({ reason: "connection refused", cause: error }))
    )
  )

  const request: ClientTransportShape["request"] = (method, params, requestOptions) =>
    core.correlation.call(method, params, (message) => exchange(post(message)), core.callOptions(requestOptions))

  const notify: ClientTransportShape["notify"] = (method, params) =>
    exchange(post(JsonRpc.notification(method, params)))

  const transport: SseClientTransport = {
    ...core.service({ kind: "sse", request, notify }),
    kind: "sse",
    url: sseUrl,
    endpoint: url
  }
  return transport
})

/**
 * Provides `ClientTransport` over legacy HTTP+SSE; needs an `HttpClient`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<ClientTransport, ConnectError, HttpClient.HttpClient> =>
  Layer.effect(ClientTransport, make(options))
