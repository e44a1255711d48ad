/**
 * The instance's lease on Redis.
 *
 * - `<prefix>instance:<id>` holds the fencing token (from `INCR
 *   <prefix>fence`) and expires `leaseMs` after its last renewal; a fiber of
 *   the layer's scope renews it every `leaseMs / 3`.
 * - `<prefix>instances` is a sorted set of the instances (id → time of the
 *   last renewal, in ms), which the reaper walks to find the instances whose
 *   lease key is gone.
 * - Closing the scope deletes the lease key and the instance's member (the
 *   member stays while the instance still has requests recorded as running,
 *   so that a reaper answers them), and `<prefix>fence` once no instance is
 *   left: tokens only need to differ between the leases of one id, and an id
 *   is never taken by another process.
 *
 * A renewal that finds the key gone or holding another token, or no renewal
 * confirmed for `leaseMs` (the process was paused, or Redis could not be
 * reached), means the lease is lost: `held` turns false, work run with `run`
 * is interrupted, and the log says so. The instance then takes a new lease
 * (a new token, the same id) once that work has ended, and says so too.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redis from "effect/persistence/Redis"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { InstanceLease, type InstanceLeaseShape, LeaseLost, randomId, WriterToken } from "./InstanceLease.ts"

/**
 * Where the lease lives and how long it lasts.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Put before every key; one prefix per fleet. Default `"mcp:"`. */
  readonly prefix?: string | undefined
  /** How long the lease lasts without a renewal, in milliseconds. Default 5000 (at least 300). */
  readonly leaseMs?: number | undefined
  /** This instance's id; default a random one (see `InstanceLease.randomId`). Never share one between processes. */
  readonly id?: string | undefined
}

/**
 * The defaults `Options` leaves out.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults = {
  prefix: "mcp:",
  leaseMs: 5000,
  /** How long the set of instances outlives its last renewal (every instance gone without releasing). */
  indexTtlMs: 60 * 60 * 1000
} as const

/**
 * The key of an instance's lease, which fenced writes compare with their token.
 *
 * @since 0.1.0
 * @category utils
 */
export const leaseKey = (prefix: string, id: string): string => `${prefix}instance:${id}`

/**
 * The sorted set of the fleet's instances.
 *
 * @since 0.1.0
 * @category utils
 */
export const instancesKey = (prefix: string): string => `${prefix}instances`

const nowMs = `local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000)`

const acquireScript = Redis.script(
  (fence: string, lease: string, instances: string, id: string, leaseMs: number, indexTtlMs: number) => [
    fence,
    lease,
    instances,
    id,
    leaseMs,
    indexTtlMs
  ],
  {
    numberOfKeys: 3,
    lua: `
${nowMs}
local token = redis.call('INCR', KEYS[1])
redis.call('SET', KEYS[2], token, 'PX', ARGV[2])
redis.call('ZADD', KEYS[3], now, ARGV[1])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
return token
`
  }
).withReturnType<number>()

