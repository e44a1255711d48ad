/**
 * Many MCP servers behind one object: configuration decoding, concurrent
 * connection (each server with its own timeout, none blocking another),
 * one status stream per server, aggregated tools with collision-free names
 * and call routing, a tool cache for servers slow to start, and healing:
 * when a connection dies at run time the connect flow runs again on a
 * `Schedule` behind a circuit breaker.
 *
 * One supervisor fiber per server owns that server's connection: it opens a
 * connection scope, runs the handshake, waits for the connection to be lost,
 * closes the scope, and only then opens the next one — so there is never
 * more than one live connection per server. Calls in flight when a
 * connection dies fail with their typed error; nothing is replayed.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Pull from "effect/Pull"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as McpSchema from "effect/ai/McpSchema"
import type { HttpClient } from "effect/http"
import type { ChildProcessSpawner } from "effect/process"
import type { SpawnError, TransportClosed } from "../McpError.ts"
import type { ClientTransportShape } from "./ClientTransport.ts"
import * as FromConfig from "./fromConfig.ts"
import * as McpClient from "./McpClient.ts"
import * as CircuitBreaker from "./manager/CircuitBreaker.ts"
import * as Config from "./manager/Config.ts"
import {
  ConnectFailed,
  ConnectTimeout,
  isTransient,
  type LastError,
  ServerStatus,
  ServerUnavailable,
  UnknownServer,
  UnknownTool
} from "./manager/ServerStatus.ts"
import * as ToolCache from "./manager/ToolCache.ts"

export { Config, ConnectFailed, ConnectTimeout, type LastError, ServerStatus, ServerUnavailable, ToolCache, UnknownServer, UnknownTool }

// ---------------------------------------------------------------------------
// Options

/** Opens the transport for one configured server, in the connection's scope. */
export type TransportFactory<E = unknown, R = never> = (
  server: string,
  config: Config.ServerConfig
) => Effect.Effect<ClientTransportShape, E, R | Scope.Scope>

/**
 * The default: `fromConfig` (stdio spawns the command; `http` is Streamable
 * HTTP with the standalone GET stream open; `sse` probes Streamable HTTP,
 * then falls back to legacy HTTP+SSE). An entry's `timeout` becomes the
 * transport's default request timeout.
 */
export const fromConfigTransport: TransportFactory<
  SpawnError,
  ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient
> = (_, config) => {
  if (Config.isStdio(config)) {
    return FromConfig.make({
      command: config.command,
      args: config.args,
      env: config.env,
      cwd: config.cwd,
      timeout: config.timeout
    })
  }
  return FromConfig.make({
    type: config.type,
    url: config.url,
    headers: config.headers,
    timeout: config.timeout,
    // Servers send list changes and logs outside requests on the standalone stream; it also
    // notices an expired session without waiting for a call.
    streamableHttp: { listen: true }
  })
}

export interface McpManagerOptions<E = unknown, R = never> {
  /** An `mcpServers` document, decoded here (see `Config`). */
  readonly config: unknown
  /** How an entry becomes a transport (default `fromConfigTransport`, which needs a ChildProcessSpawner and an HttpClient). */
  readonly transport?: TransportFactory<E, R> | undefined
  /** Options of every client (client info, server-request handlers, keep-alive…). */
  readonly client?: McpClient.McpClientOptions | undefined
  /** Per-server connect timeout, spawn to ready (default 30 s; a config entry's `connectTimeout` wins). */
  readonly connectTimeout?: Duration.Input | undefined
  /** How long `make` waits for servers before returning with cached tools for the slow ones (default 5 s). */
  readonly slowStartThreshold?: Duration.Input | undefined
  /** Delays between reconnect attempts (default: exponential from 500 ms, ×2, jittered, capped at 30 s, forever). */
  readonly reconnectSchedule?: Schedule.Schedule<unknown, unknown> | undefined
  readonly circuitBreaker?: CircuitBreaker.CircuitBreakerOptions | undefined
  /** A connection that lived this long counts as healed: breaker and schedule start over (default 30 s). */
  readonly stableAfter?: Duration.Input | undefined
  /** Where the last good tool listing of each server is kept (default: nowhere). */
  readonly toolCache?: ToolCache.ToolCache | undefined
  /** Between server name and tool name in aggregated tool names (default `__`). */
  readonly toolSeparator?: string | undefined
  /** How long a call waits for a server that is on its way to Ready (default: the connect timeout). */
  readonly callWaitTimeout?: Duration.Input | undefined
  /**
   * Bound on closing every server at once when the scope closes (default 10 s). Each transport
   * bounds its own close too (stdio: grace period, SIGTERM, SIGKILL; HTTP: the DELETE's timeout).
   */
  readonly shutdownTimeout?: Duration.Input | undefined
}

