/**
 * Serves any MCP server over the other transport: a stdio server as
 * Streamable HTTP, a remote HTTP server over stdio. The bridge is a server
 * `Handler` backed by client transports (`ClientTransport`, no lifecycle of
 * its own), and it forwards JSON-RPC as it is, `initialize` included, so the
 * downstream client and the upstream server negotiate between themselves.
 *
 * One upstream per downstream session: the first message of a session
 * connects one (spawns the child, opens the HTTP session) in a scope of its
 * own, and the end of the session closes it. Messages without a session
 * (stdio, stateless HTTP) share one upstream; requests of the stateless era
 * (2026-07-28) share another, and a client whose era the upstream does not
 * speak is served through a converting front (`EraRouter`).
 *
 * What crosses, and how:
 * - requests both ways, results and JSON-RPC errors unchanged; a failure of
 *   the upstream connection becomes a JSON-RPC error (see `toRpcError`);
 * - notifications both ways, except `notifications/cancelled`: ids differ on
 *   the two sides, so each side's engine sends its own (a cancelled
 *   downstream request interrupts the forwarded call, which cancels it
 *   upstream; an upstream cancel interrupts the call forwarded downstream);
 * - progress: a request's `_meta.progressToken` travels with it, and the
 *   upstream's `notifications/progress` for that token go back through that
 *   request's context (over HTTP, on that POST's stream);
 * - other upstream notifications and upstream requests (sampling,
 *   elicitation, roots, ping) go through the most recent downstream request
 *   still running on the session (stdio carries no link between them, and a
 *   tool call that samples is the common case), else through the session.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Scope from "effect/Scope"
import type * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type { HttpServer } from "effect/http"
import type { ServeError } from "effect/http/HttpServerError"
import type { ClientTransportShape } from "../client/ClientTransport.ts"
import * as ClientSpans from "../client/internal/ClientSpans.ts"
import * as JsonRpc from "../JsonRpc.ts"
import type * as ProtocolVersion from "../ProtocolVersion.ts"
import { TransportClosed } from "../McpError.ts"
import type { Handler, HandlerContext } from "../server/Handler.ts"
import * as HttpServerTransport from "../server/HttpServerTransport.ts"
import * as RequestStateKeys from "../server/internal/RequestStateKeys.ts"
import * as ServerSpans from "../server/internal/ServerSpans.ts"
import * as StdioServerTransport from "../server/StdioServerTransport.ts"
import * as EraFront from "./EraFront.ts"
import * as EraRouter from "./EraRouter.ts"
import * as Metrics from "../observability/Metrics.ts"
import * as UpstreamSlots from "./UpstreamSlots.ts"
import { failureOf, firstLine, toRpcError, UpstreamUnavailable } from "./UpstreamErrors.ts"
import * as UpstreamRouting from "./UpstreamRouting.ts"

export { ErrorCode, toRpcError, UpstreamUnavailable } from "./UpstreamErrors.ts"

// ---------------------------------------------------------------------------
// Options, service, errors

/**
 * What a bridge needs: how to open an upstream connection, and optional timeouts and a close hook.
 *
 * @since 0.1.0
 * @category models
 */
