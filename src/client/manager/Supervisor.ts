/**
 * The supervisor of one managed server: the fiber that owns its connection
 * and drives its status (see ServerStatus.ts for the state machine).
 *
 * It opens a connection scope, runs the handshake (bounded by the connect
 * timeout), publishes Ready, waits for the connection to be lost, closes the
 * scope, and only then opens the next one, so there is never more than one
 * live connection per server. Failed attempts and lost connections are
 * retried on the reconnect schedule behind a circuit breaker; a connection
 * that lived `stableAfterMs` counts as healed and both start over. Calls in
 * flight when a connection dies fail with their typed error; nothing is
 * replayed.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Pull from "effect/Pull"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as McpSchema from "effect/ai/McpSchema"
import type { TransportClosed } from "../../McpError.ts"
import { reasonOf } from "../../McpErrorGroup.ts"
import type { ClientTransportShape } from "../ClientTransport.ts"
import * as McpClient from "../McpClient.ts"
import * as UnavailableRetry from "../internal/UnavailableRetry.ts"
import * as Metrics from "../../observability/Metrics.ts"
import * as McpSpan from "../../internal/McpSpan.ts"
import * as CircuitBreaker from "./CircuitBreaker.ts"
import * as Config from "./Config.ts"
import { type LiveConnection, type ManagedServer, setStatus } from "./ManagedServer.ts"
import { ConnectFailed, ConnectTimeout, type LastError, ServerStatus } from "./ServerStatus.ts"
import * as Negotiation from "../Negotiation.ts"

/**
 * Each connect attempt in a span of its own (`connect {server}`, kind
 * INTERNAL, with the server's name, the attempt and whether it is a
 * reconnect), the client's handshake spans its children. Nothing when
 * tracing is off.
 */
const connectSpan = (name: string, attempt: number, reconnect: boolean) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.withFiber((fiber) =>
    McpSpan.enabled(fiber)
      ? Effect.withSpan(effect, `connect ${name}`, {
        kind: "internal",
        attributes: { "mcp.manager.server": name, "mcp.manager.attempt": attempt, "mcp.manager.reconnect": reconnect }
      })
      : effect
  )

/**
 * What ended a connection.
 *
 * @since 0.1.0
 * @category models
 */
export type LossReason = "transport-closed" | "session-expired" | "degraded" | "manual"

/**
 * How a supervisor connects and heals, and whom it tells.
 *
 * @since 0.1.0
 * @category models
 */
export interface SupervisorOptions<R> {
  /** Opens the transport of one connection, in that connection's scope. */
  readonly transport: (server: string, config: Config.ServerConfig) => Effect.Effect<ClientTransportShape, unknown, R | Scope.Scope>
  /** What `transport` needs: the manager's context. */
  readonly services: Context.Context<R>
  /** Options of every client. */
  readonly client: McpClient.McpClientOptions
  /** Delays between attempts; when it ends the server is Failed until a reconnect is asked for. */
  readonly reconnectSchedule: Schedule.Schedule<unknown, unknown>
  readonly circuitBreaker: CircuitBreaker.CircuitBreakerOptions | undefined
  /** A connection that lived this long counts as healed: breaker and schedule start over. */
  readonly stableAfterMs: number
  /** Runs after the server's tools were replaced by a live listing (at each connect and each list change). */
  readonly onTools: (server: ManagedServer, tools: ReadonlyArray<McpSchema.Tool>) => Effect.Effect<void>
  /** Runs when a new connection replaced a lost one, once it is Ready. */
  readonly onSessionChanged: (server: string, generation: number, reason: LossReason) => Effect.Effect<void>
}

interface Loss {
  readonly kind: LossReason
  readonly error: LastError
}

const isTagged = (u: unknown): u is LastError =>
  typeof u === "object" && u !== null && typeof (u as { _tag?: unknown })._tag === "string" &&
  typeof (u as { message?: unknown }).message === "string"

/** Our tagged error when the attempt failed with one, else a ConnectFailed saying what happened. */
const lastErrorOf = (server: string, exit: Exit.Exit<unknown, unknown>): LastError => {
  if (Exit.isSuccess(exit)) return new ConnectFailed({ server, reason: "no error" })
  for (const reason of exit.cause.reasons) {
    // A status names the flat error (`SpawnError`, `TransportClosed`…), as the losses it records do, not its group.
    if (reason._tag === "Fail") {
      const error = reasonOf(reason.error)
      if (isTagged(error)) return error
    }
  }
  for (const reason of exit.cause.reasons) {
    if (reason._tag === "Fail") return new ConnectFailed({ server, reason: String(reason.error) })
    if (reason._tag === "Die") {
      return new ConnectFailed({ server, reason: reason.defect instanceof Error ? reason.defect.message : String(reason.defect) })
    }
  }
  return new ConnectFailed({ server, reason: "interrupted" })
}

