/**
 * Mounts one MCP `Handler` over HTTP: Streamable HTTP (2025-03-26 …
 * 2025-11-25) with sessions and resumable SSE streams, the legacy 2024-11-05
 * HTTP+SSE endpoints, and the plain `/mcp` surface (JSON POST without a session,
 * broadcast events, health), behind Host/Origin checks, an optional
 * authentication hook, CORS and limits.
 *
 * `routes` registers everything on the `HttpRouter` of an existing
 * `effect/http` application; `layer` is a complete server on
 * `@effect/platform-node` (127.0.0.1:8421 unless told otherwise).
 */
import { createServer, type Server } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import type { ServeError } from "effect/http/HttpServerError"
import * as NetAddress from "effect/net/NetAddress"
import type { RedisError } from "effect/persistence/Redis"
import { Availability } from "./Availability.ts"
import { Bus } from "./Bus.ts"
import { EventStore, type EventStoreShape, makeMemory } from "./EventStore.ts"
import { Inbox, randomInstanceId } from "./Inbox.ts"
import { InFlight } from "./InFlight.ts"
import { SessionRegistry } from "./SessionRegistry.ts"
import type { Handler, HandlerContext } from "./Handler.ts"
import * as Authorization from "./http/Authorization.ts"
import { type Options, type Resolved, resolve } from "./http/Config.ts"
import { type Env, guard, handler as routeHandler, preflight } from "./http/Guard.ts"
import * as LegacySse from "./http/LegacySse.ts"
import * as MetricsEndpoint from "./http/MetricsEndpoint.ts"
import * as Metrics from "../observability/Metrics.ts"
import * as Drain from "./http/Drain.ts"
import * as EventsAndHealth from "./http/EventsAndHealth.ts"
import * as Security from "./http/Security.ts"
import * as SendWatch from "./http/SendWatch.ts"
import * as Sessions from "./http/Sessions.ts"
import * as SharedSessions from "./http/SharedSessions.ts"
import * as MiddlewareChain from "./internal/MiddlewareChain.ts"
import * as StreamableHttp from "./http/StreamableHttp.ts"
import type { Options as RedisFleetOptions } from "./RedisFleet.ts"

export type { Options } from "./http/Config.ts"
export { defaults } from "./http/Config.ts"
export { type Authenticate, type Principal, Unauthorized } from "./http/Security.ts"

/**
 * What the transport holds right now: sessions, open streams and slots,
 * running handlers, stored and buffered events, broadcast listeners.
 *
 * @since 0.1.0
 * @category models
 */
export interface Stats extends Sessions.Stats {
  /** Open `GET /mcp/events` listeners. */
  readonly broadcastListeners: number
  /** Broadcast listeners dropped so far because they fell too far behind. */
  readonly broadcastDropped: number
  /**
   * Connections cut so far because their client took none of the bytes
   * waiting for it (`sendTimeout`, or a quarter of it past
   * `maxBufferedBytesPerStream`).
   */
  readonly connectionsCut: number
  /** Bytes Node holds right now for the connections carrying answers that their sockets have not taken. */
  readonly unsentBytes: number
}

/**
 * The running transport: its address, broadcast to event listeners, the
 * open sessions and a context to reach each, and shutdown.
 *
 * @since 0.1.0
 * @category models
 */
export interface HttpServerTransportShape {
  /** The bound address, when the server is known (always with `layer`). */
  readonly address: Option.Option<{ readonly host: string; readonly port: number }>
  /** The Streamable HTTP endpoint URL, e.g. `http://127.0.0.1:8421/mcp`. */
  readonly url: Option.Option<string>
  /** Broadcast: an `event:`/`data:` frame to every `GET /mcp/events` listener. Returns the event id. */
  readonly broadcast: (event: string, data?: unknown) => Effect.Effect<string>
  /** Ids of the open Streamable HTTP sessions. */
  readonly sessionIds: Effect.Effect<ReadonlyArray<string>>
  /** A context for server-initiated traffic on a session (notifications, requests to the client). */
  readonly sessionContext: (sessionId: string) => Effect.Effect<Option.Option<HandlerContext>>
  /** Ends a session as a DELETE would. False when there is no such session. */
  readonly closeSession: (sessionId: string) => Effect.Effect<boolean>
  /**
   * Shuts down gracefully (runs on scope close anyway): new requests get 503
   * with `Retry-After`, GET and broadcast streams end, requests running
   * finish within `shutdownGracePeriod` (then they are interrupted), and
   * every session ends here. The listener stays up, answering 503.
   */
  readonly shutdown: Effect.Effect<void>
  /** What is alive right now: sessions, open streams, running handlers, stored events. */
  readonly stats: Effect.Effect<Stats>
}

