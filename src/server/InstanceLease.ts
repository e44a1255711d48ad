/**
 * Who this instance is in its fleet, and whether it may still act for the
 * fleet. An instance holds a lease (a key in the shared store that expires
 * unless renewed) and a fencing token (a number that changes each time the
 * lease is taken again); writes that an instance must not make once its
 * lease is gone carry the token, and the store refuses them when the token
 * is no longer the one the lease holds.
 *
 * An instance that was paused (a long garbage collection, SIGSTOP, a
 * suspended VM) past its lease may wake up believing it still serves
 * requests that the fleet has already given up on: the fence is what keeps
 * its late writes out, and `held` is what makes it refuse fleet work until
 * it has a lease again.
 *
 * Without the service, or with `layerMemory`, the instance is alone: a
 * random id, a lease never lost, nothing fenced.
 */
import { randomBytes } from "node:crypto"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * A write refused because the writer's lease is gone or was taken again with
 * another token: the instance is no longer the one the fleet counts on.
 *
 * @since 0.1.0
 * @category errors
 */
export class LeaseLost extends Data.TaggedError("LeaseLost")<{
  /** The instance whose lease it was. */
  readonly instanceId: string
}> {
  override get message(): string {
    return `The lease of instance ${this.instanceId} is lost: the write was refused`
  }
}

/**
 * This instance's identity and lease.
 *
 * @since 0.1.0
 * @category models
 */
export interface InstanceLeaseShape {
  /** This instance's id in the fleet; the same for the life of the process. */
  readonly id: string
  /**
   * The key in the shared store that holds the lease's token, against which
   * fenced writes are checked; `undefined` where nothing is shared (nothing to fence).
   */
  readonly key: string | undefined
  /** The fencing token of the lease held now; `undefined` while no lease is held. */
  readonly token: () => number | undefined
  /**
   * Whether the lease is held now. False from the moment it may have
   * expired (measured on this instance's clock from the last renewal the
   * store confirmed), so an instance that was paused knows it at once.
   */
  readonly held: () => boolean
  /** Completes when the lease held now is lost (at once when none is held). */
  readonly awaitLost: Effect.Effect<void>
  /**
   * Runs work for the fleet under the lease held now, its fenced writes
   * carrying that lease's token (`WriterToken`): refused with `LeaseLost`
   * when none is held, and interrupted (then failed with `LeaseLost`) when
   * the lease is lost. A new lease is taken only once such work has ended.
   */
  readonly run: <A, E, R>(work: Effect.Effect<A, E, R>) => Effect.Effect<A, E | LeaseLost, R>
}

/**
 * The instance's lease as a service; `RedisFleet.layer` provides one on Redis.
 *
 * @since 0.1.0
 * @category services
 */
export class InstanceLease extends Context.Service<InstanceLease, InstanceLeaseShape>()(
  "effect-mcp-transport/InstanceLease"
) {}

/**
 * The token of the lease that work was started under (set by `run`), which
 * its fenced writes carry, including those of fibers it forks: work that
 * outlives its lease (a handler still running after the instance took a new
 * one) writes with the old token and is refused. `undefined` outside `run`:
 * writes then carry the token held at the time of writing.
 *
 * @since 0.1.0
 * @category references
 */
export const WriterToken = Context.Reference<number | undefined>("effect-mcp-transport/InstanceLease/WriterToken", {
  defaultValue: () => undefined
})

/**
 * A new instance id: 12 characters of base64url (72 random bits).
 *
 * @since 0.1.0
 * @category constructors
 */
export const randomId = (): string => randomBytes(9).toString("base64url")

/**
 * A lease of an instance alone: a random id, never lost, nothing to fence.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as InstanceLease from "effect-mcp-transport/server/InstanceLease"
 *
 * const lease = InstanceLease.makeMemory()
 * const program = Effect.log(`instance ${lease.id}, lease held: ${lease.held()}`)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (id: string = randomId()): InstanceLeaseShape => ({
  id,
  key: undefined,
  token: () => 0,
  held: () => true,
  awaitLost: Effect.never,
  run: (work) => work
})

/**
 * `makeMemory` as the `InstanceLease` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<InstanceLease> = Layer.sync(InstanceLease)(() => makeMemory())
