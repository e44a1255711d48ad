/**
 * Whether the store a fleet shares (its bus, its event log) can be reached
 * right now. The HTTP server transport reads it before every request that
 * needs that store, and refuses such a request with 503 and `Retry-After`
 * at once while it cannot be reached, instead of letting it hang or half
 * work. Requests that need nothing shared (a stateless-era call other than
 * `subscriptions/listen`) are served either way.
 *
 * Without the service, everything is in the process and always available.
 */
import * as Context from "effect/Context"

/**
 * The reading: `available` is called on every request that needs the
 * shared store, so it must be cheap (a flag, not a round trip).
 *
 * @since 0.1.0
 * @category models
 */
export interface AvailabilityShape {
  readonly available: () => boolean
  /** Seconds a refused client is told to wait (`Retry-After`). */
  readonly retryAfterSeconds: number
  /** What the store is, as the health endpoint reports it (`"redis"`). */
  readonly kind?: string | undefined
}

/**
 * The availability of the shared store, as a service.
 *
 * @since 0.1.0
 * @category services
 */
export class Availability extends Context.Service<Availability, AvailabilityShape>()(
  "effect-mcp-transport/Availability"
) {}
