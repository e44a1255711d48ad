/** What the fleet workload's instances (server.ts) and drivers agree on. */

export interface Config {
  readonly store: "memory" | "redis"
  readonly redis?: string | undefined
  readonly prefix?: string | undefined
  /** Requests and streams at once (`maxStreams`); stateless requests past it are refused (503). */
  readonly maxStreams?: number | undefined
  readonly maxSessions?: number | undefined
  readonly name?: string | undefined
}

/** Shared by every instance, so a `requestState` one issues another accepts. */
export const REQUEST_STATE_KEY = "bench-fleet-request-state-key-0123456789"

/** The key prefix of the bench's fleet in Redis. */
export const PREFIX = "bench:"

/** The machine's monotonic clock in ms (`process.hrtime`: the same clock in every process). */
export const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6
