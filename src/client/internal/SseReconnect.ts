/**
 * Reconnect pacing for SSE streams. The user's `Schedule` is the policy (delay,
 * jitter, cap, budget); a server's `retry:` value replaces the delay but still
 * spends one attempt of the budget, so a server that keeps failing cannot make
 * us loop forever. A connection that delivered data starts a fresh budget.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Pull from "effect/Pull"
import * as Schedule from "effect/Schedule"

/**
 * 1 s, growing ×1.5 per attempt, ±20 % jitter, capped at 30 s, at most 5
 * attempts in a row before the listener gives up.
 *
 * @since 0.1.0
 * @category utils
 */
export const defaultSchedule: Schedule.Schedule<unknown, unknown> = Schedule.exponential("1 second", 1.5).pipe(
  Schedule.jittered,
  Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.seconds(30)))),
  Schedule.upTo({ times: 5 })
)

export interface Backoff {
  /**
   * Spends one attempt. The delay in milliseconds before the next try, or
   * `undefined` when the budget is spent. `serverRetryMs` wins over the
   * schedule's own delay.
   */
  readonly next: (failure: unknown, serverRetryMs: number | undefined) => Effect.Effect<number | undefined>
  /** Starts a fresh budget (after a connection that worked). */
  readonly reset: Effect.Effect<void>
  readonly attempts: () => number
}

export const make = Effect.fnUntraced(function*(schedule: Schedule.Schedule<unknown, unknown>) {
  let step = yield* Schedule.toStep(schedule)
  let attempts = 0
  const next = (failure: unknown, serverRetryMs: number | undefined): Effect.Effect<number | undefined> =>
    Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => step(now, failure)),
      Effect.map(([, delay]) => {
        attempts++
        return serverRetryMs ?? Duration.toMillis(delay)
      }),
      Pull.catchDone(() => Effect.succeed(undefined))
    )
  const reset = Effect.map(Schedule.toStep(schedule), (fresh) => {
    step = fresh
    attempts = 0
  })
  const backoff: Backoff = { next, reset, attempts: () => attempts }
  return backoff
})
