/**
 * Everything the instances of one server share, on one Redis: the `Bus`
 * (notifications and broadcasts reach every instance), the resumable event
 * log (`EventStore`, one Redis Stream per SSE stream), the tasks
 * (`TaskStore`: any instance answers for a task another one runs) and the
 * `Availability` the HTTP server transport reads to answer 503 at once
 * while Redis cannot be reached. No instance owns anything; an instance can
 * stop at any time.
 *
 * The connection is node-redis through `@effect/platform-node/NodeRedis`,
 * with the offline queue off (a command while disconnected fails at once
 * instead of waiting) and a reconnect strategy that never gives up once
 * connected (the default one stops on a socket timeout). The first
 * connection must succeed: building the layer fails with a `RedisError`
 * otherwise.
 *
 * Redis 6.2 or later, with an append-only file and `maxmemory-policy
 * noeviction`; Redis Cluster is not supported. See docs/scale-out.md.
 */
import * as NodeRedis from "@effect/platform-node/NodeRedis"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redis from "effect/persistence/Redis"
import { Availability } from "./Availability.ts"
import type { Bus } from "./Bus.ts"
import type { EventStore } from "./EventStore.ts"
import * as RedisBus from "./RedisBus.ts"
import * as RedisEventStore from "./RedisEventStore.ts"
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
  /** The shared task store's liveness and bounds (`RedisTaskStore.Options`; the prefix is the fleet's). */
  readonly tasks?: Omit<RedisTaskStore.Options, "prefix"> | undefined
}

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
    const client = NodeRedis.layer({
      url: options.url,
      disableOfflineQueue: true,
      socket: {
        connectTimeout: options.connectTimeoutMs ?? 2000,
        reconnectStrategy: (retries: number, cause: Error) => connected ? backoff(retries) : cause
      }
    })
    return Layer.effectDiscard(Effect.sync(() => {
      connected = true
    })).pipe(Layer.provideMerge(client))
  }))

/**
 * The availability of the connection: the client is ready (connected, not reconnecting).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerAvailability = (options?: {
  readonly retryAfterSeconds?: number | undefined
}): Layer.Layer<Availability, never, NodeRedis.NodeRedis> =>
  Layer.effect(Availability)(Effect.gen(function*() {
    const redis = yield* NodeRedis.NodeRedis
    return {
      available: () => redis.client.isReady,
      retryAfterSeconds: options?.retryAfterSeconds ?? 1
    }
  }))

/**
 * The bus, the event log, the task store and their availability on one Redis connection.
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
export const layer = (options: Options): Layer.Layer<Bus | EventStore | TaskStore | Availability, Redis.RedisError> =>
  Layer.mergeAll(
    RedisBus.layer({ prefix: options.prefix }),
    RedisEventStore.layer(options),
    RedisTaskStore.layer({ ...options.tasks, prefix: options.prefix }),
    layerAvailability(options)
  ).pipe(Layer.provide(layerConnection(options)))