/**
 * The transport as a service, provided by `layer` and `routes`.
 *
 * @since 0.1.0
 * @category services
 */
export class HttpServerTransport extends Context.Service<HttpServerTransport, HttpServerTransportShape>()(
  "effect-mcp-transport/HttpServerTransport"
) {}

const boundAddress = Effect.map(Effect.serviceOption(HttpServer.HttpServer), (server) =>
  Option.flatMap(server, (s) => {
    const a = s.address
    if (!NetAddress.isInetAddress(a)) return Option.none()
    return Option.some({ host: NetAddress.formatIp(a.address), port: a.port })
  }))

const urlHost = (host: string) => {
  if (host === "0.0.0.0" || host === "::") return "127.0.0.1"
  return host.includes(":") ? `[${host}]` : host
}

const endpointUrl = (address: Option.Option<{ readonly host: string; readonly port: number }>, path: string) =>
  Option.map(address, (a) => `http://${urlHost(a.host)}:${a.port}${path}`)

/** The `authorization` option's hook and routes; its resource defaults to the transport's own URL. */
const authorizationFor = (
  options: Options | undefined,
  config: Resolved,
  address: Option.Option<{ readonly host: string; readonly port: number }>
): Authorization.Authorization | undefined => {
  const auth = options?.authorization
  if (auth === undefined) return undefined
  const resource = auth.resource ?? Option.getOrUndefined(endpointUrl(address, config.path))
  if (resource === undefined) {
    throw new Error("HTTP server transport: `authorization.resource` is required when the server's address is unknown")
  }
  return Authorization.make(auth, resource, config.path)
}