/**
 * The wait a server asked for when it refused the connection for now (503
 * or 429 with `Retry-After`): coming back sooner only earns another
 * refusal. Bounded by the breaker's cool-down, the longest the manager is
 * set to stay away from a server.
 */
const askedWait = (error: LastError, boundMs: number): number =>
  Math.min(UnavailableRetry.askedWait(error) ?? 0, boundMs)

/** One connection attempt, in its own scope: transport, handshake, tool listing, session setup restored. */
const connectOnce = <R>(server: ManagedServer, config: Config.ServerConfig, scope: Scope.Scope, options: SupervisorOptions<R>) => {
  const timeoutMs = server.connectTimeoutMs
  return Effect.gen(function*() {
    const transport = yield* options.transport(server.name, config)
    const client = yield* McpClient.fromTransport(transport, {
      ...options.client,
      protocol: (config.protocol as McpClient.McpClientOptions["protocol"]) ?? options.client?.protocol,
      // The era is remembered per server, so a reconnect skips the probe (and re-probes if it turns out wrong).
      eraKey: options.client?.eraKey ?? (Config.isStdio(config)
        ? Negotiation.identityOfStdio(config.command, config.args ?? [], config.cwd)
        : Negotiation.identityOfHttp(config.url))
    })
    const tools = client.serverCapabilities.tools === undefined ? [] : yield* client.listAllTools()
    // What the previous session had set up is set up again.
    if (server.logLevel !== undefined && client.serverCapabilities.logging !== undefined) {
      yield* client.setLoggingLevel(server.logLevel).pipe(
        Effect.catch((e) => Effect.logWarning(`${server.name}: could not restore the log level`, e))
      )
    }
    for (const uri of server.subscriptions) {
      yield* client.subscribeResource(uri).pipe(
        Effect.catch((e) => Effect.logWarning(`${server.name}: could not restore the subscription to ${uri}`, e))
      )
    }
    return { client, tools }
  }).pipe(
    // The connection's scope, not the manager's (which `services` carries), owns what is opened here.
    Scope.provide(scope),
    Effect.provideContext(options.services),
    Effect.timeoutOrElse({
      duration: Duration.millis(timeoutMs),
      orElse: () => Effect.fail(new ConnectTimeout({ server: server.name, timeoutMs }))
    })
  )
}