export interface BridgeOptions<E = never, R = never> {
  /**
   * Opens one upstream connection; runs once per downstream session, in a
   * scope that closes when the session ends (or the bridge's scope closes).
   * E.g. `StdioClientTransport.make({ command, args })`, or `FromConfig.make(config)`.
   */
  readonly connect: Effect.Effect<ClientTransportShape, E, R>
  /**
   * Timeout of each forwarded request at the upstream. Default: none; the
   * downstream client's own timeout and cancellation decide.
   */
  readonly requestTimeout?: Duration.Input | undefined
  /**
   * Timeout of each upstream request forwarded to the downstream client
   * (sampling, elicitation…). Default: none; the upstream server decides.
   */
  readonly clientRequestTimeout?: Duration.Input | undefined
  /**
   * Upstream connections (for a stdio server: processes) open at once, one
   * per HTTP session plus the shared one. A new session past it is refused
   * before anything is started: 503 with `Retry-After` over HTTP. Default 16.
   */
  readonly maxUpstreams?: number | undefined
  /** Told when a session's upstream closes (`undefined`: the shared, sessionless upstream). */
  readonly onUpstreamClosed?: ((sessionId: string | undefined, error: TransportClosed) => Effect.Effect<void>) | undefined
  /**
   * Which era the bridge serves in front. `"auto"` (default): each client in
   * its own era, as it is when the upstream speaks it, converted when not
   * (see `EraRouter`). `"passthrough"`: both eras as they are, never
   * converted. `"stateless"`: a handshake-era upstream served to clients of
   * the stateless era (2026-07-28) and of the handshake era, from a pool of
   * upstream connections (`upstreamPool`). `"handshake"`: a stateless-era
   * upstream served to handshake-era clients (`initialize`, sessions).
   */
  readonly front?: "auto" | "passthrough" | "stateless" | "handshake" | undefined
  /** `front: "stateless"`: how many upstream connections (processes) serve the requests. Default 1. */
  readonly upstreamPool?: number | undefined
  /** `front: "handshake"`: the era the upstream client speaks (`"auto"` negotiates). Default `"auto"`. */
  readonly upstreamProtocol?: "auto" | ProtocolVersion.AnyVersion | undefined
  /**
   * `front: "stateless"`: signs `requestState`. Default: a random key per
   * process; bridge processes behind one endpoint need a shared one. At
   * least 32 bytes.
   */
  readonly requestStateKey?: string | Uint8Array | undefined
  /** `front: "stateless"`: signing keys for rotation, current first (`McpServerOptions.requestStateKeys`). */
  readonly requestStateKeys?: ReadonlyArray<string | Uint8Array> | undefined
}

/**
 * A running bridge: the handler to mount on a server transport, and its upstream connections.
 *
 * @since 0.1.0
 * @category models
 */
export interface BridgeShape {
  /** Mount it on `StdioServerTransport` or `HttpServerTransport`. */
  readonly handler: Handler
  /** Closes the upstream of a downstream session that ended. The handler does it on its own when its transport ends the session (`Handler.sessionEnded`). */
  readonly endSession: (sessionId: string) => Effect.Effect<void>
  /**
   * The upstream of a session, connected now if it is not yet (default: the
   * sessionless one that stdio and stateless HTTP use), to fail fast at
   * start-up instead of at the first message.
   */
  readonly upstream: (sessionId?: string | undefined) => Effect.Effect<ClientTransportShape, UpstreamUnavailable>
  /** Upstream connections open (or opening) now. */
  readonly upstreams: Effect.Effect<number>
}

/**
 * The bridge as a service, provided by `layer` and `layerHttp`.
 *
 * @example
 * ```ts
 * import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 * import * as Schedule from "effect/Schedule"
 * import * as Bridge from "effect-mcp-transport/bridge"
 * import * as NodeSpawner from "effect-mcp-transport/client/NodeSpawner"
 * import * as StdioClientTransport from "effect-mcp-transport/client/StdioClientTransport"
 *
 * // A stdio server as Streamable HTTP on http://127.0.0.1:8421/mcp, one child process per HTTP session.
 * const BridgeLive = Bridge.layerHttp({
 *   connect: StdioClientTransport.make({ command: "node", args: ["server.js"] })
 * }).pipe(Layer.provide(NodeSpawner.layer))
 *
 * // Serves until interrupted, logging the upstream connections open every minute.
 * const report = Effect.gen(function*() {
 *   const bridge = yield* Bridge.Bridge
 *   yield* Effect.log(`upstream connections: ${yield* bridge.upstreams}`)
 * }).pipe(Effect.repeat(Schedule.spaced("1 minute")))
 *
 * report.pipe(Effect.provide(BridgeLive), NodeRuntime.runMain)
 * ```
 *
 * @since 0.1.0
 * @category services
 */
export class Bridge extends Context.Service<Bridge, BridgeShape>()("effect-mcp-transport/Bridge") {}

// ---------------------------------------------------------------------------
// One upstream per session

type Upstream = UpstreamRouting.Upstream

interface Entry {
  readonly scope: Scope.Closeable
  readonly ready: Deferred.Deferred<Upstream, UpstreamUnavailable>
}