const makeResolved = Effect.fnUntraced(function*<R>(
  handler: Handler<R>,
  resolved: Resolved,
  options: Options | undefined
): Effect.fn.Return<HttpServerTransportShape, never, HttpRouter.HttpRouter | R | Scope.Scope> {
  const router = yield* HttpRouter.HttpRouter
  const services = Metrics.servicesOf(yield* Effect.context<R>(), "tcp", resolved.metricsPath !== undefined)
  const store: EventStoreShape = options?.eventStore ??
    Option.getOrUndefined(yield* Effect.serviceOption(EventStore)) ??
    (yield* makeMemory())
  const address = yield* boundAddress
  const authorization = authorizationFor(options, resolved, address)
  const config: Resolved = authorization === undefined ? resolved : { ...resolved, authenticate: authorization.authenticate }
  const lists = Security.defaultAllowLists(Option.getOrUndefined(address), {
    allowedHosts: options?.allowedHosts,
    allowedOrigins: options?.allowedOrigins
  })
  const availability = Option.getOrUndefined(yield* Effect.serviceOption(Availability))
  const drain = Drain.make()
  const registry = config.stateful ? Option.getOrUndefined(yield* Effect.serviceOption(SessionRegistry)) : undefined
  const inbox = registry === undefined ? undefined : Option.getOrUndefined(yield* Effect.serviceOption(Inbox))
  const bus = Option.getOrUndefined(yield* Effect.serviceOption(Bus))
  const sessions = yield* Sessions.make({
    handler: handler as Handler<never>,
    services: services as Context.Context<never>,
    store,
    maxSessions: config.maxSessions,
    maxSessionsPerPrincipal: config.maxSessionsPerPrincipal,
    handshakeTimeoutMs: config.handshakeTimeoutMs,
    maxStreams: config.maxStreams,
    maxStreamsPerPrincipal: config.maxStreamsPerPrincipal,
    maxStreamsPerSession: config.maxStreamsPerSession,
    idleTimeoutMs: config.idleTimeoutMs,
    standaloneBuffer: config.standaloneBuffer,
    maxBufferedBytes: config.maxBufferedBytesPerStream,
    requestTimeoutMs: config.clientRequestTimeoutMs,
    keepAliveMs: config.keepAliveMs,
    onSessionEnd: options?.onSessionEnd,
    namesPrincipal: config.authenticate !== undefined,
    sharedLog: availability !== undefined,
    // Requests to clients name the instance asking, so that an answer through another instance finds it.
    idPrefix: inbox === undefined ? undefined : `${inbox.instanceId}:`
  })
  const shared = registry === undefined ? undefined : yield* SharedSessions.make({
    registry,
    inbox,
    bus,
    availability,
    idleTimeoutMs: config.idleTimeoutMs,
    instanceId: inbox?.instanceId ?? randomInstanceId()
  }, sessions)
  // Reported where the transport's services turn metrics on (its scrape endpoint, or the application's layer).
  yield* Metrics.observeStreams(MetricsEndpoint.streamLoad(sessions.list)).pipe(
    Effect.provideService(Metrics.Enabled, Context.get(services, Metrics.Enabled))
  )
  const hub = yield* EventsAndHealth.makeBroadcast(store, {
    buffer: config.broadcastBuffer,
    maxBufferedBytes: config.maxBufferedBytesPerStream,
    keepAliveMs: config.keepAliveMs,
    bus
  })
  const sendWatch = yield* SendWatch.make({
    sendTimeoutMs: config.sendTimeoutMs,
    maxBufferedBytes: config.maxBufferedBytesPerStream
  })
  const env: Env = {
    config,
    sessions,
    store,
    lists,
    handler: handler as Handler<never>,
    services: services as Context.Context<never>,
    observed: MiddlewareChain.observedIn(services as Context.Context<never>),
    sendWatch,
    authorize: authorization?.authorize,
    availability,
    drain,
    shared,
    inFlight: Option.getOrUndefined(yield* Effect.serviceOption(InFlight))
  }
  const authed = (f: Parameters<typeof guard>[2]) => routeHandler(guard(env, { auth: true }, f))
  // Monitoring probes and scrapers carry no credentials; Host and Origin are still checked.
  const open = (f: Parameters<typeof guard>[2]) => routeHandler(guard(env, { auth: false }, f))
  const preflighted = routeHandler(preflight(env))

  yield* router.add("POST", config.path, authed(StreamableHttp.post(env)))
  yield* router.add("GET", config.path, authed(StreamableHttp.get(env)))
  yield* router.add("DELETE", config.path, authed(StreamableHttp.del(env)))
  yield* router.add("OPTIONS", config.path, preflighted)
  const ownPaths: Array<string> = [config.path]
  if (config.eventsAndHealth) {
    yield* router.add("GET", config.eventsPath, authed(EventsAndHealth.events(env, hub)))
    yield* router.add("OPTIONS", config.eventsPath, preflighted)
    yield* router.add("GET", config.healthPath, open(EventsAndHealth.health(env)))
    ownPaths.push(config.eventsPath, config.healthPath)
  }
  if (config.metricsPath !== undefined) {
    yield* router.add("GET", config.metricsPath, open(MetricsEndpoint.scrape(config.metricsFormat)))
    ownPaths.push(config.metricsPath)
  }
  if (config.legacySse) {
    yield* router.add("GET", config.legacySsePath, authed(LegacySse.open(env)))
    yield* router.add("POST", config.legacyMessagesPath, authed(LegacySse.message(env)))
    yield* router.add("OPTIONS", config.legacySsePath, preflighted)
    yield* router.add("OPTIONS", config.legacyMessagesPath, preflighted)
    ownPaths.push(config.legacySsePath, config.legacyMessagesPath)
  }
  if (authorization !== undefined) {
    for (const path of authorization.metadataPaths) {
      yield* router.add("GET", path, routeHandler(authorization.metadata))
      yield* router.add("OPTIONS", path, routeHandler(authorization.metadataPreflight))
      ownPaths.push(path)
    }
  }
  if (config.notFound) yield* router.add("*", "*", routeHandler(EventsAndHealth.notFound(env, ownPaths)))

  const shutdown = yield* Effect.cached(drainThenEnd(env, hub, handler as Handler<never>))
  yield* Effect.addFinalizer(() => shutdown)

  return {
    address,
    url: endpointUrl(address, config.path),
    broadcast: (event, data) => hub.broadcast(event, data),
    sessionIds: Effect.sync(() =>
      sessions.list().flatMap((s) => s.kind === "streamable" && s.id !== undefined ? [s.id] : [])
    ),
    sessionContext: (id) =>
      Effect.sync(() => Option.map(Option.fromNullishOr(sessions.get(id)), (s) => s.server.context)),
    closeSession: (id) =>
      Effect.suspend(() => {
        const s = sessions.get(id)
        if (s === undefined) return Effect.succeed(false)
        return shared === undefined ? Effect.as(sessions.close(s), true) : SharedSessions.end(shared, sessions, s)
      }),
    shutdown,
    stats: Effect.map(sessions.stats, (s) => ({
      ...s,
      broadcastListeners: hub.listeners(),
      broadcastDropped: hub.dropped(),
      connectionsCut: sendWatch.cut(),
      unsentBytes: sendWatch.unsentBytes()
    }))
  } satisfies HttpServerTransportShape
})

