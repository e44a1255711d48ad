/**
 * How many upstream connections a bridge keeps open at once. Each session
 * of the HTTP front gets its own upstream, which for a stdio server is a
 * child process of tens of megabytes: without a cap of their own, clients
 * could start as many as the transport has sessions (1000 by default).
 *
 * A slot is taken by a key (a session id, or the shared upstream's key)
 * when the transport admits the session (`Handler.admitSession`), so a
 * refused client costs no process and concurrent `initialize`s cannot pass
 * the cap between the check and the start; an upstream opened for a key
 * that holds no slot takes one then, or fails. The slot is given back when
 * the key's upstream closes or its session ends.
 *
 * @since 0.1.0
 */
import type { SessionRefusal } from "../server/Handler.ts"

/**
 * Upstream connections open at once by default.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_MAX_UPSTREAMS = 16

/**
 * What a client refused at the cap is told to wait, in seconds: a session may end at any moment, the bridge cannot tell when.
 *
 * @since 0.1.0
 * @category constants
 */
export const RETRY_AFTER_SECONDS = 5

/**
 * The slots of one bridge.
 *
 * @since 0.1.0
 * @category models
 */
export interface UpstreamSlots {
  /** Takes a slot for `key`; true when it holds one now (taken before, or just now). */
  readonly take: (key: string) => boolean
  /** Gives back `key`'s slot, if it holds one. */
  readonly release: (key: string) => void
  /** The refusal for a session at the cap, `undefined` when a slot was taken for it. */
  readonly admit: (sessionId: string) => SessionRefusal | undefined
  /** Slots held now. */
  readonly size: () => number
  readonly max: number
}

/**
 * Slots for at most `max` upstream connections (a whole number, at least 1).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (max: number = DEFAULT_MAX_UPSTREAMS): UpstreamSlots => {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxUpstreams must be a whole number of at least 1, got ${max}`)
  const held = new Set<string>()
  const take = (key: string) => {
    if (held.has(key)) return true
    if (held.size >= max) return false
    held.add(key)
    return true
  }
  return {
    take,
    release: (key) => {
      held.delete(key)
    },
    admit: (sessionId) =>
      take(sessionId) ? undefined : {
        retryAfterSeconds: RETRY_AFTER_SECONDS,
        message: `Service unavailable: the bridge runs its limit of ${max} upstream connections`
      },
    size: () => held.size,
    max
  }
}