const SHARED = ""

const toMillis = (input: Duration.Input | undefined): number => {
  if (input === undefined) return Number.POSITIVE_INFINITY
  const d = Duration.fromInputUnsafe(input)
  return Duration.isFinite(d) ? Duration.toMillis(d) : Number.POSITIVE_INFINITY
}

/**
 * The bridge for the life of the scope; closing it closes every upstream.
 * With a tracer installed, every request it serves is a server span, and
 * what it forwards a client span under it, so a trace goes on from the
 * downstream client to the upstream server (docs/observability.md).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <E, R>(
  options: BridgeOptions<E, R>
): Effect.Effect<BridgeShape, never, Exclude<R, Scope.Scope> | Scope.Scope> =>
  Effect.map(
    makeUntraced({ ...options, connect: Effect.map(options.connect, ClientSpans.traced) }),
    (shape) => ({ ...shape, handler: ServerSpans.traceHandler(shape.handler) })
  )

const makeUntraced = Effect.fnUntraced(function*<E, R>(
  options: BridgeOptions<E, R>
): Effect.fn.Return<BridgeShape, never, Exclude<R, Scope.Scope> | Scope.Scope> {
  if (options.front === "stateless" || options.front === "handshake") {
    // A signing key the front cannot use is refused before any upstream starts.
    if (options.front === "stateless") RequestStateKeys.resolve(options)
    const front = yield* EraFront.make({ ...options, front: options.front })
    return {
      handler: front.handler,
      endSession: front.endSession,
      upstream: () => front.upstream,
      upstreams: front.upstreams
    }
  }
  const bridgeScope = yield* Effect.scope
  const services = yield* Effect.context<Exclude<R, Scope.Scope>>()
  const entries = new Map<string, Entry>()
  const slots = UpstreamSlots.make(options.maxUpstreams)
  const requestTimeout = options.requestTimeout === undefined ? Duration.infinity : options.requestTimeout
  const clientTimeoutMs = toMillis(options.clientRequestTimeout)

  const open = (key: string, entry: Entry): Effect.Effect<Upstream, UpstreamUnavailable> =>
    Effect.gen(function*() {
      const transport = yield* options.connect.pipe(
        Scope.provide(entry.scope),
        Effect.provideContext(services as Context.Context<never>),
        Effect.mapError((cause) => new UpstreamUnavailable({ cause }))
      ) as Effect.Effect<ClientTransportShape, UpstreamUnavailable>
      const up: Upstream = { transport, running: new Set(), progress: new Map(), session: undefined, closed: undefined }
      yield* transport.setRequestHandler(UpstreamRouting.serveRequest(up, clientTimeoutMs))
      // Subscribed before anything is sent, so nothing the server says is missed.
      yield* transport.notifications.pipe(
        Stream.runForEach((n) => UpstreamRouting.routeNotification(up, n)),
        Effect.forkIn(entry.scope, { startImmediately: true })
      )
      yield* transport.awaitClosed.pipe(
        Effect.flatMap((error) => {
          up.closed = error
          return Effect.andThen(
            Effect.logInfo(`bridge: upstream closed${key === SHARED ? "" : ` (session ${key})`}: ${firstLine(error.message)}`),
            options.onUpstreamClosed === undefined
              ? Effect.void
              : Effect.exit(options.onUpstreamClosed(key === SHARED ? undefined : key, error))
          )
        }),
        Effect.forkIn(entry.scope, { startImmediately: true })
      )
      return up
    })

  const close = (key: string, entry: Entry): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (entries.get(key) === entry) {
        entries.delete(key)
        slots.release(key)
      }
      return Scope.close(entry.scope, Exit.void)
    })

  /** The session's upstream, connecting it (once, whoever asks first) if needed. */
  const upstreamFor = (key: string, fresh: boolean): Effect.Effect<Upstream, UpstreamUnavailable> =>
    Effect.suspend(() => {
      const existing = entries.get(key)
      if (existing !== undefined) {
        return Effect.flatMap(Deferred.await(existing.ready), (up) =>
          // A new client's `initialize` on a dead upstream starts a new one.
          fresh && up.closed !== undefined
            ? Effect.andThen(close(key, existing), upstreamFor(key, false))
            : Effect.succeed(up))
      }
      if (!slots.take(key)) {
        return Effect.fail(
          new UpstreamUnavailable({
            cause: new TransportClosed({ reason: `the bridge runs its limit of ${slots.max} upstream connections` })
          })
        )
      }
      return Effect.gen(function*() {
        const entry: Entry = {
          scope: yield* Scope.fork(bridgeScope, "sequential"),
          ready: yield* Deferred.make<Upstream, UpstreamUnavailable>()
        }
        entries.set(key, entry)
        // Connected in a fiber of the bridge's, not the asking request's: a
        // cancelled request must not strand the others waiting on `ready`.
        yield* open(key, entry).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit)
              ? Deferred.succeed(entry.ready, exit.value)
              : Effect.suspend(() => {
                const error = failureOf(exit.cause)
                return Effect.logWarning(`bridge: ${error.message}`).pipe(
                  Effect.andThen(Deferred.fail(entry.ready, error)),
                  Effect.andThen(close(key, entry))
                )
              })
          ),
          Effect.forkIn(bridgeScope, { startImmediately: true })
        )
        return yield* Deferred.await(entry.ready)
      })
    })

  const forwardRequest = (request: JsonRpc.JsonRpcRequest, ctx: HandlerContext): Effect.Effect<JsonRpc.JsonRpcResponse> =>
    upstreamFor(ctx.sessionId ?? SHARED, request.method === "initialize").pipe(
      Effect.flatMap((up) => {
        const token = UpstreamRouting.progressTokenOf(request.params)
        up.running.add(ctx)
        if (token !== undefined) up.progress.set(token, ctx)
        return up.transport.request(request.method, request.params, { timeout: requestTimeout }).pipe(
          Effect.tap((result) => {
            const version = (result as { protocolVersion?: unknown } | null)?.protocolVersion
            return request.method === "initialize" && typeof version === "string"
              ? up.transport.setProtocolVersion(version)
              : Effect.void
          }),
          // Progress routing runs in its own fiber: let it pass on what came before the result.
          token === undefined ? (x) => x : Effect.tap(() => Effect.yieldNow),
          Effect.ensuring(Effect.sync(() => {
            up.running.delete(ctx)
            if (token !== undefined && up.progress.get(token) === ctx) up.progress.delete(token)
          }))
        )
      }),
      Effect.match({
        onSuccess: (result) => JsonRpc.success(request.id, result),
        onFailure: (error) => {
          const rpc = toRpcError(error)
          return JsonRpc.failure(request.id, rpc.code, rpc.rpcMessage, rpc.data)
        }
      })
    )

  const forwardNotification = (n: JsonRpc.JsonRpcNotification, ctx: HandlerContext): Effect.Effect<null> =>
    // The engine has interrupted the cancelled request, which cancels it upstream under the upstream's id.
    n.method === "notifications/cancelled"
      ? Effect.succeed(null)
      : upstreamFor(ctx.sessionId ?? SHARED, false).pipe(
        Effect.flatMap((up) => {
          // A notification's context is the session's own (not tied to a request).
          up.session = ctx
          return up.transport.notify(n.method, n.params)
        }),
        Effect.catchCause((cause) =>
          Effect.logDebug(`bridge: could not forward ${n.method} upstream`, Cause.squash(cause))
        ),
        Effect.as(null)
      )

  const endSession = (sessionId: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      const entry = entries.get(sessionId)
      // A session admitted but never connected holds a slot all the same.
      if (entry === undefined) slots.release(sessionId)
      return entry === undefined ? Effect.void : close(sessionId, entry)
    })

  // An HTTP session's upstream goes with it; the shared upstream (no session id) outlives connections.
  const handler: Handler = Object.assign(
    (message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification, ctx: HandlerContext) =>
      "id" in message ? forwardRequest(message, ctx) : forwardNotification(message, ctx),
    {
      sessionEnded: (sessionId: string | undefined) => sessionId === undefined ? Effect.void : endSession(sessionId),
      admitSession: (sessionId: string) => Effect.tap(Effect.sync(() => slots.admit(sessionId)), Metrics.bridgeAdmission)
    }
  )

  // Requests of the stateless era (no session, the era's `_meta`) go through the router to an upstream of their own.
  return yield* EraRouter.make({
    handler,
    endSession,
    upstream: (sessionId) => Effect.map(upstreamFor(sessionId ?? SHARED, false), (up) => up.transport),
    upstreams: Effect.sync(() => entries.size)
  }, { ...options, convert: options.front !== "passthrough" })
})

