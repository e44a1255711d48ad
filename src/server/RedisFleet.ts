/**
 * Everything the instances of one server share, on one Redis: the `Bus`
 * (notifications and broadcasts reach every instance), the resumable event
 * log (`EventStore`, one Redis Stream per SSE stream), the instance's lease
 * (`InstanceLease`, which fences the log's appends), the registry of the
 * requests each instance is serving (`InFlight`, whose reaper answers the
 * requests of an instance that died) and the `Availability` the HTTP server
 * transport reads to answer 503 at once while Redis cannot be reached or
 * the lease is not held. No instance owns anything; an instance can stop at
 * any time.
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
import * as Option from "effect/Option"
import type * as Redis from "effect/persistence/Redis"
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
 * The availability of the connection: the client is ready (connected, not
 * reconnecting) and, where there is an `InstanceLease`, its lease is held.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerAvailability = (options?: {
  readonly retryAfterSeconds?: number | undefined
}): Layer.Layer<Availability, never, NodeRedis.NodeRedis> =>
  Layer.effect(Availability)(Effect.gen(function*() {
    const redis = yield* NodeRedis.NodeRedis
    const lease = Option.getOrUndefined(yield* Effect.serviceOption(InstanceLease))
    return {
      available: lease === undefined ? () => redis.client.isReady : () => redis.client.isReady && lease.held(),
      retryAfterSeconds: options?.retryAfterSeconds ?? 1
    }
  }))

/**
 * The bus, the event log, the session registry, the inboxes, the
 * instance's lease, the in-flight registry and their availability on one
 * Redis connection.
 *
 * @example
 * ```ts
 * import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
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
): Layer.Layer<Bus | EventStore | Availability | SessionRegistry | Inbox | InstanceLease | InFlight, Redis.RedisError> =>
  Layer.unwrap(Effect.sync(() => {
    // One id names the instance's lease, its inbox and its requests to clients.
    const id = options.instanceId ?? randomId()
    const leased = RedisEventStore.layer(options).pipe(
      Layer.provideMerge(RedisInstanceLease.layer({ prefix: options.prefix, leaseMs: options.leaseMs, id }))
    )
    const shared = Layer.mergeAll(
      RedisInFlight.layer({ prefix: options.prefix, leaseMs: options.leaseMs }),
      RedisInbox.layer({ prefix: options.prefix, instanceId: id }),
      layerAvailability(options)
    ).pipe(Layer.provideMerge(leased))
    const bus = RedisBus.layer({ prefix: options.prefix })
    return Layer.mergeAll(
      RedisSessionRegistry.layer({ prefix: options.prefix }).pipe(Layer.provideMerge(bus)),
      shared
    ).pipe(Layer.provide(layerConnection(options)))
  }))