export const DEFAULT_CONNECT_TIMEOUT = Duration.seconds(30)
export const DEFAULT_SLOW_START_THRESHOLD = Duration.seconds(5)
export const DEFAULT_STABLE_AFTER = Duration.seconds(30)
export const DEFAULT_SHUTDOWN_TIMEOUT = Duration.seconds(10)

export const defaultReconnectSchedule: Schedule.Schedule<unknown, unknown> = Schedule.exponential("500 millis", 2).pipe(
  Schedule.jittered,
  Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.seconds(30))))
)

// ---------------------------------------------------------------------------
// Shape

export interface ManagedTool {
  /** `<server><separator><tool>`: unique across servers. */
  readonly name: string
  readonly server: string
  readonly tool: McpSchema.Tool
  /** From the cache of the last good listing: the server is not connected yet. */
  readonly cached: boolean
}

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
export const ManagerEvent = Data.taggedEnum<ManagerEvent>()

export type CallError = McpClient.McpClientError | UnknownTool | UnknownServer | ServerUnavailable

export interface McpManagerShape {
  /** Every configured server (including the ones whose entry was invalid), in document order. */
  readonly servers: ReadonlyArray<string>
  /** The server's status now, then each change. */
  readonly status: (server: string) => Stream.Stream<ServerStatus, UnknownServer>
  readonly statuses: Effect.Effect<Readonly<Record<string, ServerStatus>>>
  readonly events: Stream.Stream<ManagerEvent>
  /** Tools of every server: live for connected ones, cached for the ones still connecting. */
  readonly tools: Effect.Effect<ReadonlyArray<ManagedTool>>
  /** Routes `<server><separator><tool>` to its server. */
  readonly callTool: (
    name: string,
    args?: Readonly<Record<string, unknown>>,
    options?: McpClient.CallOptions
  ) => Effect.Effect<McpSchema.CallToolResult, CallError>
  /** The server's current client, waiting for it to be ready if it is on its way. */
  readonly client: (server: string) => Effect.Effect<McpClient.McpClientShape, UnknownServer | ServerUnavailable>
  /** Sets the server's log level and remembers it for later sessions. */
  readonly setLoggingLevel: (server: string, level: McpSchema.LoggingLevel) => Effect.Effect<void, CallError>
  /** Subscribes to a resource and re-subscribes in later sessions. */
  readonly subscribeResource: (server: string, uri: string) => Effect.Effect<void, CallError>
  readonly unsubscribeResource: (server: string, uri: string) => Effect.Effect<void, CallError>
  /** Drops the current connection (if any) and connects again now, circuit breaker permitting. */
  readonly reconnect: (server: string) => Effect.Effect<void, UnknownServer>
}

export class McpManager extends Context.Service<McpManager, McpManagerShape>()("effect-mcp-transport/McpManager") {}

// ---------------------------------------------------------------------------
// Internals

interface Live {
  readonly client: McpClient.McpClientShape
  readonly generation: number
}

