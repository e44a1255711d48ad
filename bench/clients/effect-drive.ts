/** Load driver for Effect-based clients: fibers as workers, timings as in `stats.drive`. */
import * as Effect from "effect/Effect"
import type * as ManagedRuntime from "effect/ManagedRuntime"
import { percentile, type RunResult } from "../stats.ts"
import type { BenchClient, HeldOutcome } from "./types.ts"

export const driveEffect = <E, R = never>(
  call: Effect.Effect<unknown, E, R>,
  total: number,
  concurrency: number
): Effect.Effect<RunResult, E, R> =>
  Effect.suspend(() => {
    const latencies = new Float64Array(total)
    let next = 0
    const worker: Effect.Effect<void, E, R> = Effect.suspend(() => {
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
export const holdEffect = <E, R = never>(call: Effect.Effect<unknown, E, R>, count: number): Effect.Effect<HeldOutcome, never, R> =>
  Effect.suspend(() => {
    let fulfilled = 0
    let rejected = 0
    const counted = Effect.matchCause(call, { onSuccess: () => void fulfilled++, onFailure: () => void rejected++ })
    return Effect.map(
      Effect.forEach(Array.from({ length: count }), () => counted, { concurrency: "unbounded", discard: true }),
      () => ({ fulfilled, rejected })
    )
  })

/**
 * A client whose calls are effects run in `runtime`: one call per promise, a
 * drive or a hold as fibers of one program, `close` disposing the runtime.
 */
export const runtimeClient = <R, ER>(
  runtime: ManagedRuntime.ManagedRuntime<R, ER>,
  calls: {
    readonly callTool: Effect.Effect<unknown, unknown, R>
    readonly ping: Effect.Effect<unknown, unknown, R>
    readonly callToolWithProgress?: Effect.Effect<unknown, unknown, R> | undefined
  }
): BenchClient => {
  const { callTool, ping, callToolWithProgress } = calls
  return {
    callTool: () => runtime.runPromise(callTool),
    ping: () => runtime.runPromise(ping),
    ...(callToolWithProgress === undefined ? {} : { callToolWithProgress: () => runtime.runPromise(callToolWithProgress) }),
    drive: (op, total, concurrency) =>
      runtime.runPromise(
        driveEffect(
          op === "ping" ? ping : op === "callToolWithProgress" && callToolWithProgress !== undefined ? callToolWithProgress : callTool,
          total,
          concurrency
        )
      ),
    holdAsFibers: (count) => runtime.runPromise(holdEffect(callTool, count)),
    close: () => runtime.dispose()
  }
}
