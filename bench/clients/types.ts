/** What every client under benchmark offers the driver. */
import type { RunResult } from "../stats.ts"

/** The calls a driver makes; `callToolWithProgress` only on clients that have it. */
export type Operation = "callTool" | "ping" | "callToolWithProgress"

export interface BenchClient {
  readonly callTool: () => Promise<unknown>
  readonly ping: () => Promise<unknown>
  /**
   * Effect-based clients drive the load from inside Effect (fibers as
   * workers), the way an Effect application would call them.
   */
  readonly drive?: (op: Operation, total: number, concurrency: number) => Promise<RunResult>
  /**
   * Effect-based clients: starts `count` calls at once as fibers of one
   * Effect program (`Effect.forEach`, unbounded), the way an Effect
   * application holds many calls; resolves once all have settled.
   */
  readonly holdAsFibers?: (count: number) => Promise<HeldOutcome>
  readonly close: () => Promise<void>
  /**
   * `tools/call` with a progress token, watching its `notifications/progress`
   * the way a user of the client would (a progress callback, or counting
   * lines for the raw requester). Clients without one leave it out.
   */
  readonly callToolWithProgress?: () => Promise<unknown>
  /** How many `notifications/progress` the calls with a progress token have seen so far. */
  readonly progressReceived?: () => number
}

/** The protocol revision a client speaks: the handshake era or the stateless one. */
export type Protocol = "2025-11-25" | "2026-07-28"

export interface ClientOptions {
  /** Default "2025-11-25" (the `initialize` handshake). */
  readonly protocol?: Protocol | undefined
}

/** How many of the calls `holdAsFibers` started succeeded and failed. */
export interface HeldOutcome {
  readonly fulfilled: number
  readonly rejected: number
}