// 1 when renewed, 0 when the key is gone or holds another token.
const renewScript = Redis.script(
  (lease: string, instances: string, token: string, id: string, leaseMs: number, indexTtlMs: number) => [
    lease,
    instances,
    token,
    id,
    leaseMs,
    indexTtlMs
  ],
  {
    numberOfKeys: 2,
    lua: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
${nowMs}
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], now, ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1
`
  }
).withReturnType<number>()

const releaseScript = Redis.script(
  (lease: string, instances: string, fence: string, running: string, token: string, id: string) => [
    lease,
    instances,
    fence,
    running,
    token,
    id
  ],
  {
    numberOfKeys: 4,
    lua: `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
if redis.call('EXISTS', KEYS[4]) == 0 then redis.call('ZREM', KEYS[2], ARGV[2]) end
if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('DEL', KEYS[3]) end
return 1
`
  }
).withReturnType<number>()

/**
 * The key of the requests an instance has running (see `RedisInFlight`); releasing the lease keeps
 * the instance's member while it exists, so a reaper answers them.
 *
 * @since 0.1.0
 * @category utils
 */
export const runningKey = (prefix: string, id: string): string => `${prefix}running:${id}`

/**
 * Takes a lease for this instance (failing when Redis refuses the first
 * one), renews it until the scope closes, then releases it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options?: Options
): Effect.Effect<InstanceLeaseShape, Redis.RedisError, Redis.Redis | Scope.Scope> =>
  Effect.gen(function*() {
    const redis = yield* Redis.Redis
    const prefix = options?.prefix ?? defaults.prefix
    const leaseMs = Math.max(300, Math.floor(options?.leaseMs ?? defaults.leaseMs))
    const id = options?.id ?? randomId()
    const key = leaseKey(prefix, id)
    const fence = `${prefix}fence`
    const instances = instancesKey(prefix)
    const acquire = redis.eval(acquireScript)
    const renew = redis.eval(renewScript)
    const release = redis.eval(releaseScript)

    let token: number | undefined
    // When the last confirmed renewal was sent: the lease lasts leaseMs from then at least.
    let confirmedAt = 0
    let lost = Deferred.makeUnsafe<void>()
    // Work run under a lease that is not over yet: a new lease waits for it.
    let running = 0
    let closing = false

    const held = () => token !== undefined && performance.now() - confirmedAt < leaseMs

    const take = Effect.gen(function*() {
      const sent = performance.now()
      const taken = Number(yield* acquire(fence, key, instances, id, leaseMs, defaults.indexTtlMs))
      token = taken
      confirmedAt = sent
      lost = Deferred.makeUnsafe<void>()
      return taken
    })

    const lose = (reason: string) =>
      Effect.suspend(() => {
        if (token === undefined) return Effect.void
        const was = token
        token = undefined
        return Effect.logWarning(
          `Instance ${id} lost its lease (token ${was}): ${reason}. It serves no fleet work until it takes a new lease.`
        ).pipe(Effect.ensuring(Effect.sync(() => Deferred.doneUnsafe(lost, Effect.void))))
      })

    const tick = Effect.gen(function*() {
      if (closing) return
      if (token === undefined) {
        if (running > 0) return
        const taken = yield* take
        yield* Effect.logInfo(`Instance ${id} holds a new lease (token ${taken})`)
        return
      }
      if (!held()) return yield* lose(`no renewal confirmed within ${leaseMs} ms`)
      const sent = performance.now()
      const renewed = Number(yield* renew(key, instances, String(token), id, leaseMs, defaults.indexTtlMs))
      if (renewed === 1) {
        // A renewal that came back after the lease could have run out confirms nothing.
        if (performance.now() - sent < leaseMs) confirmedAt = sent
        return
      }
      yield* lose("its key is gone or holds another token")
    }).pipe(
      Effect.catchCause((cause) => Effect.logDebug(`Instance ${id}: lease renewal failed; trying again`, cause))
    )

    yield* take
    yield* tick.pipe(
      Effect.repeat(Schedule.spaced(Math.floor(leaseMs / 3))),
      Effect.forkScoped
    )
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closing = true
        const was = token
        token = undefined
        Deferred.doneUnsafe(lost, Effect.void)
        return release(key, instances, fence, runningKey(prefix, id), String(was ?? ""), id)
      }).pipe(Effect.ignore)
    )

    const run = <A, E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<A, E | LeaseLost, R> =>
      Effect.suspend(() => {
        if (!held()) return Effect.fail(new LeaseLost({ instanceId: id }))
        const ends = lost
        running++
        return Effect.raceFirst(
          Effect.provideService(work, WriterToken, token),
          Effect.andThen(Deferred.await(ends), Effect.fail(new LeaseLost({ instanceId: id })))
        ).pipe(Effect.ensuring(Effect.sync(() => {
          running--
        })))
      })

    return {
      id,
      key,
      token: () => (held() ? token : undefined),
      held,
      awaitLost: Effect.suspend(() => held() ? Deferred.await(lost) : Effect.void),
      run
    } satisfies InstanceLeaseShape
  })

/**
 * The Redis lease as the `InstanceLease` service, for the life of the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<InstanceLease, Redis.RedisError, Redis.Redis> =>
  Layer.effect(InstanceLease)(make(options))