interface Entry {
  readonly name: string
  readonly config: Config.ServerConfig | undefined
  readonly status: SubscriptionRef.SubscriptionRef<ServerStatus>
  /** Wakes the supervisor: reconnect now (an expiry names the connection it was seen on). */
  readonly kicks: Queue.Queue<Kick>
  live: Live | undefined
  tools: ReadonlyArray<McpSchema.Tool>
  toolsCached: boolean
  /** What later sessions must set up again. */
  logLevel: McpSchema.LoggingLevel | undefined
  readonly subscriptions: Set<string>
}

type Kick = { readonly kind: "manual" } | { readonly kind: "expired"; readonly generation: number }

type Loss =
  | { readonly kind: "transport-closed"; readonly error: LastError }
  | { readonly kind: "session-expired"; readonly error: LastError }
  | { readonly kind: "degraded"; readonly error: LastError }
  | { readonly kind: "manual"; readonly error: LastError }

const isTagged = (u: unknown): u is LastError =>
  typeof u === "object" && u !== null && typeof (u as { _tag?: unknown })._tag === "string" &&
  typeof (u as { message?: unknown }).message === "string"

const lastErrorOf = (server: string, exit: Exit.Exit<unknown, unknown>): LastError => {
  if (Exit.isSuccess(exit)) return new ConnectFailed({ server, reason: "no error" })
  for (const reason of exit.cause.reasons) {
    if (reason._tag === "Fail" && isTagged(reason.error)) return reason.error
  }
  for (const reason of exit.cause.reasons) {
    if (reason._tag === "Fail") return new ConnectFailed({ server, reason: String(reason.error) })
    if (reason._tag === "Die") {
      return new ConnectFailed({ server, reason: reason.defect instanceof Error ? reason.defect.message : String(reason.defect) })
    }
  }
  return new ConnectFailed({ server, reason: "interrupted" })
}

const millis = (input: Duration.Input): number => Duration.toMillis(Duration.fromInputUnsafe(input))

/**
 * Starts managing every configured server and returns once each has either
 * finished its first connect attempt or passed the slow-start threshold.
 * Closing the scope closes every server, in parallel.
 */
