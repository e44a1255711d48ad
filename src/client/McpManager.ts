/**
 * Many MCP servers behind one object: configuration decoding, concurrent
 * connection (each server with its own timeout, none blocking another),
 * one status stream per server, aggregated tools with collision-free names
 * and call routing, a tool cache for servers slow to start, and healing:
 * when a connection dies at run time the connect flow runs again on a
 * `Schedule` behind a circuit breaker.
 *
 * One supervisor fiber per server owns that server's connection
 * (manager/Supervisor.ts); this module decodes the configuration, starts and
 * stops the supervisors, and answers the API, routing tool calls by name
 * (manager/ToolRouting.ts). Its options, the default transport factory and
 * the defaults are manager/ManagerOptions.ts's. Calls in flight when a connection dies fail with
 * their typed error; nothing is replayed.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as McpSchema from "effect/ai/McpSchema"
import type * as Schema from "effect/Schema"
import type { HttpClient } from "effect/http"
import type { ChildProcessSpawner } from "effect/process"
import type { SpawnError } from "../McpError.ts"
import type * as McpClient from "./McpClient.ts"
import * as Config from "./manager/Config.ts"
import * as ManagedServer from "./manager/ManagedServer.ts"
import {
  DEFAULT_CONNECT_TIMEOUT,
  DEFAULT_SHUTDOWN_TIMEOUT,
  DEFAULT_SLOW_START_THRESHOLD,
  DEFAULT_STABLE_AFTER,
  defaultReconnectSchedule,
  fromConfigTransportWith,
  type McpManagerOptions,
  type TransportFactory
} from "./manager/ManagerOptions.ts"
import {
  ConnectFailed,
  ConnectTimeout,
  type LastError,
  ServerStatus,
  ServerUnavailable,
  UnknownServer,
  UnknownTool
} from "./manager/ServerStatus.ts"
import * as Supervisor from "./manager/Supervisor.ts"
import * as ToolCache from "./manager/ToolCache.ts"
import * as ToolRouting from "./manager/ToolRouting.ts"

/**
 * The `mcpServers` configuration document the manager reads: its entry
 * schemas, `decode` and `ConfigError`.
 *
 * @since 0.1.0
 * @category modules
 */
export { Config }
/**
 * Where the manager keeps each server's last good tool listing: `none`,
 * `memory()` or `file(path)`.
 *
 * @since 0.1.0
 * @category modules
 */
export { ToolCache }
export { ConnectFailed, ConnectTimeout, type LastError, ServerStatus, ServerUnavailable, UnknownServer, UnknownTool }
export {
  DEFAULT_CONNECT_TIMEOUT,
  DEFAULT_SHUTDOWN_TIMEOUT,
  DEFAULT_SLOW_START_THRESHOLD,
  DEFAULT_STABLE_AFTER,
  defaultReconnectSchedule,
  fromConfigTransport,
  fromConfigTransportWith,
  type McpManagerAuth,
  type McpManagerOptions,
  type TransportFactory
} from "./manager/ManagerOptions.ts"

// ---------------------------------------------------------------------------
// Shape

/**
 * One tool of one server: `name` is `<server><separator><tool>`, `cached`
 * while the server is not connected yet.
 *
 * @since 0.1.0
 * @category models
 */
export interface ManagedTool extends ToolRouting.RoutedTool {}

/**
 * What the manager reports on `events`: a server's session replaced after a
 * lost connection (`SessionChanged`), or its tool listing changed
 * (`ToolsChanged`).
 *
 * @since 0.1.0
 * @category models
 */
export type ManagerEvent = Data.TaggedEnum<{
  /** A new connection replaced a lost one; per-session setup (log level, subscriptions) was restored. */
  SessionChanged: {
    readonly server: string
    readonly generation: number
    /** What ended the previous one. */
    readonly reason: "transport-closed" | "session-expired" | "degraded" | "manual"
  }
  ToolsChanged: { readonly server: string; readonly count: number; readonly cached: boolean }
}>
/**
 * Constructors, `$is` and `$match` for `ManagerEvent`.
 *
 * @since 0.1.0
 * @category models
 */
export const ManagerEvent = Data.taggedEnum<ManagerEvent>()

/**
 * How a call through the manager fails: the client's own errors, or a name
 * that routes nowhere, or a server that cannot take calls.
 *
 * @since 0.1.0
 * @category errors
 */
export type CallError = McpClient.McpClientError | UnknownTool | UnknownServer | ServerUnavailable

