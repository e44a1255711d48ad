/**
 * The bridge's default front: each client is served in its own era, by
 * whatever the upstream speaks.
 *
 * - A request of the stateless era (2026-07-28: it carries the era's
 *   `_meta`, and no session) goes as it is to one upstream connection that
 *   speaks the era (`StatelessUpstream`, probed with `server/discover` when
 *   first needed). When the upstream does not speak it, the request is
 *   served by the `stateless` front (a pool of handshake-era connections
 *   behind `McpServer`), or, when converting is off, answered with -32022
 *   naming the handshake revisions.
 * - Everything else (the handshake era) goes as it is through the
 *   pass-through bridge: one upstream per session, `initialize` included.
 *   When the upstream refuses that `initialize` as a server of the stateless
 *   era only does (-32022, -32601, or -32602 about the era's `_meta`) and
 *   does speak that era, the session is served by the `handshake`
 *   front instead (one `McpClient` pinned to 2026-07-28), and so is every
 *   later session; with converting off, the refusal reaches the client.
 *
 * The converting fronts are connected only when a client first needs one.
 *
 * A client of both eras over stdio probes with `server/discover` and, when
 * no answer comes in its probe timeout, gives the probe up without a cancel
 * (a server of the handshake era may not know the method) and sends
 * `initialize`. That `initialize` on the sessionless connection is the
 * bridge's word that the probe was given up: the probe's request is
 * interrupted (no answer goes out), and what was opened to serve the
 * stateless era there (the `stateless` front's pool, a session upstream;
 * the stateless-era connection) is closed, once anything under way has
 * settled, unless another request of that era is still in flight. A verdict
 * the upstream gave stays; an interrupted probe gives none.
 *
 * @since 0.1.0
 */
import type * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"
import type { ClientTransportShape } from "../client/ClientTransport.ts"
import * as JsonRpc from "../JsonRpc.ts"
import * as ProtocolVersion from "../ProtocolVersion.ts"
import * as RequestMeta from "../RequestMeta.ts"
import type { Handler, HandlerContext } from "../server/Handler.ts"
import * as EraFront from "./EraFront.ts"
import * as StatelessUpstream from "./StatelessUpstream.ts"
import { toRpcError, type UpstreamUnavailable } from "./UpstreamErrors.ts"

/**
 * The pass-through bridge the router sends the handshake era to.
 *
 * @since 0.1.0
 * @category models
 */
export interface Passthrough {
  readonly handler: Handler
  readonly endSession: (sessionId: string) => Effect.Effect<void>
  readonly upstream: (sessionId?: string | undefined) => Effect.Effect<ClientTransportShape, UpstreamUnavailable>
  readonly upstreams: Effect.Effect<number>
}

/**
 * What the router needs besides the pass-through bridge.
 *
 * @since 0.1.0
 * @category models
 */
export interface EraRouterOptions<E, R> extends Omit<EraFront.EraFrontOptions<E, R>, "front"> {
  /** Whether a client whose era the upstream does not speak is served through a converting front. */
  readonly convert: boolean
  readonly requestTimeout?: Duration.Input | undefined
}

const failure = (id: JsonRpc.RequestId, error: UpstreamUnavailable): JsonRpc.JsonRpcResponse => {
  const rpc = toRpcError(error)
  return JsonRpc.failure(id, rpc.code, rpc.rpcMessage, rpc.data)
}

/**
 * Whether the upstream's answer to `initialize` says it does not do the
 * handshake: -32022 (what a server of the stateless era only answers), -32601
 * (no such method), or -32602 about the era's `_meta` (a server that wants it
 * on every request). Any other error, say to malformed params, stays the
 * client's: a server of both eras never answers these, so one client cannot
 * turn the conversion on for the others.
 */