/**
 * Shutdown, in order:
 * 1. draining: every new MCP request gets 503 + `Retry-After` +
 *    `Connection: close`, the health endpoint says `draining`;
 * 2. the streams nothing here waits on end now, so their clients reconnect
 *    to another instance: each session's GET stream (its connection only:
 *    later messages stay in the log, resumable with `Last-Event-ID`), the
 *    broadcast listeners, and the handler's long-lived requests (an open
 *    `subscriptions/listen` ends with its final reply);
 * 3. the requests already running finish, their answers and POST streams
 *    with them, for up to `shutdownGracePeriod`;
 * 4. whatever still runs is interrupted and the sessions end here (with a
 *    shared event log their streams stay in it); the streams' responses end,
 *    waited for briefly so the listener finds the connections idle.
 * The listener itself closes after this (`layer`), and services provided
 * below the transport (the Redis connection, an instance lease) after that.
 */
const drainThenEnd = (env: Env, hub: EventsAndHealth.Broadcast, handler: Handler<never>) =>
  Effect.gen(function*() {
    const { sessions } = env
    env.drain?.start()
    for (const session of sessions.list()) {
      if (session.kind === "streamable" && !session.closed) yield* session.standalone.closeConnection
    }
    yield* hub.closeAll
    if (handler.shutdown !== undefined) yield* handler.shutdown
    const grace = env.config.shutdownGracePeriodMs
    const finished = grace > 0 && Option.isSome(yield* Effect.timeoutOption(sessions.awaitIdle, grace))
    if (!finished && (yield* sessions.stats).work + (yield* sessions.stats).statelessRequests > 0) {
      yield* Effect.logWarning(`HTTP server transport: requests still running ${grace} ms into shutdown; interrupting them`)
    }
    yield* sessions.closeAll
    yield* Effect.timeoutOption(sessions.awaitNoStreams, "2 seconds")
  })

/**
 * Registers the transport's routes on the `HttpRouter` in context and
 * returns its service. The handler runs with the services present here.
 * Sessions and streams end when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <R>(
  handler: Handler<R>,
  options?: Options
): Effect.Effect<HttpServerTransportShape, never, HttpRouter.HttpRouter | R | Scope.Scope> =>
  makeResolved(handler, resolve(options, false), options)

/**
 * The routes as a layer for an existing `effect/http` application (no
 * catch-all 404 unless `notFound: true`).
 *
 * @example
 * ```ts
 * import { createServer } from "node:http"
 * import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
 * import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 * import * as HttpRouter from "effect/http/HttpRouter"
 * import * as HttpServerResponse from "effect/http/HttpServerResponse"
 * import * as JsonRpc from "effect-mcp-transport/JsonRpc"
 * import type { Handler } from "effect-mcp-transport/server/Handler"
 * import * as HttpServerTransport from "effect-mcp-transport/server/HttpServerTransport"
 *
 * // Answers every request "method not found"; McpServer.toHandler builds a real one.
 * const handler: Handler = (message) =>
 *   Effect.succeed("id" in message ? JsonRpc.methodNotFound(message.id, message.method) : null)
 *
 * // MCP at /mcp, next to the application's own routes.
 * const App = Layer.mergeAll(
 *   HttpRouter.add("GET", "/status", HttpServerResponse.text("ok")),
 *   HttpServerTransport.routes(handler, { path: "/mcp" })
 * )
 *
 * HttpRouter.serve(App).pipe(
 *   Layer.provide(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 8421 })),
 *   Layer.launch,
 *   NodeRuntime.runMain
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const routes = <R>(
  handler: Handler<R>,
  options?: Options
): Layer.Layer<HttpServerTransport, never, HttpRouter.HttpRouter | R> =>
  Layer.effect(HttpServerTransport)(make(handler, options))

/**
 * Stops listening, lets the responses still being written finish (up to 2
 * seconds), and closes the connections left: idle keep-alive sockets at
 * once and as they become idle, then any other (a client that went away
 * mid-stream), so the listener does not wait for them to time out.
 */
