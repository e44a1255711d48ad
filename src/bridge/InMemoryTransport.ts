/**
 * A client and a server linked in one process, for tests and for embedding a
 * server in an application. The client side is a full `ClientTransport`
 * (ClientCore: correlation, timeouts, cancellation, notifications); the
 * server side runs a `Handler` through the same session engine as stdio.
 *
 * Messages cross the link as JSON text, exactly as they would over a pipe:
 * neither side can mutate what the other holds, values that JSON cannot carry
 * are refused or lost the same way, and size limits and malformed frames
 * behave as on a real wire. A `WireInterceptor` (see `testing/FaultInjection`)
 * can sit on the link to drop, delay, duplicate, reorder or corrupt frames.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as JsonRpc from "../JsonRpc.ts"
import { MalformedMessage, MessageTooLarge, TransportClosed } from "../McpError.ts"
import * as ClientCore from "../client/internal/ClientCore.ts"
import * as ServerDispatch from "../server/internal/ServerDispatch.ts"
import * as ServerSession from "../server/internal/ServerSession.ts"
import type { Handler, HandlerContext } from "../server/Handler.ts"
import { DEFAULT_MAX_MESSAGE_BYTES } from "../Defaults.ts"
import {
  ClientTransport,
  type ClientTransportShape,
  ConnectionState,
  Diagnostic
} from "../client/ClientTransport.ts"

/**
 * Which way a frame crosses the link.
 *
 * @since 0.1.0
 * @category models
 */
export type Direction = "client-to-server" | "server-to-client"

/**
 * Hands the link's owner a way to end the connection from the wire (a dying peer).
 *
 * @since 0.1.0
 * @category models
 */
export interface WireControls {
  /** The server dies: its handlers stop, nothing more crosses, the client closes with `reason`. */
  readonly killServer: (reason: string) => Effect.Effect<void>
}

/**
 * Sits on the link and decides what arrives, when, and how often.
 *
 * @since 0.1.0
 * @category models
 */
export interface WireInterceptor {
  /**
   * Called for every frame in `direction`. The frame arrives once per call
   * of `deliver`, which may be called later (from a forked fiber) or never.
   */
  readonly transmit: (direction: Direction, text: string, deliver: (text: string) => Effect.Effect<void>) => Effect.Effect<void>
  /** Called once when the pair is built. */
  readonly attach?: ((controls: WireControls) => Effect.Effect<void>) | undefined
}

/**
 * Limits and timeouts of a linked pair, and an optional `WireInterceptor` on the link.
 *
 * @since 0.1.0
 * @category models
 */
export interface InMemoryOptions {
  /** Default timeout of client requests. Default 30 seconds. */
  readonly timeout?: Duration.Input | undefined
  /** Largest frame either side accepts, in UTF-8 bytes. Default 10 MiB. */
  readonly maxMessageBytes?: number | undefined
  /** Whether the server accepts JSON-RPC batches. Default `true`. */
  readonly allowBatch?: boolean | undefined
  /** Entries a batch may hold on the server side; a longer one gets one -32600 reply. Default 100. */
  readonly maxBatchSize?: number | undefined
  /** Client notification buffer per subscriber. Default 1024. */
  readonly notificationBuffer?: number | undefined
  /** Timeout of requests the server sends the client. Default 60 s. */
  readonly serverRequestTimeout?: Duration.Input | undefined
  readonly interceptor?: WireInterceptor | undefined
}

/**
 * The server end of a linked pair, as its owner sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface InMemoryServer {
  /** Server-initiated traffic: notifications and requests to the client. */
  readonly context: HandlerContext
  /** Requests being served plus notifications waiting for the handler. */
  readonly inFlight: Effect.Effect<number>
  /** The server dies now (as a crashed process would): the client sees `TransportClosed` with `reason`. */
  readonly kill: (reason?: string) => Effect.Effect<void>
}

/**
 * Both ends of a linked pair: the client transport and the server end.
 *
 * @since 0.1.0
 * @category models
 */
export interface InMemoryPair {
  readonly client: ClientTransportShape<never>
  readonly server: InMemoryServer
}

/** UTF-8 size when over the limit, without encoding when the UTF-16 length decides it. */
const exceedsBytes = (text: string, limit: number): number | undefined => {
  if (text.length * 3 <= limit) return undefined
  if (text.length > limit) return text.length
  const bytes = new TextEncoder().encode(text).length
  return bytes > limit ? bytes : undefined
}

const passThrough = (_: Direction, text: string, deliver: (text: string) => Effect.Effect<void>) => deliver(text)