/**
 * The manager's API: servers, their statuses, aggregated tools, routed calls
 * and each server's client.
 *
 * @since 0.1.0
 * @category models
 */
export interface McpManagerShape {
  /** Every configured server (including the ones whose entry was invalid), in document order. */
  readonly servers: ReadonlyArray<string>
  /** The server's status now, then each change. */
  readonly status: (server: string) => Stream.Stream<ServerStatus, UnknownServer>
  /** Every server's status now, by name. */
  readonly statuses: Effect.Effect<Readonly<Record<string, ServerStatus>>>
  /**
   * Session changes and tool listing changes of every server, from
   * subscription on. The stream subscribes when it is run: one forked just
   * before a change may miss it; `subscribeEvents` subscribes at once.
   */
  readonly events: Stream.Stream<ManagerEvent>
  /**
   * Subscribes now, in the caller's scope, and returns the events from this
   * moment on, however late the stream is run (up to 256 wait unread, the
   * oldest dropped first). The subscription ends with the scope or the manager.
   */
  readonly subscribeEvents: Effect.Effect<Stream.Stream<ManagerEvent>, never, Scope.Scope>
  /** Tools of every server: live for connected ones, cached for the ones still connecting. */
  readonly tools: Effect.Effect<ReadonlyArray<ManagedTool>>
  /** Routes `<server><separator><tool>` to its server. */
  /** With `failure`, a tool error carrying that Schema's JSON fails with the decoded value (see `McpClient.callTool`). */
  readonly callTool: <F extends Schema.Top = never>(
    name: string,
    args?: Readonly<Record<string, unknown>>,
    options?: McpClient.CallToolOptions<F>
  ) => Effect.Effect<McpSchema.CallToolResult, CallError | F["Type"], F["DecodingServices"]>
  /** The server's current client, waiting for it to be ready if it is on its way. */
  readonly client: (server: string) => Effect.Effect<McpClient.McpClientShape, UnknownServer | ServerUnavailable>
  /** Sets the server's log level and remembers it for later sessions. */
  readonly setLoggingLevel: (server: string, level: McpSchema.LoggingLevel) => Effect.Effect<void, CallError>
  /** Subscribes to a resource and re-subscribes in later sessions. */
  readonly subscribeResource: (server: string, uri: string) => Effect.Effect<void, CallError>
  /** Unsubscribes from a resource, in this and later sessions. */
  readonly unsubscribeResource: (server: string, uri: string) => Effect.Effect<void, CallError>
  /** Drops the current connection (if any) and connects again now, circuit breaker permitting. */
  readonly reconnect: (server: string) => Effect.Effect<void, UnknownServer>
}

/**
 * The manager as a service, provided by `layer`.
 *
 * @since 0.1.0
 * @category services
 */
export class McpManager extends Context.Service<McpManager, McpManagerShape>()("effect-mcp-transport/McpManager") {}

// ---------------------------------------------------------------------------
// Make

const millis = (input: Duration.Input): number => Duration.toMillis(Duration.fromInputUnsafe(input))

