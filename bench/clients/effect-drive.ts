/** Load driver for Effect-based clients: fibers as workers, timings as in `stats.drive`. */
import * as Effect from "effect/Effect"
import { percentile, type RunResult } from "../stats.ts"
import type { HeldOutcome } from "./types.ts"

export const driveEffect = <E>(
  call: Effect.Effect<unknown, E>,
  total: number,
  concurrency: number
): Effect.Effect<RunResult, E> =>
  Effect.suspend(() => {
    const latencies = new Float64Array(total)
    let next = 0
    const worker: Effect.Effect<void, E> = Effect.suspend(() => {
      if (next >= total) return Effect.void
      const i = next++
      const t0 = performance.now()
      return Effect.flatMap(call, () => {
        latencies[i] = performance.now() - t0
        return worker
      })
    })
    const start = performance.now()
    return Effect.forEach(Array.from({ length: concurrency }), () => worker, { concurrency, discard: true }).pipe(
      Effect.map(() => {
        const elapsed = performance.now() - start
        const sorted = Array.from(latencies).sort((a, b) => a - b)
        return { rps: (total / elapsed) * 1000, p50: percentile(sorted, 50), p99: percentile(sorted, 99) }
      })
    )
  })

/** `count` calls at once, each a fiber of this one effect (see `BenchClient.holdAsFibers`). */
export const holdEffect = <E>(call: Effect.Effect<unknown, E>, count: number): Effect.Effect<HeldOutcome> =>
  Effect.suspend(() => {
    let fulfilled = 0
    let rejected = 0
    const counted = Effect.matchCause(call, { onSuccess: () => void fulfilled++, onFailure: () => void rejected++ })
    return Effect.map(
      Effect.forEach(Array.from({ length: count }), () => counted, { concurrency: "unbounded", discard: true }),
      () => ({ fulfilled, rejected })
    )
  })
