/**
 * Everything the instances of one server share, on one Redis: the `Bus`
 * (notifications and broadcasts reach every instance), the resumable event
 * log (`EventStore`, one Redis Stream per SSE stream), the instance's lease
 * (`InstanceLease`, which fences the log's appends), the registry of the
 * requests each instance is serving (`InFlight`, whose reaper answers the
 * requests of an instance that died), the tasks (`TaskStore`: any instance
 * answers for a task another one runs) and the `Availability` the HTTP
 * server transport reads to answer 503 at once while Redis cannot be reached
 * or the lease is not held. No instance owns anything; an instance can stop
 * at any time.
 *
 * The connection is node-redis through `@effect/platform-node/NodeRedis`,
 * with the offline queue off (a command while disconnected fails at once
 * instead of waiting), a bound on every command sent through the `Redis`
 * service (`commandTimeoutMs`: a Redis that stops answering without closing
 * its connection fails the command instead of holding the request; node-redis's
 * own command timeout, which stops counting once the command is written, is
 * off) and a
 * reconnect strategy that never gives up once connected (the default one
 * stops on a socket timeout). The first connection must succeed: building
 * the layer fails with a `RedisError` otherwise.
 *
 * Redis 6.2 or later, with an append-only file and `maxmemory-policy
 * noeviction`; Redis Cluster is not supported. See docs/scale-out.md.
 */
import * as NodeRedis from "@effect/platform-node/NodeRedis"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Context from "effect/Context"
import * as Option from "effect/Option"
import * as Redis from "effect/persistence/Redis"
import { Availability } from "./Availability.ts"
import type { Bus } from "./Bus.ts"
import type { EventStore } from "./EventStore.ts"
import type { Inbox } from "./Inbox.ts"
import type { InFlight } from "./InFlight.ts"
import { InstanceLease, randomId } from "./InstanceLease.ts"
import * as RedisBus from "./RedisBus.ts"
import * as RedisEventStore from "./RedisEventStore.ts"
import * as RedisInbox from "./RedisInbox.ts"
import * as RedisInFlight from "./RedisInFlight.ts"
import * as RedisInstanceLease from "./RedisInstanceLease.ts"
import * as RedisSessionRegistry from "./RedisSessionRegistry.ts"
import type { SessionRegistry } from "./SessionRegistry.ts"
import * as RedisTaskStore from "./RedisTaskStore.ts"
import type { TaskStore } from "./TaskStore.ts"

/**
 * Where Redis is, the prefix of every key and channel, and the event log's bounds.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends RedisEventStore.Options {
  /** e.g. `redis://127.0.0.1:6379` (`rediss://` for TLS; credentials in the URL). */
  readonly url: string
  /** Seconds a client refused while Redis is unreachable is told to wait. Default 1. */
  readonly retryAfterSeconds?: number | undefined
  /** Longest wait for a connection, initial or renewed, in milliseconds. Default 2000. */
  readonly connectTimeoutMs?: number | undefined
  /**
   * Longest wait for the answer to one command sent through the `Redis`
   * service (`send`, `eval`), in milliseconds; it then fails with a
   * `RedisError`. Default 2000. Not applied to `reserve`d connections (for
   * blocking reads, which bound themselves) nor to commands sent on the
   * node-redis client directly (`NodeRedis`): bound those with
   * `Effect.timeout`.
   */
  readonly commandTimeoutMs?: number | undefined
  /**
   * How often, in milliseconds, the connection is checked with a `PING`
   * while it is up. A `PING` unanswered within `commandTimeoutMs` (a Redis
   * that hangs: paused, swapping, stuck in a slow script) makes the store
   * unavailable until one is answered again. Default 1000.
   */
  readonly probeIntervalMs?: number | undefined
  /**
   * How long an instance's lease lasts without renewal, in milliseconds (renewed every third of it).
   * The requests of an instance that died are answered with an error within about 1.6 times this.
   * Default 5000.
   */
  readonly leaseMs?: number | undefined
  /**
   * This instance's id in the fleet (its lease, its inbox, the ids of its requests to clients).
   * Default: a random one each time the layer is built. Never share one between processes.
   */
  readonly instanceId?: string | undefined
  /** The shared task store's bounds (`RedisTaskStore.Options`; the prefix and the lease are the fleet's). */
  readonly tasks?: Omit<RedisTaskStore.Options, "prefix"> | undefined
}

/**
 * The defaults of `Options`.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults = {
  retryAfterSeconds: 1,
  connectTimeoutMs: 2000,
  commandTimeoutMs: 2000,
  probeIntervalMs: 1000
} as const

/** Backoff while reconnecting: doubling from 50 ms up to 1 s, with jitter so instances do not reconnect in step. */
const backoff = (retries: number) => Math.min(50 * 2 ** retries, 1000) + Math.floor(Math.random() * 100)

