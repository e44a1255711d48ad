/**
 * The client's keep-alive: pings the server at an interval and marks the
 * connection `Degraded` after enough consecutive failures, `Healthy` again on
 * the next answered ping.
 */
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type { RequestError } from "../../McpError.ts"
import type { ClientTransportShape } from "../ClientTransport.ts"

/**
 * When and how the client pings the server to notice a dead connection.
 *
 * @since 0.1.0
 * @category models
 */
export interface KeepAliveOptions {
  /** Time between pings. */
  readonly interval: Duration.Input
  /** How long one ping may take (default: the client's request timeout). */
  readonly timeout?: Duration.Input | undefined
  /** Consecutive failed pings that mark the connection degraded (default 3). */
  readonly failureThreshold?: number | undefined
}

/**
 * The connection's health as keep-alive sees it.
 *
 * @since 0.1.0
 * @category models
 */
export type Health = Data.TaggedEnum<{
  Healthy: {}
  /** Keep-alive pings failed `consecutiveFailures` times in a row (at least the threshold). */
  Degraded: { readonly consecutiveFailures: number; readonly lastError: RequestError }
}>

/**
 * Constructors and guards of `Health`.
 *
 * @since 0.1.0
 * @category models
 */
export const Health = Data.taggedEnum<Health>()

const DEFAULT_FAILURE_THRESHOLD = 3

/**
 * The connection's health, kept up to date by a ping loop in the scope when
 * `options` are given (else it stays `Healthy`).
 */
export const make = (
  transport: ClientTransportShape,
  options: KeepAliveOptions | undefined,
  requestTimeout: Duration.Duration
): Effect.Effect<SubscriptionRef.SubscriptionRef<Health>, never, Scope.Scope> =>
  Effect.flatMap(SubscriptionRef.make<Health>(Health.Healthy()), (health) => {
    if (options === undefined) return Effect.succeed(health)
    const threshold = Math.max(1, options.failureThreshold ?? DEFAULT_FAILURE_THRESHOLD)
    const pingTimeout = options.timeout ?? requestTimeout
    let failures = 0
    return Effect.sleep(options.interval).pipe(
      Effect.andThen(transport.request("ping", undefined, { timeout: pingTimeout })),
      Effect.matchEffect({
        onSuccess: () => {
          failures = 0
          return SubscriptionRef.set(health, Health.Healthy())
        },
        onFailure: (error) => {
          failures++
          return failures >= threshold
            ? SubscriptionRef.set(health, Health.Degraded({ consecutiveFailures: failures, lastError: error }))
            : Effect.void
        }
      }),
      Effect.forever,
      Effect.forkScoped({ startImmediately: true }),
      Effect.as(health)
    )
  })