export const make = <E = SpawnError, R = ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient>(
  options: McpManagerOptions<E, R>
): Effect.Effect<McpManagerShape, Config.ConfigError, R | Scope.Scope> =>
  Effect.gen(function*() {
    const decoded = yield* Config.decode(options.config)
    const separator = options.toolSeparator ?? "__"
    const cache = options.toolCache ?? ToolCache.none
    const schedule = options.reconnectSchedule ?? defaultReconnectSchedule
    const stableAfterMs = millis(options.stableAfter ?? DEFAULT_STABLE_AFTER)
    const defaultConnectMs = millis(options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT)
    const callWaitMs = options.callWaitTimeout === undefined ? undefined : millis(options.callWaitTimeout)
    const clientOptions = options.client ?? {}
    // Without a factory the defaults of the type parameters (fromConfig's requirements) apply.
    const factory = (options.transport ?? fromConfigTransport) as TransportFactory<E, R>
    const services = yield* Effect.context<R>()
    const events = yield* PubSub.sliding<ManagerEvent>(256)
    yield* Effect.addFinalizer(() => PubSub.shutdown(events))

    // --- entries (invalid ones are kept, as Failed, so the application sees them)
    const entries = new Map<string, Entry>()
    const newEntry = (name: string, config: Config.ServerConfig | undefined, initial: ServerStatus) =>
      Effect.gen(function*() {
        const entry: Entry = {
          name,
          config,
          status: yield* SubscriptionRef.make(initial),
          kicks: yield* Queue.sliding<Kick>(4),
          live: undefined,
          tools: [],
          toolsCached: false,
          logLevel: undefined,
          subscriptions: new Set()
        }
        entries.set(name, entry)
        return entry
      })
    for (const { config, name } of decoded.servers) {
      if (name.includes(separator)) {
        const error = new Config.ConfigError({ server: name, reason: `server names must not contain "${separator}"` })
        yield* newEntry(name, undefined, ServerStatus.Failed({ lastError: error }))
      } else {
        yield* newEntry(name, config, ServerStatus.Connecting({ attempt: 0, lastError: undefined }))
      }
    }
    for (const invalid of decoded.invalid) {
      yield* newEntry(invalid.server ?? "?", undefined, ServerStatus.Failed({ lastError: invalid }))
    }

    // Cached listings stand in until the live ones arrive.
    yield* Effect.forEach(entries.values(), (entry) =>
      entry.config === undefined ? Effect.void : Effect.map(cache.load(entry.name), (cached) => {
        if (Option.isSome(cached) && entry.live === undefined) {
          entry.tools = cached.value.tools
          entry.toolsCached = true
        }
      }), { concurrency: "unbounded", discard: true })

    const setStatus = (entry: Entry, status: ServerStatus) => SubscriptionRef.set(entry.status, status)

    // --- one connection attempt, in its own scope
    const connectOnce = (entry: Entry, config: Config.ServerConfig, scope: Scope.Scope) => {
      const timeoutMs = config.connectTimeout ?? defaultConnectMs
      return Effect.gen(function*() {
        const transport = yield* factory(entry.name, config)
        const client = yield* McpClient.fromTransport(transport, clientOptions)
        const tools = client.serverCapabilities.tools === undefined ? [] : yield* client.listAllTools()
        // What the previous session had set up is set up again.
        if (entry.logLevel !== undefined && client.serverCapabilities.logging !== undefined) {
          yield* client.setLoggingLevel(entry.logLevel).pipe(
            Effect.catch((e) => Effect.logWarning(`${entry.name}: could not restore the log level`, e))
          )
        }
        for (const uri of entry.subscriptions) {
          yield* client.subscribeResource(uri).pipe(
            Effect.catch((e) => Effect.logWarning(`${entry.name}: could not restore the subscription to ${uri}`, e))
          )
        }
        return { client, tools }
      }).pipe(
        // The connection's scope, not the manager's (which `services` carries), owns what is opened here.
        Scope.provide(scope),
        Effect.provideContext(services),
        Effect.timeoutOrElse({
          duration: Duration.millis(timeoutMs),
          orElse: () => Effect.fail(new ConnectTimeout({ server: entry.name, timeoutMs }))
        })
      )
    }

    const publishTools = (entry: Entry, tools: ReadonlyArray<McpSchema.Tool>) =>
      Effect.gen(function*() {
        entry.tools = tools
        entry.toolsCached = false
        yield* PubSub.publish(events, ManagerEvent.ToolsChanged({ server: entry.name, count: tools.length, cached: false }))
        yield* cache.save(entry.name, tools)
      })

    /** Completes when the live connection is lost, saying how. */
    const awaitLoss = (entry: Entry, live: Live): Effect.Effect<Loss> => {
      const client = live.client
      // An expiry reported by a call on an older connection is old news.
      const kick: Effect.Effect<Loss> = Effect.flatMap(Queue.take(entry.kicks), (k): Effect.Effect<Loss> =>
        k.kind === "manual"
          ? Effect.succeed({ kind: "manual", error: { _tag: "ManualReconnect", message: "Reconnect requested" } })
          : k.generation === live.generation
          ? Effect.succeed({ kind: "session-expired", error: { _tag: "SessionExpired", message: "Session expired" } })
          : Effect.suspend(() => kick))
      return Effect.raceAll([
        Effect.map(client.connection.awaitClosed, (error: TransportClosed): Loss => ({ kind: "transport-closed", error })),
        SubscriptionRef.changes(client.connection.state).pipe(
          Stream.filter((s) => s._tag === "SessionExpired"),
          Stream.runHead,
          Effect.flatMap((o) =>
            Option.isSome(o) && o.value._tag === "SessionExpired"
              ? Effect.succeed<Loss>({
                kind: "session-expired",
                error: { _tag: "SessionExpired", message: `Session expired: ${o.value.sessionId}` }
              })
              : Effect.never
          )
        ),
        SubscriptionRef.changes(client.health).pipe(
          Stream.filter((h) => h._tag === "Degraded"),
          Stream.runHead,
          Effect.flatMap((o) =>
            Option.isSome(o) && o.value._tag === "Degraded"
              ? Effect.succeed<Loss>({ kind: "degraded", error: o.value.lastError })
              : Effect.never
          )
        ),
        kick
      ])
    }

    /** Sleeps, unless `reconnect` is asked for first. */
    const pause = (entry: Entry, ms: number) =>
      Effect.raceFirst(Effect.sleep(Duration.millis(ms)), Effect.asVoid(Queue.take(entry.kicks)))

    // --- the supervisor: one per server, owner of its connection
    const supervise = (entry: Entry, config: Config.ServerConfig): Effect.Effect<never> => {
      let scope: Scope.Closeable | undefined
      const closeConnection = Effect.suspend(() => {
        const s = scope
        scope = undefined
        entry.live = undefined
        return s === undefined ? Effect.void : Scope.close(s, Exit.void)
      })
      return Effect.gen(function*() {
        let step = yield* Schedule.toStep(schedule)
        let breaker = CircuitBreaker.make(options.circuitBreaker)
        let attempt = 0
        let generation = 0
        let lastError: LastError | undefined
        let lastLoss: Loss["kind"] | undefined

        /**
         * After a failure: the status to publish and how long to wait, per the
         * breaker and the schedule (undefined wait: the schedule is exhausted).
         */
        const plan = (error: LastError) =>
          Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            breaker = CircuitBreaker.onFailure(breaker, now)
            const admitted = CircuitBreaker.admit(breaker, now)
            if (admitted.waitMs > 0) {
              return { status: ServerStatus.CircuitOpen({ retryInMs: admitted.waitMs, lastError: error }), waitMs: admitted.waitMs }
            }
            const delay = yield* Pull.catchDone(
              Effect.map(step(now, error), ([, d]) => Duration.toMillis(d)),
              () => Effect.succeed(undefined)
            )
            return delay === undefined
              ? { status: ServerStatus.Failed({ lastError: error }), waitMs: undefined }
              : { status: ServerStatus.Reconnecting({ attempt: attempt + 1, delayMs: delay, lastError: error }), waitMs: delay }
          })

        const startOver = Effect.gen(function*() {
          step = yield* Schedule.toStep(schedule)
          breaker = CircuitBreaker.onSuccess(breaker)
          attempt = 0
        })

        /** Publishes the plan, drops the connection, then waits (a failed server waits for `reconnect`). */
        const recover = (next: { readonly status: ServerStatus; readonly waitMs: number | undefined }) =>
          Effect.gen(function*() {
            entry.live = undefined
            yield* setStatus(entry, next.status)
            yield* closeConnection
            if (next.waitMs !== undefined) return next.waitMs > 0 ? yield* pause(entry, next.waitMs) : undefined
            yield* Queue.take(entry.kicks)
            yield* startOver
            lastError = undefined
          })

        while (true) {
          // An open circuit that has cooled down lets one trial through (half-open).
          const admitted = CircuitBreaker.admit(breaker, yield* Clock.currentTimeMillis)
          breaker = admitted.breaker
          if (admitted.waitMs > 0) {
            yield* recover({ status: ServerStatus.CircuitOpen({ retryInMs: admitted.waitMs, lastError: lastError! }), waitMs: admitted.waitMs })
            continue
          }
          attempt++
          yield* setStatus(entry, ServerStatus.Connecting({ attempt, lastError }))
          scope = yield* Scope.make()
          const exit = yield* Effect.exit(connectOnce(entry, config, scope))
          if (Exit.isFailure(exit)) {
            lastError = lastErrorOf(entry.name, exit)
            yield* recover(yield* plan(lastError))
            continue
          }

          // --- ready
          const { client, tools } = exit.value
          generation++
          const live: Live = { client, generation }
          entry.live = live
          yield* publishTools(entry, tools)
          // Tool list changes refresh the listing while the connection lives.
          yield* client.listChanged.pipe(
            Stream.filter((n) => n._tag === "ToolListChanged"),
            Stream.runForEach(() =>
              client.listAllTools().pipe(
                Effect.flatMap((fresh) => publishTools(entry, fresh)),
                Effect.catch((e) => Effect.logWarning(`${entry.name}: could not refresh tools`, e))
              )
            ),
            Effect.forkIn(scope, { startImmediately: true })
          )
          const readyAt = yield* Clock.currentTimeMillis
          yield* setStatus(
            entry,
            ServerStatus.Ready({ generation, serverInfo: client.serverInfo, protocolVersion: client.protocolVersion })
          )
          if (generation > 1 && lastLoss !== undefined) {
            yield* PubSub.publish(events, ManagerEvent.SessionChanged({ server: entry.name, generation, reason: lastLoss }))
          }

          const loss = yield* awaitLoss(entry, live)
          lastError = loss.error
          lastLoss = loss.kind
          if ((yield* Clock.currentTimeMillis) - readyAt >= stableAfterMs) yield* startOver
          switch (loss.kind) {
            case "session-expired":
              // Not the server failing: a new session at once.
              yield* recover({ status: ServerStatus.Expired({ generation, lastError: loss.error }), waitMs: 0 })
              break
            case "manual":
              yield* recover({ status: ServerStatus.Connecting({ attempt: attempt + 1, lastError: loss.error }), waitMs: 0 })
              break
            case "degraded":
              yield* setStatus(entry, ServerStatus.Degraded({ generation, lastError: loss.error }))
              yield* recover(yield* plan(loss.error))
              break
            case "transport-closed":
              yield* recover(yield* plan(loss.error))
              break
          }
        }
      }).pipe(Effect.ensuring(closeConnection))
    }

    // --- start everything
    const supervisors = yield* FiberSet.make()
    for (const entry of entries.values()) {
      if (entry.config !== undefined) {
        yield* FiberSet.run(supervisors, supervise(entry, entry.config), { startImmediately: true })
      } else {
        // A failed entry still answers `reconnect` (by staying failed).
        yield* FiberSet.run(supervisors, Effect.forever(Queue.take(entry.kicks)))
      }
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
        Effect.andThen(Effect.forEach(entries.values(), (e) => setStatus(e, ServerStatus.Closed()), { discard: true }))
      )
    )

    // --- slow start: wait for first outcomes, up to the threshold
    const firstOutcome = (entry: Entry) =>
      SubscriptionRef.changes(entry.status).pipe(
        Stream.filter((s) => !(s._tag === "Connecting")),
        Stream.runHead
      )
    yield* Effect.forEach(entries.values(), firstOutcome, { concurrency: "unbounded", discard: true }).pipe(
      Effect.timeoutOption(options.slowStartThreshold ?? DEFAULT_SLOW_START_THRESHOLD)
    )

    // --- the API
    const entryOf = (server: string): Effect.Effect<Entry, UnknownServer> =>
      Effect.suspend(() => {
        const entry = entries.get(server)
        return entry === undefined ? Effect.fail(new UnknownServer({ server })) : Effect.succeed(entry)
      })

    const readyClient = (entry: Entry): Effect.Effect<McpClient.McpClientShape, ServerUnavailable> =>
      Effect.gen(function*() {
        const now = yield* SubscriptionRef.get(entry.status)
        if (now._tag === "Ready" && entry.live !== undefined) return entry.live.client
        const waitMs = callWaitMs ?? (entry.config?.connectTimeout ?? defaultConnectMs)
        // Waiting helps only when the server is on its way: not when it is down, nor when the next attempt is far off.
        const worthWaiting = now._tag === "Ready" || (isTransient(now) && !(now._tag === "Reconnecting" && now.delayMs > waitMs))
        if (!worthWaiting) return yield* new ServerUnavailable({ server: entry.name, status: now })
        const settled = yield* SubscriptionRef.changes(entry.status).pipe(
          Stream.filter((s) => !isTransient(s) && !(s._tag === "Ready" && entry.live === undefined)),
          Stream.runHead,
          Effect.timeoutOption(Duration.millis(waitMs))
        )
        const status = Option.flatten(settled)
        if (Option.isSome(status) && status.value._tag === "Ready" && entry.live !== undefined) return entry.live.client
        return yield* new ServerUnavailable({
          server: entry.name,
          status: Option.getOrElse(status, () => now)
        })
      })

    /** Runs a call; a session the server forgot wakes the supervisor (the call itself is not replayed). */
    const withClient = <A>(
      server: string,
      f: (client: McpClient.McpClientShape) => Effect.Effect<A, McpClient.McpClientError>
    ): Effect.Effect<A, CallError> =>
      Effect.gen(function*() {
        const entry = yield* entryOf(server)
        const client = yield* readyClient(entry)
        const generation = entry.live?.generation ?? 0
        return yield* f(client).pipe(
          Effect.tapError((e) =>
            e._tag === "SessionExpired" ? Queue.offer(entry.kicks, { kind: "expired", generation }) : Effect.void
          )
        )
      })

    const splitName = (name: string): { server: string; tool: string } | undefined => {
      const i = name.indexOf(separator)
      if (i <= 0) return undefined
      const server = name.slice(0, i)
      return entries.has(server) ? { server, tool: name.slice(i + separator.length) } : undefined
    }

    const shape: McpManagerShape = {
      servers: Array.from(entries.keys()),
      status: (server) => Stream.unwrap(Effect.map(entryOf(server), (e) => SubscriptionRef.changes(e.status))),
      statuses: Effect.gen(function*() {
        const out: Record<string, ServerStatus> = {}
        for (const [name, entry] of entries) out[name] = yield* SubscriptionRef.get(entry.status)
        return out
      }),
      events: Stream.fromPubSub(events),
      tools: Effect.sync(() =>
        Array.from(entries.values()).flatMap((entry) =>
          entry.tools.map((tool) => ({
            name: `${entry.name}${separator}${tool.name}`,
            server: entry.name,
            tool,
            cached: entry.toolsCached
          }))
        )
      ),
      callTool: (name, args, callOptions) => {
        const target = splitName(name)
        if (target === undefined) return Effect.fail(new UnknownTool({ name }))
        return withClient(target.server, (client) =>
          client.callTool(args === undefined ? { name: target.tool } : { name: target.tool, arguments: args }, callOptions))
      },
      client: (server) => Effect.flatMap(entryOf(server), readyClient),
      setLoggingLevel: (server, level) =>
        withClient(server, (client) => client.setLoggingLevel(level)).pipe(
          Effect.tap(() => Effect.sync(() => void (entries.get(server)!.logLevel = level)))
        ),
      subscribeResource: (server, uri) =>
        withClient(server, (client) => client.subscribeResource(uri)).pipe(
          Effect.tap(() => Effect.sync(() => void entries.get(server)!.subscriptions.add(uri)))
        ),
      unsubscribeResource: (server, uri) =>
        withClient(server, (client) => client.unsubscribeResource(uri)).pipe(
          Effect.tap(() => Effect.sync(() => void entries.get(server)!.subscriptions.delete(uri)))
        ),
      reconnect: (server) =>
        Effect.flatMap(entryOf(server), (entry) => Effect.asVoid(Queue.offer(entry.kicks, { kind: "manual" })))
    }
    return shape
  })

/** The manager as a layer; every server closes with the layer. */
export const layer = <E = SpawnError, R = ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient>(
  options: McpManagerOptions<E, R>
): Layer.Layer<McpManager, Config.ConfigError, R> =>
  Layer.effect(McpManager, make(options))

