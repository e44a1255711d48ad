/**
 * The bridge across protocol eras, as a `Handler` the server transports
 * mount: the upstream is connected when the first message arrives (the
 * front describes itself with what the upstream said), a failure to connect
 * answers that message with -32000 and the next message tries again, and
 * the bridge's scope closes everything.
 *
 * - `stateless`: an `UpstreamPool` of handshake-era connections behind
 *   `StatelessFront` (both eras served in front).
 * - `handshake`: one `McpClient` behind `HandshakeFront` (handshake era in front).
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type { ClientTransportShape } from "../client/ClientTransport.ts"
import * as JsonRpc from "../JsonRpc.ts"
import type * as ProtocolVersion from "../ProtocolVersion.ts"
import type { Handler } from "../server/Handler.ts"
import type * as McpServer from "../server/McpServer.ts"
import * as HandshakeFront from "./HandshakeFront.ts"
import * as StatelessFront from "./StatelessFront.ts"
import { toRpcError, UpstreamUnavailable } from "./UpstreamErrors.ts"
import * as UpstreamPool from "./UpstreamPool.ts"

/**
 * What an era front needs.
 *
 * @since 0.1.0
 * @category models
 */
export interface EraFrontOptions<E, R> extends StatelessFront.StatelessFrontOptions {
  readonly front: "stateless" | "handshake"
  readonly connect: Effect.Effect<ClientTransportShape, E, R>
  /** `stateless` only: upstream connections. Default 1. */
  readonly upstreamPool?: number | undefined
  /** `handshake` only: the upstream client's era. Default `"auto"`. */
  readonly upstreamProtocol?: "auto" | ProtocolVersion.AnyVersion | undefined
  readonly requestTimeout?: Duration.Input | undefined
}

/**
 * A running era front.
 *
 * @since 0.1.0
 * @category models
 */
export interface EraFront {
  readonly handler: Handler
  readonly endSession: (sessionId: string) => Effect.Effect<void>
  /** An upstream transport open now (connecting the front if needed). */
  readonly upstream: Effect.Effect<ClientTransportShape, UpstreamUnavailable>
  readonly upstreams: Effect.Effect<number>
  /**
   * Closes the front and its upstream connections, after a start under way
   * has settled (interrupted mid-`initialize`, a connection could leave an
   * upstream session the bridge never learned the id of). The next message
   * starts it again.
   */
  readonly release: Effect.Effect<void>
}

interface Started {
  readonly handle: McpServer.ServerHandle<never>
  readonly upstream: Effect.Effect<ClientTransportShape, UpstreamUnavailable>
  readonly upstreams: Effect.Effect<number>
}