/**
 * Starts managing every configured server and returns once each has either
 * finished its first connect attempt or passed the slow-start threshold.
 * Closing the scope closes every server, in parallel.
 *
 * @example
 * ```ts
 * import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
 * import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
 * import * as Console from "effect/Console"
 * import * as Effect from "effect/Effect"
 * import * as McpManager from "effect-mcp-transport/client/McpManager"
 * import * as NodeSpawner from "effect-mcp-transport/client/NodeSpawner"
 *
 * const config = {
 *   mcpServers: {
 *     files: { command: "npx", args: ["-y", "some-mcp-server"] },
 *     remote: { type: "http", url: "https://mcp.example.com/mcp" }
 *   }
 * }
 *
 * const program = Effect.gen(function*() {
 *   const manager = yield* McpManager.make({ config, toolCache: McpManager.ToolCache.memory() })
 *   const tools = yield* manager.tools // named <server>__<tool>
 *   yield* Console.log(tools.map((tool) => tool.name))
 *   const result = yield* manager.callTool("files__read", { path: "README.md" })
 *   yield* Console.log(result.content)
 * })
 *
 * // The default transports spawn processes and speak HTTP: both services are needed.
 * program.pipe(Effect.scoped, Effect.provide([NodeSpawner.layer, NodeHttpClient.layerUndici]), NodeRuntime.runMain)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <E = SpawnError, R = ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient>(
  options: McpManagerOptions<E, R>
): Effect.Effect<McpManagerShape, Config.ConfigError, R | Scope.Scope> =>
  Effect.gen(function*() {
    const decoded = yield* Config.decode(options.config)
    const separator = options.toolSeparator ?? "__"
    const cache = options.toolCache ?? ToolCache.none
    const defaultConnectTimeoutMs = millis(options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT)
    const callWaitMs = options.callWaitTimeout === undefined ? undefined : millis(options.callWaitTimeout)
    const events = yield* PubSub.sliding<ManagerEvent>(256)
    yield* Effect.addFinalizer(() => PubSub.shutdown(events))

    // --- servers (invalid entries are kept, as Failed, so the application sees them)
    const servers = new Map<string, ManagedServer.ManagedServer>()
    const addServer = (name: string, config: Config.ServerConfig | undefined, initial: ServerStatus) =>
      Effect.map(
        ManagedServer.make({ name, config, initial, defaultConnectTimeoutMs, callWaitMs }),
        (server) => void servers.set(name, server)
      )
    for (const { config, name } of decoded.servers) {
      if (!ToolRouting.canPrefix(name, separator)) {
        const error = new Config.ConfigError({ server: name, reason: `server names must not contain "${separator}"` })
        yield* addServer(name, undefined, ServerStatus.Failed({ lastError: error }))
      } else {
        yield* addServer(name, config, ServerStatus.Connecting({ attempt: 0, lastError: undefined }))
      }
    }
    for (const invalid of decoded.invalid) {
      yield* addServer(invalid.server ?? "?", undefined, ServerStatus.Failed({ lastError: invalid }))
    }

    // Cached listings stand in until the live ones arrive.
    yield* Effect.forEach(servers.values(), (server) =>
      server.config === undefined ? Effect.void : Effect.map(cache.load(server.name), (cached) => {
        if (Option.isSome(cached) && server.live === undefined) {
          server.tools = cached.value.tools
          server.toolsCached = true
        }
      }), { concurrency: "unbounded", discard: true })

    // --- start every supervisor
    const supervision: Supervisor.SupervisorOptions<R> = {
      // Without a factory the defaults of the type parameters (fromConfig's requirements) apply; the
      // manager's own factory keeps its entries' OAuth providers to itself.
      transport: (options.transport ?? fromConfigTransportWith(options.auth)) as TransportFactory<E, R>,
      services: yield* Effect.context<R>(),
      client: options.client ?? {},
      reconnectSchedule: options.reconnectSchedule ?? defaultReconnectSchedule,
      circuitBreaker: options.circuitBreaker,
      stableAfterMs: millis(options.stableAfter ?? DEFAULT_STABLE_AFTER),
      onTools: (server, tools) =>
        Effect.gen(function*() {
          yield* PubSub.publish(events, ManagerEvent.ToolsChanged({ server: server.name, count: tools.length, cached: false }))
          yield* cache.save(server.name, tools)
        }),
      onSessionChanged: (server, generation, reason) =>
        Effect.asVoid(PubSub.publish(events, ManagerEvent.SessionChanged({ server, generation, reason })))
    }
    const supervisors = yield* FiberSet.make()
    for (const server of servers.values()) {
      yield* FiberSet.run(supervisors, Supervisor.supervise(server, supervision), { startImmediately: true })
    }
    // Closing: every supervisor is interrupted at once (each closes its connection), then all are Closed.
    yield* Effect.addFinalizer(() =>
      FiberSet.clear(supervisors).pipe(
        Effect.timeoutOption(options.shutdownTimeout ?? DEFAULT_SHUTDOWN_TIMEOUT),
        Effect.flatMap((done) =>
          Option.isSome(done)
            ? Effect.void
            : Effect.logWarning("McpManager: servers still closing after the shutdown timeout; not waiting for them")
        ),
        Effect.andThen(Effect.forEach(servers.values(), (s) => ManagedServer.setStatus(s, ServerStatus.Closed()), { discard: true }))
      )
    )

    // --- slow start: wait for first outcomes, up to the threshold
    const firstOutcome = (server: ManagedServer.ManagedServer) =>
      SubscriptionRef.changes(server.status).pipe(
        Stream.filter((s) => !(s._tag === "Connecting")),
        Stream.runHead
      )
    yield* Effect.forEach(servers.values(), firstOutcome, { concurrency: "unbounded", discard: true }).pipe(
      Effect.timeoutOption(options.slowStartThreshold ?? DEFAULT_SLOW_START_THRESHOLD)
    )

    // --- the API
    const serverOf = (name: string): Effect.Effect<ManagedServer.ManagedServer, UnknownServer> =>
      Effect.suspend(() => {
        const server = servers.get(name)
        return server === undefined ? Effect.fail(new UnknownServer({ server: name })) : Effect.succeed(server)
      })

    /** Runs a call; a session the server forgot wakes the supervisor (the call itself is not replayed). */
    const withClient = <A>(
      name: string,
      f: (client: McpClient.McpClientShape) => Effect.Effect<A, McpClient.McpClientError>
    ): Effect.Effect<A, CallError> => Effect.flatMap(serverOf(name), (server) => ManagedServer.callWith(server, f))

    const shape: McpManagerShape = {
      servers: Array.from(servers.keys()),
      status: (name) => Stream.unwrap(Effect.map(serverOf(name), (s) => SubscriptionRef.changes(s.status))),
      statuses: Effect.gen(function*() {
        const out: Record<string, ServerStatus> = {}
        for (const [name, server] of servers) out[name] = yield* SubscriptionRef.get(server.status)
        return out
      }),
      events: Stream.fromPubSub(events),
      subscribeEvents: Effect.map(PubSub.subscribe(events), Stream.fromSubscription),
      tools: Effect.sync(() => ToolRouting.aggregate(servers.values(), separator)),
      callTool: <F extends Schema.Top = never>(
        name: string,
        args?: Readonly<Record<string, unknown>>,
        callOptions?: McpClient.CallToolOptions<F>
      ) => {
        const target = ToolRouting.route(name, separator, servers)
        if (target === undefined) return Effect.fail(new UnknownTool({ name }))
        const { failure, ...options } = callOptions ?? {}
        // Decoded outside the server's health accounting: a declared failure is an answer, not an outage.
        const call = withClient(target.server, (client) =>
          client.callTool(args === undefined ? { name: target.tool } : { name: target.tool, arguments: args }, options))
        return failure === undefined
          ? call
          : Effect.flatMap(Effect.promise(() => import("./ToolFailure.ts")), (ToolFailure) => ToolFailure.decode(failure)(call))
      },
      client: (name) => Effect.flatMap(serverOf(name), ManagedServer.readyClient),
      setLoggingLevel: (name, level) =>
        withClient(name, (client) => client.setLoggingLevel(level)).pipe(
          Effect.tap(() => Effect.sync(() => void (servers.get(name)!.logLevel = level)))
        ),
      subscribeResource: (name, uri) =>
        withClient(name, (client) => client.subscribeResource(uri)).pipe(
          Effect.tap(() => Effect.sync(() => void servers.get(name)!.subscriptions.add(uri)))
        ),
      unsubscribeResource: (name, uri) =>
        withClient(name, (client) => client.unsubscribeResource(uri)).pipe(
          Effect.tap(() => Effect.sync(() => void servers.get(name)!.subscriptions.delete(uri)))
        ),
      reconnect: (name) => Effect.flatMap(serverOf(name), ManagedServer.requestReconnect)
    }
    return shape
  })

/**
 * The manager as a layer; every server closes with the layer.
 *
 * @example
 * ```ts
 * import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
 * import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
 * import * as Console from "effect/Console"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 * import * as Stream from "effect/Stream"
 * import * as McpManager from "effect-mcp-transport/client/McpManager"
 * import * as NodeSpawner from "effect-mcp-transport/client/NodeSpawner"
 *
 * const ManagerLive = McpManager.layer({
 *   config: { mcpServers: { files: { command: "npx", args: ["-y", "some-mcp-server"] } } },
 *   connectTimeout: "10 seconds"
 * }).pipe(Layer.provide([NodeSpawner.layer, NodeHttpClient.layerUndici]))
 *
 * // Prints every status of the server as it changes, until interrupted.
 * const program = Effect.gen(function*() {
 *   const manager = yield* McpManager.McpManager
 *   yield* manager.status("files").pipe(Stream.runForEach((status) => Console.log(status._tag)))
 * })
 *
 * program.pipe(Effect.provide(ManagerLive), NodeRuntime.runMain)
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <E = SpawnError, R = ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient>(
  options: McpManagerOptions<E, R>
): Layer.Layer<McpManager, Config.ConfigError, R> =>
  Layer.effect(McpManager, make(options))

