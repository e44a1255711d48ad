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
  readonly close: () => Promise<void>
}
