/**
 * One managed server as its supervisor and the manager's API share it: the
 * status, the live connection (if any), the tools last listed, what later
 * sessions must set up again, and the queue through which the API wakes the
 * supervisor. The supervisor (Supervisor.ts) is the only writer of the
 * connection and the status; the API reads them and asks for a reconnect.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as McpSchema from "effect/ai/McpSchema"
import type * as McpClient from "../McpClient.ts"
import type * as Config from "./Config.ts"
import { isTransient, ServerStatus, ServerUnavailable } from "./ServerStatus.ts"

/**
 * The connection a server is served over now.
 *
 * @since 0.1.0
 * @category models
 */
export interface LiveConnection {
  readonly client: McpClient.McpClientShape
  /** Which connection of the server this is (1 for the first); `Ready` carries the same number. */
  readonly generation: number
}

/**
 * A request to the supervisor to reconnect now: asked for by the application,
 * or a call saw the session expire on connection `generation`.
 *
 * @since 0.1.0
 * @category models
 */
export type Kick = { readonly kind: "manual" } | { readonly kind: "expired"; readonly generation: number }

/**
 * The state of one configured server.
 *
 * @since 0.1.0
 * @category models
 */
export interface ManagedServer {
  readonly name: string
  /** Undefined for an entry that could not be used: it stays Failed. */
  readonly config: Config.ServerConfig | undefined
  /** Spawn (or first request) to ready, per connect attempt. */
  readonly connectTimeoutMs: number
  /** How long a call waits for the server while it is on its way to Ready. */
  readonly callWaitMs: number
  readonly status: SubscriptionRef.SubscriptionRef<ServerStatus>
  /** Wakes the supervisor: reconnect now (an expiry names the connection it was seen on). */
  readonly kicks: Queue.Queue<Kick>
  live: LiveConnection | undefined
  tools: ReadonlyArray<McpSchema.Tool>
  /** The tools come from the cache of an earlier run, not from this server's current connection. */
  toolsCached: boolean
  /** What later sessions must set up again. */
  logLevel: McpSchema.LoggingLevel | undefined
  readonly subscriptions: Set<string>
}

/**
 * A server in status `initial`, with no connection and no tools yet.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: {
  readonly name: string
  readonly config: Config.ServerConfig | undefined
  readonly initial: ServerStatus
  /** Used when the entry names no `connectTimeout`. */
  readonly defaultConnectTimeoutMs: number
  /** Undefined: a call waits as long as a connect attempt may take. */
  readonly callWaitMs: number | undefined
}): Effect.Effect<ManagedServer> =>
  Effect.gen(function*() {
    const connectTimeoutMs = options.config?.connectTimeout ?? options.defaultConnectTimeoutMs
    return {
      name: options.name,
      config: options.config,
      connectTimeoutMs,
      callWaitMs: options.callWaitMs ?? connectTimeoutMs,
      status: yield* SubscriptionRef.make(options.initial),
      kicks: yield* Queue.sliding<Kick>(4),
      live: undefined,
      tools: [],
      toolsCached: false,
      logLevel: undefined,
      subscriptions: new Set()
    }
  })

/**
 * Publishes a new status.
 *
 * @since 0.1.0
 * @category utils
 */
export const setStatus = (server: ManagedServer, status: ServerStatus): Effect.Effect<void> =>
  SubscriptionRef.set(server.status, status)

/**
 * The server's client now, or once it is ready if it is on its way (up to
 * `callWaitMs`); `ServerUnavailable` when it is down, when its next attempt
 * is further off than the wait, or when the wait runs out. One generator
 * function for every call (docs/design.md, "Per-request code and the old generation").
 *
 * @since 0.1.0
 * @category utils
 */
export const readyClient = Effect.fnUntraced(function*(
  server: ManagedServer
): Effect.fn.Return<McpClient.McpClientShape, ServerUnavailable> {
  const now = yield* SubscriptionRef.get(server.status)
  if (now._tag === "Ready" && server.live !== undefined) return server.live.client
  const waitMs = server.callWaitMs
  // Waiting helps only when the server is on its way: not when it is down, nor when the next attempt is far off.
  const worthWaiting = now._tag === "Ready" || (isTransient(now) && !(now._tag === "Reconnecting" && now.delayMs > waitMs))
  if (!worthWaiting) return yield* new ServerUnavailable({ server: server.name, status: now })
  const settled = yield* SubscriptionRef.changes(server.status).pipe(
    Stream.filter((s) => !isTransient(s) && !(s._tag === "Ready" && server.live === undefined)),
    Stream.runHead,
    Effect.timeoutOption(Duration.millis(waitMs))
  )
  const status = Option.flatten(settled)
  if (Option.isSome(status) && status.value._tag === "Ready" && server.live !== undefined) return server.live.client
  return yield* new ServerUnavailable({
    server: server.name,
    status: Option.getOrElse(status, () => now)
  })
})

/**
 * Runs a call on the server's client once it is ready (see `readyClient`);
 * a session the server forgot wakes the supervisor (the call itself is not
 * replayed). One generator function for every call (docs/design.md,
 * "Per-request code and the old generation").
 *
 * @since 0.1.0
 * @category utils
 */
export const callWith = Effect.fnUntraced(function*<A>(
  server: ManagedServer,
  f: (client: McpClient.McpClientShape) => Effect.Effect<A, McpClient.McpClientError>
): Effect.fn.Return<A, McpClient.McpClientError | ServerUnavailable> {
  const client = yield* readyClient(server)
  const generation = server.live?.generation ?? 0
  return yield* f(client).pipe(
    Effect.tapError((e) => e.reason._tag === "SessionExpired" ? reportExpired(server, generation) : Effect.void)
  )
})

/**
 * Asks the supervisor to drop the connection and connect again now.
 *
 * @since 0.1.0
 * @category utils
 */
export const requestReconnect = (server: ManagedServer): Effect.Effect<void> =>
  Effect.asVoid(Queue.offer(server.kicks, { kind: "manual" }))

/**
 * Tells the supervisor that a call on connection `generation` found its
 * session expired (ignored if that connection is already gone).
 *
 * @since 0.1.0
 * @category utils
 */
export const reportExpired = (server: ManagedServer, generation: number): Effect.Effect<boolean> =>
  Queue.offer(server.kicks, { kind: "expired", generation })