const refusesHandshake = (answer: JsonRpc.JsonRpcResponse | null): boolean => {
  if (answer === null || !("error" in answer)) return false
  const { code, data, message } = answer.error
  if (typeof data === "object" && data !== null && "bridge" in data) return false
  return code === JsonRpc.ErrorCode.UnsupportedProtocolVersion || code === JsonRpc.ErrorCode.MethodNotFound ||
    (code === JsonRpc.ErrorCode.InvalidParams && /_meta|io\.modelcontextprotocol\//.test(`${message} ${JSON.stringify(data)}`))
}

/** Where an `initialize` goes: the pass-through bridge, or the handshake front once the upstream refused the handshake. */
interface Conversion {
  readonly passthrough: Passthrough
  /** `undefined` when converting is off. */
  readonly toHandshake: EraFront.EraFront | undefined
  /** Sessions served by the handshake front (`undefined`: the one sessionless connection, stdio). */
  readonly converted: Set<string | undefined>
  /** Set once the upstream refused `initialize` and speaks 2026-07-28: every later session is converted. */
  handshakeRefused: boolean
}

/** Serves an `initialize`; one generator function for every `initialize` (docs/design.md, "Per-request code and the old generation"). */
const initializeHere = Effect.fnUntraced(function*(
  conversion: Conversion,
  request: JsonRpc.JsonRpcRequest,
  ctx: HandlerContext
): Effect.fn.Return<JsonRpc.JsonRpcResponse | null, unknown> {
  const { passthrough, toHandshake } = conversion
  if (toHandshake === undefined) return yield* passthrough.handler(request, ctx)
  if (!conversion.handshakeRefused) {
    const answer = yield* passthrough.handler(request, ctx)
    if (!refusesHandshake(answer)) return answer
    // Connecting the front pinned to 2026-07-28 tells whether the upstream speaks that era.
    if (Exit.isFailure(yield* Effect.exit(toHandshake.upstream))) return answer
    yield* Effect.logInfo("bridge: the upstream refused initialize and speaks 2026-07-28: converting the handshake era")
    conversion.handshakeRefused = true
    // The stdio front's shared upstream is the one it watches: it stays.
    if (ctx.sessionId !== undefined) yield* passthrough.endSession(ctx.sessionId)
  }
  conversion.converted.add(ctx.sessionId)
  return yield* toHandshake.handler(request, ctx)
})

/**
 * The router for the life of the scope, around `passthrough`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*<E, R>(
  passthrough: Passthrough,
  options: EraRouterOptions<E, R>
): Effect.fn.Return<Passthrough, never, Exclude<R, Scope.Scope> | Scope.Scope> {
  const services = yield* Effect.context<Exclude<R, Scope.Scope>>()
  const modern = yield* StatelessUpstream.make({
    connect: options.connect.pipe(Effect.provideContext(services as Context.Context<never>)) as Effect.Effect<
      ClientTransportShape,
      E,
      Scope.Scope
    >,
    requestTimeout: options.requestTimeout
  })
  const toStateless = options.convert ? yield* EraFront.make({ ...options, front: "stateless" }) : undefined
  const toHandshake = options.convert
    ? yield* EraFront.make({
      ...options,
      front: "handshake",
      upstreamProtocol: options.upstreamProtocol ?? ProtocolVersion.LATEST_STATELESS
    })
    : undefined
  /** Sessions served by the handshake front (`undefined`: the one sessionless connection, stdio). */
  const converted = new Set<string | undefined>()
  const conversion: Conversion = { passthrough, toHandshake, converted, handshakeRefused: false }
  /** Requests of the stateless era in flight (no session), by the fiber serving each. */
  const statelessInFlight = new Map<Fiber.Fiber<unknown, unknown>, string>()

  const serveStateless = (request: JsonRpc.JsonRpcRequest, ctx: HandlerContext) =>
    Effect.withFiber((fiber) => {
      statelessInFlight.set(fiber, request.method)
      return Effect.matchEffect(modern.era, {
        onFailure: (error) => Effect.succeed(failure(request.id, error)),
        onSuccess: (era) =>
          era._tag === "Legacy" && toStateless !== undefined
            ? toStateless.handler(request, ctx)
            : modern.forward(request, ctx)
      }).pipe(Effect.ensuring(Effect.sync(() => void statelessInFlight.delete(fiber))))
    })

  /**
   * The sessionless connection's client turned to the handshake era: its
   * `server/discover` still in flight was given up, and what serves the
   * stateless era is closed when nothing else of that era is in flight.
   */
  const leaveStatelessEra: Effect.Effect<void> = Effect.suspend(() => {
    const probes: Array<Fiber.Fiber<unknown, unknown>> = []
    for (const [fiber, method] of statelessInFlight) if (method === "server/discover") probes.push(fiber)
    return Fiber.interruptAll(probes).pipe(
      Effect.andThen(Effect.suspend(() =>
        statelessInFlight.size > 0
          ? Effect.void
          : Effect.all([toStateless?.release ?? Effect.void, modern.release], { concurrency: "unbounded", discard: true })
      ))
    )
  })

  const initialize = (request: JsonRpc.JsonRpcRequest, ctx: HandlerContext) =>
    // Over HTTP an `initialize` has a session, or is ephemeral: only a connection's (stdio) has neither.
    ctx.sessionId === undefined && ctx.ephemeral !== true
      ? Effect.map(
        Effect.all([leaveStatelessEra, initializeHere(conversion, request, ctx)], { concurrency: "unbounded" }),
        ([, answer]) => answer
      )
      : initializeHere(conversion, request, ctx)

  const sessionEnded = (sessionId: string | undefined): Effect.Effect<void> =>
    Effect.suspend(() => {
      const wasConverted = converted.delete(sessionId)
      return Effect.all([
        passthrough.handler.sessionEnded?.(sessionId) ?? Effect.void,
        wasConverted ? toHandshake?.handler.sessionEnded?.(sessionId) ?? Effect.void : Effect.void,
        sessionId === undefined ? toStateless?.handler.sessionEnded?.(sessionId) ?? Effect.void : Effect.void
      ], { discard: true })
    })

  const handler: Handler = Object.assign(
    (message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification, ctx: HandlerContext) => {
      const request = "id" in message ? message : undefined
      if (request !== undefined && ctx.sessionId === undefined && RequestMeta.readMeta(request.params)._tag !== "Absent") {
        return serveStateless(request, ctx)
      }
      if (toHandshake !== undefined && converted.has(ctx.sessionId)) return toHandshake.handler(message, ctx)
      if (request !== undefined && request.method === "initialize") return initialize(request, ctx)
      return passthrough.handler(message, ctx)
    },
    {
      stateless: true,
      shutdown: Effect.all([
        toStateless?.handler.shutdown ?? Effect.void,
        toHandshake?.handler.shutdown ?? Effect.void
      ], { discard: true }),
      sessionEnded,
      // The upstream cap is the pass-through's: a handshake-era session starts its upstream there.
      admitSession: passthrough.handler.admitSession,
      // What the converting front checks `Mcp-Param-*` headers against; pass-through leaves it to the upstream.
      toolInputSchema: (name: string) =>
        Effect.matchEffect(modern.era, {
          onFailure: () => Effect.succeed(undefined),
          onSuccess: (era) =>
            era._tag === "Legacy" && toStateless !== undefined
              ? toStateless.handler.toolInputSchema?.(name) ?? Effect.succeed(undefined)
              : Effect.succeed(undefined)
        })
    }
  )

  return {
    handler,
    endSession: (sessionId) => sessionEnded(sessionId),
    upstream: passthrough.upstream,
    upstreams: Effect.map(
      Effect.all([
        passthrough.upstreams,
        modern.live,
        toStateless?.upstreams ?? Effect.succeed(0),
        toHandshake?.upstreams ?? Effect.succeed(0)
      ]),
      (counts) => counts.reduce((a, b) => a + b, 0)
    )
  }
})