/**
 * The front for the life of the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*<E, R>(
  options: EraFrontOptions<E, R>
): Effect.fn.Return<EraFront, never, Exclude<R, Scope.Scope> | Scope.Scope> {
  const bridgeScope = yield* Effect.scope
  const services = yield* Effect.context<Exclude<R, Scope.Scope>>()
  // Without the bridge's Scope: each connection's process belongs to the scope it is opened in (a pool slot's).
  const connect = options.connect.pipe(Effect.provideContext(Context.omit(Scope.Scope)(services) as Context.Context<never>)) as Effect.Effect<
    ClientTransportShape,
    E,
    Scope.Scope
  >

  const start: Effect.Effect<Started, UpstreamUnavailable, Scope.Scope> = options.front === "stateless"
    ? Effect.gen(function*() {
      // Set once the front exists; list changes that come before it have no one to reach.
      let handle: McpServer.ServerHandle<never> | undefined
      const pool = yield* UpstreamPool.make({
        connect,
        size: options.upstreamPool,
        requestTimeout: options.requestTimeout,
        onBroadcast: (method, params) => handle === undefined ? Effect.void : handle.notifyAll(method, params)
      })
      handle = yield* StatelessFront.make(pool, options)
      return { handle, upstream: pool.any, upstreams: pool.live }
    })
    : Effect.gen(function*() {
      const transport = yield* Effect.mapError(connect, (cause) => new UpstreamUnavailable({ cause }))
      const front = yield* HandshakeFront.make(transport, {
        protocol: options.upstreamProtocol,
        requestTimeout: options.requestTimeout
      }).pipe(Effect.mapError((cause) => new UpstreamUnavailable({ cause })))
      return {
        handle: front.handle,
        upstream: Effect.succeed(transport),
        upstreams: Effect.map(SubscriptionRef.get(front.client.connection.state), (state) => state._tag === "Closed" ? 0 : 1)
      }
    })

  let started: Deferred.Deferred<Started, UpstreamUnavailable> | undefined
  let startedScope: Scope.Closeable | undefined
  let current: Started | undefined
  const ready: Effect.Effect<Started, UpstreamUnavailable> = Effect.suspend(() => {
    if (started !== undefined) return Deferred.await(started)
    // Uninterruptible until the start is forked: a cancel in between would leave `started` never settled.
    return Effect.uninterruptibleMask((restore) => Effect.gen(function*() {
      const done = yield* Deferred.make<Started, UpstreamUnavailable>()
      started = done
      const scope = yield* Scope.fork(bridgeScope, "sequential")
      startedScope = scope
      // In a fiber of the bridge's: a cancelled first request must not strand the others waiting.
      yield* start.pipe(
        Scope.provide(scope),
        Effect.onExit((exit) => {
          if (Exit.isSuccess(exit)) {
            current = exit.value
            return Deferred.succeed(done, exit.value)
          }
          if (started === done) started = undefined
          const fail = exit.cause.reasons.find((r) => r._tag === "Fail")
          const error = fail !== undefined && fail._tag === "Fail"
            ? fail.error
            : new UpstreamUnavailable({ cause: Cause.squash(exit.cause) })
          return Effect.logWarning(`bridge: ${error.message}`).pipe(
            Effect.andThen(Deferred.fail(done, error)),
            Effect.andThen(Scope.close(scope, Exit.void))
          )
        }),
        Effect.forkIn(bridgeScope, { startImmediately: true })
      )
      return yield* restore(Deferred.await(done))
    }))
  })

  const release: Effect.Effect<void> = Effect.suspend(() => {
    const pending = started
    const scope = startedScope
    if (pending === undefined || scope === undefined) return Effect.void
    return Deferred.await(pending).pipe(
      Effect.exit,
      Effect.flatMap(() => {
        // Released meanwhile, or failed (a failed start closes its own scope).
        if (started !== pending) return Effect.void
        started = undefined
        startedScope = undefined
        current = undefined
        return Scope.close(scope, Exit.void)
      })
    )
  })

  const handler: Handler = Object.assign(
    (message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification, ctx: Parameters<Handler>[1]) =>
      Effect.matchEffect(ready, {
        onFailure: (error) => {
          if (!("id" in message)) return Effect.succeed(null)
          const rpc = toRpcError(error)
          return Effect.succeed(JsonRpc.failure(message.id, rpc.code, rpc.rpcMessage, rpc.data))
        },
        onSuccess: (s) => s.handle.handler(message, ctx)
      }),
    {
      stateless: options.front === "stateless",
      shutdown: Effect.suspend(() => current === undefined ? Effect.void : current.handle.shutdown),
      // The front's McpServer drops an ended session's record and state itself.
      sessionEnded: (sessionId: string | undefined) =>
        Effect.suspend(() => current?.handle.handler.sessionEnded?.(sessionId) ?? Effect.void),
      ...(options.front === "stateless"
        ? {
          toolInputSchema: (name: string) =>
            Effect.matchEffect(ready, {
              onFailure: () => Effect.succeed(undefined),
              onSuccess: (s) => s.handle.handler.toolInputSchema?.(name) ?? Effect.succeed(undefined)
            })
        }
        : {})
    }
  )

  return {
    handler,
    endSession: (sessionId) => Effect.suspend(() => current?.handle.handler.sessionEnded?.(sessionId) ?? Effect.void),
    upstream: Effect.flatMap(ready, (s) => s.upstream),
    upstreams: Effect.suspend(() => current === undefined ? Effect.succeed(0) : current.upstreams),
    release
  }
})
