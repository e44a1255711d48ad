/**
 * `rateLimit`: token buckets per key, kept in the middleware's memory or in
 * a store provided as `SharedRateLimitBuckets`. Re-exported by `Middleware`.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { RpcError } from "../../McpError.ts"
import { ErrorCode, type McpRequest, type Middleware } from "./MiddlewareShape.ts"

/**
 * Options of `rateLimit`: a token bucket of `capacity` tokens per key, one token back every `refillEvery`.
 *
 * @since 0.1.0
 * @category models
 */
export interface RateLimitOptions {
  /** The largest burst a key may make: its bucket's tokens, full at first. */
  readonly capacity: number
  /** How long one token takes to come back, e.g. `"1 second"`. */
  readonly refillEvery: Duration.Input
  /**
   * Whose bucket a request takes from; `undefined` exempts the request.
   * Default: its principal, and one shared bucket (`"anonymous"`) for
   * requests with none.
   */
  readonly key?: ((request: McpRequest) => string | undefined) | undefined
  /** Buckets kept at most; past it, full buckets (their keys idle) are dropped. Default 10 000. Not for `SharedRateLimitBuckets`, which bounds itself. */
  readonly maxKeys?: number | undefined
}

/**
 * The size of a `rateLimit` bucket: `capacity` tokens, one back every `refillMs`.
 *
 * @since 0.1.0
 * @category models
 */
export interface RateLimitBucket {
  readonly capacity: number
  readonly refillMs: number
}

/**
 * Where `rateLimit` keeps its token buckets. `take` takes one token from
 * `key`'s bucket at `now` (a bucket seen for the first time is full) and
 * answers `undefined`, or, when the bucket is empty, the milliseconds until
 * it has a token again. A store shared by several instances of a server
 * (one on Redis, say) limits a principal across all of them.
 *
 * @since 0.1.0
 * @category models
 */
export interface RateLimitBuckets {
  readonly take: (key: string, bucket: RateLimitBucket, now: number) => Effect.Effect<number | undefined>
}

/** In-memory buckets, read and written synchronously. */
const memoryBuckets = (maxKeys: number) => {
  // Tokens as of `at`; what came back since is added when the bucket is next read.
  const buckets = new Map<string, { tokens: number; at: number; capacity: number; refillMs: number }>()
  const level = (bucket: { tokens: number; at: number; capacity: number; refillMs: number }, now: number) =>
    Math.min(bucket.capacity, bucket.tokens + (now - bucket.at) / bucket.refillMs)
  const sweep = (now: number) => {
    for (const [key, bucket] of buckets) {
      if (level(bucket, now) >= bucket.capacity) buckets.delete(key)
    }
  }
  return (key: string, size: RateLimitBucket, now: number): number | undefined => {
    let bucket = buckets.get(key)
    if (bucket === undefined) {
      if (buckets.size >= maxKeys) sweep(now)
      buckets.set(key, bucket = { tokens: size.capacity, at: now, capacity: size.capacity, refillMs: size.refillMs })
    }
    bucket.capacity = size.capacity
    bucket.refillMs = size.refillMs
    bucket.tokens = level(bucket, now)
    bucket.at = now
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return undefined
    }
    return Math.ceil((1 - bucket.tokens) * size.refillMs)
  }
}

/**
 * Token buckets in this process's memory, at most `maxKeys` of them (default
 * 10 000; past it, full buckets, their keys idle, are dropped). What
 * `rateLimit` uses on its own; provide one as `SharedRateLimitBuckets` to
 * share buckets between servers of one process, e.g. in a test.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRateLimitBuckets = (options: { readonly maxKeys?: number | undefined } = {}): RateLimitBuckets => {
  const take = memoryBuckets(options.maxKeys ?? 10_000)
  return { take: (key, bucket, now) => Effect.sync(() => take(key, bucket, now)) }
}

/**
 * The buckets every `rateLimit` takes from, when provided (to the transport
 * that serves the handler, or around the handler's calls). Default: none,
 * and each `rateLimit` keeps buckets of its own in memory. Buckets are
 * shared by key: give `rateLimit`s with different limits different `key`s.
 *
 * @since 0.1.0
 * @category references
 */
export class SharedRateLimitBuckets extends Context.Reference<RateLimitBuckets | undefined>(
  "effect-mcp-transport/server/Middleware/SharedRateLimitBuckets",
  { defaultValue: () => undefined }
) {}

/**
 * Refuses a request when its key's bucket is empty, with `RateLimited`
 * (-32029) and `data.retryAfterMs`. The buckets live in the middleware value
 * (every handler built from a server with it shares them), unless
 * `SharedRateLimitBuckets` provides a store.
 *
 * @since 0.1.0
 * @category constructors
 */
export const rateLimit = (options: RateLimitOptions): Middleware => {
  const size: RateLimitBucket = {
    capacity: Math.max(1, options.capacity),
    refillMs: Math.max(1, Duration.toMillis(Duration.fromInputUnsafe(options.refillEvery)))
  }
  const keyOf = options.key ?? ((request: McpRequest) => request.principal ?? "anonymous")
  const own = memoryBuckets(options.maxKeys ?? 10_000)
  return (next) => (request) => {
    const key = keyOf(request)
    if (key === undefined) return next(request)
    const decide = (retryAfterMs: number | undefined) =>
      retryAfterMs === undefined ? next(request) : Effect.fail(
        new RpcError({
          code: ErrorCode.RateLimited,
          rpcMessage: `Rate limited: retry in ${retryAfterMs} ms`,
          data: { retryAfterMs }
        })
      )
    return Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.flatMap(SharedRateLimitBuckets, (shared) =>
        shared === undefined ? decide(own(key, size, now)) : Effect.flatMap(shared.take(key, size, now), decide)))
  }
}