/** Completes when the live connection is lost, saying how. */
const awaitLoss = (server: ManagedServer, live: LiveConnection): Effect.Effect<Loss> => {
  const client = live.client
  // An expiry reported by a call on an older connection is old news.
  const kick: Effect.Effect<Loss> = Effect.flatMap(Queue.take(server.kicks), (k): Effect.Effect<Loss> =>
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

/** Sleeps, unless a reconnect is asked for first. */
const pause = (server: ManagedServer, ms: number) =>
  Effect.raceFirst(Effect.sleep(Duration.millis(ms)), Effect.asVoid(Queue.take(server.kicks)))

/**
 * Supervises `server` until interrupted, which closes its connection. A
 * server without a usable configuration stays as it is and only drains
 * reconnect requests.
 *
 * @since 0.1.0
 * @category constructors
 */
export const supervise = <R>(server: ManagedServer, options: SupervisorOptions<R>): Effect.Effect<never> => {
  const config = server.config
  // A failed entry still answers `reconnect` (by staying failed).
  if (config === undefined) return Effect.forever(Queue.take(server.kicks))
  let scope: Scope.Closeable | undefined
  const closeConnection = Effect.suspend(() => {
    const s = scope
    scope = undefined
    server.live = undefined
    return s === undefined ? Effect.void : Scope.close(s, Exit.void)
  })
  const publishTools = (tools: ReadonlyArray<McpSchema.Tool>) =>
    Effect.gen(function*() {
      server.tools = tools
      server.toolsCached = false
      yield* options.onTools(server, tools)
    })
  return Effect.gen(function*() {
    let step = yield* Schedule.toStep(options.reconnectSchedule)
    let breaker = CircuitBreaker.make(options.circuitBreaker)
    let attempt = 0
    let generation = 0
    let lastError: LastError | undefined
    let lastLoss: LossReason | undefined

    /**
     * After a failure: the status to publish and how long to wait, per the
     * breaker and the schedule (undefined wait: the schedule is exhausted).
     */
    const plan = (error: LastError) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        breaker = CircuitBreaker.onFailure(breaker, now)
        yield* Metrics.circuitState(server.name, breaker.state._tag)
        const admitted = CircuitBreaker.admit(breaker, now)
        if (admitted.waitMs > 0) {
          return { status: ServerStatus.CircuitOpen({ retryInMs: admitted.waitMs, lastError: error }), waitMs: admitted.waitMs }
        }
        const scheduled = yield* Pull.catchDone(
          Effect.map(step(now, error), ([, d]) => Duration.toMillis(d)),
          () => Effect.succeed(undefined)
        )
        const delay = scheduled === undefined ? undefined : Math.max(scheduled, askedWait(error, breaker.cooldownMs))
        return delay === undefined
          ? { status: ServerStatus.Failed({ lastError: error }), waitMs: undefined }
          : { status: ServerStatus.Reconnecting({ attempt: attempt + 1, delayMs: delay, lastError: error }), waitMs: delay }
      })

    const startOver = Effect.gen(function*() {
      step = yield* Schedule.toStep(options.reconnectSchedule)
      breaker = CircuitBreaker.onSuccess(breaker)
      yield* Metrics.circuitState(server.name, breaker.state._tag)
      attempt = 0
    })

    /** Publishes the plan, drops the connection, then waits (a failed server waits for a reconnect request). */
    const recover = (next: { readonly status: ServerStatus; readonly waitMs: number | undefined }) =>
      Effect.gen(function*() {
        server.live = undefined
        yield* setStatus(server, next.status)
        yield* closeConnection
        if (next.waitMs !== undefined) return next.waitMs > 0 ? yield* pause(server, next.waitMs) : undefined
        yield* Queue.take(server.kicks)
        yield* startOver
        lastError = undefined
      })

    while (true) {
      // An open circuit that has cooled down lets one trial through (half-open).
      const admitted = CircuitBreaker.admit(breaker, yield* Clock.currentTimeMillis)
      breaker = admitted.breaker
      yield* Metrics.circuitState(server.name, breaker.state._tag)
      if (admitted.waitMs > 0) {
        yield* recover({ status: ServerStatus.CircuitOpen({ retryInMs: admitted.waitMs, lastError: lastError! }), waitMs: admitted.waitMs })
        continue
      }
      attempt++
      yield* Metrics.connectAttempt(server.name, generation === 0 && attempt === 1)
      yield* setStatus(server, ServerStatus.Connecting({ attempt, lastError }))
      scope = yield* Scope.make()
      const exit = yield* Effect.exit(
        connectOnce(server, config, scope, options).pipe(connectSpan(server.name, attempt, generation > 0 || attempt > 1))
      )
      if (Exit.isFailure(exit)) {
        lastError = lastErrorOf(server.name, exit)
        yield* recover(yield* plan(lastError))
        continue
      }

      // --- ready
      const { client, tools } = exit.value
      generation++
      const live: LiveConnection = { client, generation }
      server.live = live
      yield* publishTools(tools)
      // Tool list changes refresh the listing while the connection lives.
      yield* client.listChanged.pipe(
        Stream.filter((n) => n._tag === "ToolListChanged"),
        Stream.runForEach(() =>
          client.listAllTools().pipe(
            Effect.flatMap(publishTools),
            Effect.catch((e) => Effect.logWarning(`${server.name}: could not refresh tools`, e))
          )
        ),
        Effect.forkIn(scope, { startImmediately: true })
      )
      const readyAt = yield* Clock.currentTimeMillis
      yield* setStatus(
        server,
        ServerStatus.Ready({
          generation,
          serverInfo: client.serverInfo,
          protocolVersion: client.protocolVersion,
          era: client.era
        })
      )
      if (generation > 1 && lastLoss !== undefined) yield* options.onSessionChanged(server.name, generation, lastLoss)

      const loss = yield* awaitLoss(server, live)
      lastError = loss.error
      lastLoss = loss.kind
      if ((yield* Clock.currentTimeMillis) - readyAt >= options.stableAfterMs) yield* startOver
      switch (loss.kind) {
        case "session-expired":
          // Not the server failing: a new session at once.
          yield* recover({ status: ServerStatus.Expired({ generation, lastError: loss.error }), waitMs: 0 })
          break
        case "manual":
          yield* recover({ status: ServerStatus.Connecting({ attempt: attempt + 1, lastError: loss.error }), waitMs: 0 })
          break
        case "degraded":
          yield* setStatus(server, ServerStatus.Degraded({ generation, lastError: loss.error }))
          yield* recover(yield* plan(loss.error))
          break
        case "transport-closed":
          yield* recover(yield* plan(loss.error))
          break
      }
    }
  }).pipe(Effect.ensuring(closeConnection))
}