/**
 * The bridge as a service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <E, R>(options: BridgeOptions<E, R>): Layer.Layer<Bridge, never, Exclude<R, Scope.Scope>> =>
  Layer.effect(Bridge, make(options))

// ---------------------------------------------------------------------------
// Ready-made servers

/**
 * A complete Streamable HTTP server (and legacy SSE endpoints) in front of
 * the upstream: `HttpServerTransport.layer` with the bridge's handler, each
 * HTTP session with its own upstream, closed when the session ends.
 * Defaults are the transport's: 127.0.0.1:8421, path `/mcp`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerHttp = <E, R>(
  options: BridgeOptions<E, R>,
  http?: HttpServerTransport.Options
): Layer.Layer<
  Bridge | HttpServerTransport.HttpServerTransport | HttpServer.HttpServer,
  ServeError,
  Exclude<R, Scope.Scope>
> =>
  Layer.unwrap(Effect.map(Bridge, (bridge) =>
    HttpServerTransport.layer(bridge.handler, http))).pipe(Layer.provideMerge(layer(options)))

/**
 * When an upstream is of no more use to a stdio client: closed, or its HTTP
 * session expired (a stdio client does not start a new session; restarting
 * the bridge does).
 */
const upstreamEnded = (upstream: ClientTransportShape): Effect.Effect<TransportClosed> =>
  SubscriptionRef.changes(upstream.state).pipe(
    Stream.filterMap((state) =>
      state._tag === "Closed"
        ? Result.succeed(state.error)
        : state._tag === "SessionExpired"
        ? Result.succeed(new TransportClosed({ reason: `upstream session ${state.sessionId} expired` }))
        : Result.failVoid
    ),
    Stream.runHead,
    Effect.flatMap((first) => Option.isSome(first) ? Effect.succeed(first.value) : upstream.awaitClosed)
  )