/**
 * The connection alone: `Redis` and `NodeRedis`, configured as the fleet needs.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConnection = (options: Options): Layer.Layer<Redis.Redis | NodeRedis.NodeRedis, Redis.RedisError> =>
  Layer.unwrap(Effect.sync(() => {
    // Until the first connection is made, a failure is an answer (the URL is wrong, Redis is not there).
    let connected = false
    const timeoutMs = options.commandTimeoutMs ?? defaults.commandTimeoutMs
    const client = NodeRedis.layer({
      url: options.url,
      disableOfflineQueue: true,
      // node-redis's own command timeout is off (its default is 5 s): it is an
      // `AbortSignal.timeout` per command, whose timer cannot be cancelled and
      // stays pending for the whole timeout after the answer, so every command
      // left about 1 KB to be promoted to the old generation. It bounded the wait
      // to be written only; `bounded` bounds the whole wait, written or not.
      commandOptions: { timeout: 0 },
      socket: {
        connectTimeout: options.connectTimeoutMs ?? defaults.connectTimeoutMs,
        reconnectStrategy: (retries: number, cause: Error) => connected ? backoff(retries) : cause
      }
    })
    return Layer.effectContext(Effect.gen(function*() {
      connected = true
      const node = yield* NodeRedis.NodeRedis
      const redis = yield* Redis.Redis
      return Context.make(NodeRedis.NodeRedis, node).pipe(Context.add(Redis.Redis, bounded(redis, timeoutMs)))
    })).pipe(Layer.provide(client))
  }))

/** A command unanswered within `commandTimeoutMs`. */
class CommandTimeout extends Error {
  constructor(command: string, ms: number) {
    super(`Redis did not answer ${command} within ${ms} ms`)
  }
}

/**
 * The `Redis` service with a bound on every answer. A command given up on
 * stays in node-redis's queue (one not yet written is still written, and may
 * run, once the socket drains), and its late answer (if any) is dropped
 * there: the answers after it still reach their own commands.
 */
const bounded = (redis: Redis.Redis["Service"], ms: number): Redis.Redis["Service"] => {
  const bound = <A>(command: string, effect: Effect.Effect<A, Redis.RedisError>) =>
    Effect.timeoutOrElse(effect, {
      duration: Duration.millis(ms),
      orElse: () => Effect.fail(new Redis.RedisError({ cause: new CommandTimeout(command, ms) }))
    })
  return {
    send: (command, ...args) => bound(command, redis.send(command, ...args)),
    eval: (script) => {
      const run = redis.eval(script)
      return (...params) => bound("EVALSHA", run(...params))
    },
    subscribe: redis.subscribe,
    reserve: redis.reserve
  }
}

/**
 * The availability of the connection: the client is ready (connected, not
 * reconnecting), its last `PING` was answered in time and, where there is
 * an `InstanceLease`, its lease is held. A connection that is up but
 * unanswered (Redis paused) is caught by the `PING` every
 * `probeIntervalMs`, not by the socket; a closed one at once.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerAvailability = (options?: {
  readonly retryAfterSeconds?: number | undefined
  readonly commandTimeoutMs?: number | undefined
  readonly probeIntervalMs?: number | undefined
}): Layer.Layer<Availability, never, NodeRedis.NodeRedis> =>
  Layer.effect(Availability)(Effect.gen(function*() {
    const redis = yield* NodeRedis.NodeRedis
    const lease = Option.getOrUndefined(yield* Effect.serviceOption(InstanceLease))
    const timeout = options?.commandTimeoutMs ?? defaults.commandTimeoutMs
    let stalled = false
    const probe = Effect.suspend(() => {
      // A reconnect is a fresh start: the socket state says all until the next PING.
      if (!redis.client.isReady) {
        stalled = false
        return Effect.void
      }
      return Effect.tryPromise(() => redis.client.sendCommand(["PING"])).pipe(
        Effect.timeout(Duration.millis(timeout)),
        Effect.match({
          onFailure: () => {
            stalled = redis.client.isReady
          },
          onSuccess: () => {
            stalled = false
          }
        })
      )
    })
    yield* probe.pipe(
      Effect.delay(Duration.millis(options?.probeIntervalMs ?? defaults.probeIntervalMs)),
      Effect.forever,
      Effect.forkScoped
    )
    const reachable = () => redis.client.isReady && !stalled
    return {
      available: lease === undefined ? reachable : () => reachable() && lease.held(),
      retryAfterSeconds: options?.retryAfterSeconds ?? defaults.retryAfterSeconds,
      kind: "redis"
    }
  }))

/**
 * The bus, the event log, the session registry, the inboxes, the
 * instance's lease, the in-flight registry, the task store and their
 * availability on one Redis connection.
 *
 * @example
 * ```ts
 * import * as Layer from "effect/Layer"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 * import * as RedisFleet from "effect-mcp-transport/server/RedisFleet"
 *
 * declare const server: McpServer.McpServer<never>
 *
 * // Every instance runs this, with the same Redis, prefix and request-state keys.
 * const Instance = McpServer.layerHttp(server, { port: 0 }).pipe(
 *   Layer.provide(RedisFleet.layer({ url: "redis://127.0.0.1:6379", prefix: "weather:" }))
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options
): Layer.Layer<Bus | EventStore | Availability | SessionRegistry | Inbox | InstanceLease | InFlight | TaskStore, Redis.RedisError> =>
  Layer.unwrap(Effect.sync(() => {
    // One id names the instance's lease, its inbox and its requests to clients.
    const id = options.instanceId ?? randomId()
    const leased = RedisEventStore.layer(options).pipe(
      Layer.provideMerge(RedisInstanceLease.layer({ prefix: options.prefix, leaseMs: options.leaseMs, id }))
    )
    const shared = Layer.mergeAll(
      RedisInFlight.layer({ prefix: options.prefix, leaseMs: options.leaseMs }),
      RedisInbox.layer({ prefix: options.prefix, instanceId: id }),
      RedisTaskStore.layer({ leaseMs: options.leaseMs, ...options.tasks, prefix: options.prefix }),
      layerAvailability(options)
    ).pipe(Layer.provideMerge(leased))
    const bus = RedisBus.layer({ prefix: options.prefix })
    return Layer.mergeAll(
      RedisSessionRegistry.layer({ prefix: options.prefix }).pipe(Layer.provideMerge(bus)),
      shared
    ).pipe(Layer.provide(layerConnection(options)))
  }))
