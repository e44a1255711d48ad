/**
 * A circuit breaker for reconnection: after `failureThreshold` connect
 * attempts fail in a row it opens, and no attempt is made until `cooldown`
 * has passed; then it half-opens and lets one trial through. The trial's
 * success closes it, its failure opens it again for another cool-down.
 *
 * Pure state and transitions; the caller owns the clock (TestClock-friendly).
 */
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"

export interface CircuitBreakerOptions {
  /** Failures in a row that open the circuit (default 5). */
  readonly failureThreshold?: number | undefined
  /** How long the circuit stays open before a trial attempt (default 60 s). */
  readonly cooldown?: Duration.Input | undefined
}

export type CircuitState = Data.TaggedEnum<{
  Closed: { readonly failures: number }
  Open: { readonly until: number }
  HalfOpen: {}
}>
export const CircuitState = Data.taggedEnum<CircuitState>()

export const DEFAULT_FAILURE_THRESHOLD = 5
export const DEFAULT_COOLDOWN_MS = 60_000

export interface CircuitBreaker {
  readonly state: CircuitState
  readonly failureThreshold: number
  readonly cooldownMs: number
}

export const make = (options: CircuitBreakerOptions = {}): CircuitBreaker => ({
  state: CircuitState.Closed({ failures: 0 }),
  failureThreshold: Math.max(1, options.failureThreshold ?? DEFAULT_FAILURE_THRESHOLD),
  cooldownMs: options.cooldown === undefined ? DEFAULT_COOLDOWN_MS : Math.max(0, Duration.toMillis(options.cooldown))
})

/** How long to wait before an attempt may be made (0: now). Moves Open to HalfOpen once the cool-down is over. */
export const admit = (breaker: CircuitBreaker, now: number): { readonly breaker: CircuitBreaker; readonly waitMs: number } => {
  const s = breaker.state
  if (s._tag !== "Open") return { breaker, waitMs: 0 }
  if (now >= s.until) return { breaker: { ...breaker, state: CircuitState.HalfOpen() }, waitMs: 0 }
  return { breaker, waitMs: s.until - now }
}

export const onSuccess = (breaker: CircuitBreaker): CircuitBreaker => ({
  ...breaker,
  state: CircuitState.Closed({ failures: 0 })
})

export const onFailure = (breaker: CircuitBreaker, now: number): CircuitBreaker => {
  const s = breaker.state
  const open = { ...breaker, state: CircuitState.Open({ until: now + breaker.cooldownMs }) }
  switch (s._tag) {
    case "HalfOpen":
    case "Open":
      return open
    case "Closed":
      return s.failures + 1 >= breaker.failureThreshold
        ? open
        : { ...breaker, state: CircuitState.Closed({ failures: s.failures + 1 }) }
  }
}

export const isOpen = (breaker: CircuitBreaker): boolean => breaker.state._tag === "Open"