/**
 * How a stdio bridge ended.
 *
 * @since 0.1.0
 * @category models
 */
export interface StdioBridgeEnd {
  /** `downstream`: stdin ended (or stdout failed); `upstream`: the upstream connection closed or its session expired. */
  readonly side: "downstream" | "upstream"
  readonly reason: TransportClosed
}

/**
 * Serves the upstream on this process's stdin/stdout until stdin ends or
 * the upstream closes: connects first (failing with `UpstreamUnavailable`
 * before reading a line), and when the upstream goes away the requests in
 * flight are answered with errors, written, and serving stops.
 *
 * @since 0.1.0
 * @category utils
 */
export const runStdio = <E, R>(
  options: BridgeOptions<E, R>,
  stdio?: StdioServerTransport.StdioServerOptions
): Effect.Effect<
  StdioBridgeEnd,
  UpstreamUnavailable | StdioServerTransport.StdioAlreadyServing,
  Exclude<R, Scope.Scope> | Stdio.Stdio
> =>
  Effect.scoped(Effect.gen(function*() {
    const bridge = yield* make(options)
    const upstream = yield* bridge.upstream()
    const server = yield* StdioServerTransport.make(bridge.handler, stdio)
    let upstreamClosed: TransportClosed | undefined
    // A pool replaces a connection that closed: serving goes on.
    if (options.front !== "stateless") {
      yield* upstreamEnded(upstream).pipe(
        Effect.flatMap((reason) => {
          upstreamClosed = reason
          return server.stop(reason)
        }),
        Effect.forkScoped
      )
    }
    const reason = yield* server.awaitDone
    return { side: reason === upstreamClosed ? "upstream" : "downstream", reason } satisfies StdioBridgeEnd
  }))