const closeListener = (server: Server): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    if (!server.listening) return resume(Effect.void)
    const idle = setInterval(() => server.closeIdleConnections(), 50)
    server.close(() => {
      clearInterval(idle)
      resume(Effect.void)
    })
    return Effect.sync(() => clearInterval(idle))
  }).pipe(
    Effect.timeoutOption("2 seconds"),
    Effect.ensuring(Effect.sync(() => server.closeAllConnections())),
    Effect.asVoid
  )

/**
 * A complete server: the routes on a Node HTTP server bound to
 * `options.host` (default 127.0.0.1) and `options.port` (default 8421; 0 for
 * any free port, read it back from `HttpServerTransport.address`). Closing
 * the layer ends every session and stream before the listener closes.
 *
 * @example
 * ```ts
 * import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 * import * as Schema from "effect/Schema"
 * import * as HttpServerTransport from "effect-mcp-transport/server/HttpServerTransport"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 *
 * const GreetCall = Schema.Struct({ name: Schema.Literal("greet"), arguments: Schema.Struct({ who: Schema.String }) })
 *
 * const server = McpServer.make({ serverInfo: { name: "greeter", version: "1.0.0" } }).pipe(
 *   McpServer.method("tools/list", {}, () =>
 *     Effect.succeed({
 *       tools: [{ name: "greet", inputSchema: { type: "object", properties: { who: { type: "string" } }, required: ["who"] } }]
 *     })),
 *   McpServer.method("tools/call", { params: GreetCall }, ({ arguments: { who } }) =>
 *     Effect.succeed({ content: [{ type: "text", text: `Hello, ${who}!` }] }))
 * )
 *
 * // One handle serves every session; a session's state goes when the transport ends it.
 * const ServerLive = Layer.unwrap(Effect.gen(function*() {
 *   const handle = yield* McpServer.toHandler(server)
 *   return HttpServerTransport.layer(handle.handler, { port: 8421 })
 * }))
 *
 * Layer.launch(ServerLive).pipe(NodeRuntime.runMain)
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <R>(
  handler: Handler<R>,
  options?: Options
): Layer.Layer<HttpServerTransport | HttpServer.HttpServer, ServeError, R> => {
  const config = resolve(options, true)
  const app = Layer.effect(HttpServerTransport)(makeResolved(handler, config, options))
  const served = HttpRouter.serve(app, { disableLogger: true, disableListenLog: true })
  return Layer.unwrap(Effect.sync(() => {
    const server = createServer({
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: config.connectionsCheckingIntervalMs,
      keepAliveTimeout: config.keepAliveTimeoutMs
    })
    server.maxConnections = config.maxConnections
    // Built last, so it is finalized first: the transport drains (its
    // listener answering 503 meanwhile), then the listener closes.
    const endStreamsFirst = Layer.effectDiscard(
      Effect.flatMap(HttpServerTransport, (t) => Effect.addFinalizer(() => Effect.andThen(t.shutdown, closeListener(server))))
    )
    return Layer.provideMerge(endStreamsFirst, served).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => server, { host: config.host, port: config.port }))
    )
  })) as Layer.Layer<HttpServerTransport | HttpServer.HttpServer, ServeError, R>
}

/**
 * `layer` for one instance of a fleet: the event log, the bus for
 * broadcasts and the availability check on the Redis `redis.url` names
 * (`RedisFleet.layer`). Loaded on demand: a server without Redis never
 * loads the Redis client. For an `McpServer`, provide `RedisFleet.layer`
 * to `McpServer.layerHttp` instead, so that its `notifyAll` uses the same
 * bus (see docs/scale-out.md).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerRedis = <R>(
  handler: Handler<R>,
  options: Options & { readonly redis: RedisFleetOptions }
): Layer.Layer<HttpServerTransport | HttpServer.HttpServer, ServeError | RedisError, R> =>
  Layer.unwrap(Effect.map(
    Effect.promise(() => import("./RedisFleet.ts")),
    (RedisFleet) => layer(handler, options).pipe(Layer.provide(RedisFleet.layer(options.redis)))
  ))
