/** What every client under benchmark offers the driver. */
import type { RunResult } from "../stats.ts"

export interface BenchClient {
  readonly callTool: () => Promise<unknown>
  readonly ping: () => Promise<unknown>
  /**
   * Effect-based clients drive the load from inside Effect (fibers as
   * workers), the way an Effect application would call them.
   */
  readonly drive?: (op: "callTool" | "ping", total: number, concurrency: number) => Promise<RunResult>
  /**
   * Effect-based clients: starts `count` calls at once as fibers of one
   * Effect program (`Effect.forEach`, unbounded), the way an Effect
   * application holds many calls; resolves once all have settled.
   */
  readonly holdAsFibers?: (count: number) => Promise<HeldOutcome>
  readonly close: () => Promise<void>
}

/** How many of the calls `holdAsFibers` started succeeded and failed. */
export interface HeldOutcome {
  readonly fulfilled: number
  readonly rejected: number
}
