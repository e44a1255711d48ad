/**
 * The contract between `npm run bench` (bench/main.ts) and each workload in
 * `bench/workloads/`. A workload measures every implementation that can do it
 * in the same process tree and run, and returns rows; the orchestrator prints
 * one table and checks the targets as ratios between rows of the same run.
 */

/**
 * What a row measures. Throughput is higher-is-better; the rest lower-is-better.
 * "CPU µs/req" is a process's CPU time per request (all threads): less moved by
 * other load on the machine than req/s.
 */
export type Metric =
  | "req/s"
  | "ms"
  | "MiB"
  | "KiB/req"
  | "CPU µs/req"
  | "server CPU µs/req"
  | "server CPU µs/event"
  | "round trips/call"
  | "bytes/session"
  | "bytes/key"
  | "keys/session"
  | "events/session"
  | "count"
  | "progress/call"

export interface Row {
  /** e.g. "stdio client", "stdio server", "http json", "large 10 MiB", "in flight", "cold start", "bridge" */
  readonly workload: string
  /** what varies within the workload: "tools/call c32", "ping c1", "stdio", "teardown"… */
  readonly variant: string
  /** the implementation measured: "ours", "sdk", "raw", "effect-ai", "ours→sdk"… */
  readonly impl: string
  readonly metric: Metric
  readonly median: number
  readonly min: number
  readonly max: number
  /** latency percentiles in milliseconds, where the workload measures them */
  readonly p50?: number
  readonly p99?: number
  /** number of runs the median is over */
  readonly runs: number
}

/** A ratio the issue asks for: `ours` against `peer` in the same workload and variant. */
export interface Target {
  readonly workload: string
  /** exact variant, or a pattern where "*" stands for any text ("tools/call *", "* c32") */
  readonly variant: string
  readonly ours: string
  readonly peer: string
  /** the ratio that must hold, oriented so that bigger is better for ours (e.g. 1.5 = 1.5× faster / 1/1.5 the memory) */
  readonly atLeast: number
  /** the metric it is checked on; absent: every metric both rows have */
  readonly metric?: Metric | undefined
}

export interface WorkloadOptions {
  /** runs per cell (median over them) */
  readonly runs: number
  /** smoke mode: tiny sizes, checks the harness only */
  readonly smoke: boolean
}

export interface Workload {
  readonly name: string
  readonly run: (options: WorkloadOptions) => Promise<ReadonlyArray<Row>>
  readonly targets: ReadonlyArray<Target>
  /** Implementations every row of the report is compared with, besides those its targets name. */
  readonly peers?: ReadonlyArray<string> | undefined
}

export const higherIsBetter = (metric: Metric): boolean => metric === "req/s"

/** Of two figures of `metric`, oriented so that > 1 means `a` is better than `b` (faster, or less time or memory). */
export const advantage = (metric: Metric, a: number, b: number): number => higherIsBetter(metric) ? a / b : b / a

/** A figure as reports and tables print it: `digits` decimals, by default 0 from 100, 1 from 10, else 2. */
export const formatFigure = (n: number | undefined, digits?: number): string => {
  if (n === undefined || !Number.isFinite(n)) return "n/a"
  const d = digits ?? (Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : 2)
  return n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d })
}

/** The header of a report's table of rows (bench/main.ts writes it, bench/report-format.ts reads it back). */
export const ROWS_HEADER = "| workload | variant | impl | metric | median | min | max | p50 ms | p99 ms | vs peer |"
/** The header of a report's table of targets. */
export const TARGETS_HEADER = "| workload | variant | ours | peer | metric | needs | measured | status |"

/** Whether a ratio between two rows of this metric means anything ("progress/call" is a check, not a cost). */
export const comparable = (metric: Metric): boolean => metric !== "progress/call"