/**
 * Builds the linked pair for the life of the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makePair = Effect.fnUntraced(function*<R>(
  handler: Handler<R>,
  options: InMemoryOptions = {}
): Effect.fn.Return<InMemoryPair, never, Scope.Scope | R> {
  const maxBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
  const transmit = options.interceptor?.transmit ?? passThrough
  const toServer = yield* Queue.unbounded<string>()
  const toClient = yield* Queue.unbounded<string>()
  let serverDead = false

  // Queues accept nothing once shut down, so a frame sent after a kill vanishes.
  const deliverToServer = (text: string) => Effect.asVoid(Queue.offer(toServer, text))
  const deliverToClient = (text: string) => Effect.asVoid(Queue.offer(toClient, text))

  // --- client end
  const closedError = () => core.correlation.closedWith() ?? new TransportClosed({ reason: "transport closed" })

  const encode = (message: JsonRpc.JsonRpcMessage): string | MessageTooLarge | MalformedMessage => {
    let text: string
    try {
      text = JSON.stringify(message)
    } catch (error) {
      // The message cannot be shown as text: name its method instead.
      return MalformedMessage.make("method" in message ? message.method : "(response)", `not serializable as JSON: ${error}`)
    }
    const size = exceedsBytes(text, maxBytes)
    return size === undefined ? text : new MessageTooLarge({ limit: maxBytes, size, direction: "outgoing" })
  }

  const clientSend = (
    message: JsonRpc.JsonRpcMessage
  ): Effect.Effect<void, TransportClosed | MessageTooLarge | MalformedMessage> =>
    Effect.suspend((): Effect.Effect<void, TransportClosed | MessageTooLarge | MalformedMessage> => {
      if (core.correlation.closedWith() !== undefined) return Effect.fail(closedError())
      const text = encode(message)
      return typeof text === "string" ? transmit("client-to-server", text, deliverToServer) : Effect.fail(text)
    })

  const core = yield* ClientCore.make({
    send: clientSend,
    defaultTimeout: options.timeout,
    notificationBuffer: options.notificationBuffer
  })

  // --- server end
  const serverSend = (message: JsonRpc.JsonRpcMessage): Effect.Effect<void, TransportClosed> =>
    Effect.suspend(() => {
      if (serverDead) return Effect.fail(new TransportClosed({ reason: "server stopped" }))
      let text: string
      try {
        text = JSON.stringify(message)
      } catch (error) {
        return Effect.die(error)
      }
      return transmit("server-to-client", text, deliverToClient)
    })

  const session = yield* ServerSession.make({
    handler,
    send: serverSend,
    allowBatch: options.allowBatch ?? true,
    maxBatchSize: options.maxBatchSize,
    decideEra: true,
    defaultRequestTimeoutMs: options.serverRequestTimeout === undefined ? undefined : Duration.toMillis(options.serverRequestTimeout)
  })
  const dispatch = yield* ServerDispatch.make({
    session,
    reply: (reply) =>
      serverDead ? Effect.void : transmit("server-to-client", ServerDispatch.encodeReply(reply), deliverToClient)
  })

  // --- the two directions of the link
  yield* Queue.take(toServer).pipe(
    Effect.flatMap((text) => {
      if (text.trim() === "") return Effect.void
      const size = exceedsBytes(text, maxBytes)
      if (size === undefined) return dispatch.push(text)
      return transmit("server-to-client", JSON.stringify(ServerDispatch.tooLarge(maxBytes, size)), deliverToClient)
    }),
    Effect.forever,
    Effect.forkScoped
  )
  yield* Queue.take(toClient).pipe(
    Effect.flatMap((text) => {
      if (text.trim() === "") return Effect.void
      const size = exceedsBytes(text, maxBytes)
      if (size !== undefined) {
        core.diagnose(Diagnostic.MessageTooLarge({ size, limit: maxBytes }))
        return Effect.void
      }
      return core.dispatchFrame(text)
    }),
    Effect.forever,
    Effect.forkScoped
  )

  const kill = (reason = "server killed"): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (serverDead) return Effect.void
      serverDead = true
      const error = new TransportClosed({ reason })
      return Effect.all([
        Queue.shutdown(toServer),
        Queue.shutdown(toClient),
        core.close(error),
        session.end(error)
      ], { discard: true })
    })

  if (options.interceptor?.attach !== undefined) yield* options.interceptor.attach({ killServer: kill })

  yield* SubscriptionRef.set(core.state, ConnectionState.Ready())

  const client = core.service<never>({
    kind: "in-memory",
    request: (method, params, requestOptions) =>
      core.correlation.call(method, params, clientSend, core.callOptions(requestOptions)),
    notify: (method, params) =>
      // NotifyError has no room for a caller's unserializable params: that is a bug, so a defect.
      clientSend(JsonRpc.notification(method, params)).pipe(Effect.catchTag("MalformedMessage", (e) => Effect.die(e)))
  })

  return {
    client,
    server: { context: session.context, inFlight: dispatch.busy, kill }
  }
})

/**
 * The client side of a linked pair; the server lives as long as the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <R>(
  handler: Handler<R>,
  options?: InMemoryOptions
): Effect.Effect<ClientTransportShape<never>, never, Scope.Scope | R> =>
  Effect.map(makePair(handler, options), (pair) => pair.client)

/**
 * Provides `ClientTransport` talking to `handler` in the same process.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <R>(handler: Handler<R>, options?: InMemoryOptions): Layer.Layer<ClientTransport, never, R> =>
  Layer.effect(ClientTransport, make(handler, options))
