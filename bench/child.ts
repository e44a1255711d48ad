/**
 * Helpers for workloads that measure in fresh processes: run a bench script
 * with this Node and read the JSON lines it prints, and summarise runs into
 * rows. One process at a time: concurrent runs would measure each other.
 */
import { execFile } from "node:child_process"
import type { Metric, Row } from "./workload.ts"
import { median } from "./stats.ts"

export const script = (relative: string): string => new URL(relative, import.meta.url).pathname

/** Runs `node [nodeArgs] file ...args`; resolves with every JSON line of its stdout. */
export const runJsonLines = <A>(
  file: string,
  args: ReadonlyArray<string>,
  options: {
    readonly nodeArgs?: ReadonlyArray<string>
    readonly timeoutMs?: number
    /** Added to this process's environment. */
    readonly env?: Record<string, string>
  } = {}
): Promise<Array<A>> =>
  new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [...(options.nodeArgs ?? []), file, ...args],
      {
        encoding: "utf8",
        maxBuffer: 16 << 20,
        timeout: options.timeoutMs ?? 300_000,
        ...(options.env === undefined ? {} : { env: { ...process.env, ...options.env } })
      },
      (error, stdout, stderr) => {
        if (error !== null) {
          reject(new Error(`${file} ${args.join(" ")} failed: ${error.message}\n${stderr.slice(-2000)}`))
          return
        }
        resolve(
          stdout.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as A)
        )
      }
    )
  })

/** Environment list, e.g. BENCH_CLIENTS=raw,ours. */
export const envList = (name: string, fallback: string): Array<string> =>
  (process.env[name] ?? fallback).split(",").map((s) => s.trim()).filter((s) => s.length > 0)

export const envNumber = (name: string, fallback: number): number => {
  const raw = process.env[name]
  return raw === undefined || raw === "" ? fallback : Number(raw)
}

/** Collects samples per (variant, impl, metric) and turns them into rows. */
export class Samples {
  private readonly cells = new Map<
    string,
    { variant: string; impl: string; metric: Metric; values: Array<number>; p50: Array<number>; p99: Array<number> }
  >()

  private readonly workload: string

  constructor(workload: string) {
    this.workload = workload
  }

  add(variant: string, impl: string, metric: Metric, value: number, latency?: { p50: number; p99: number }): void {
    if (!Number.isFinite(value)) return
    const key = `${variant}|${impl}|${metric}`
    let cell = this.cells.get(key)
    if (cell === undefined) this.cells.set(key, cell = { variant, impl, metric, values: [], p50: [], p99: [] })
    cell.values.push(value)
    if (latency !== undefined) {
      cell.p50.push(latency.p50)
      cell.p99.push(latency.p99)
    }
  }

  rows(): Array<Row> {
    return [...this.cells.values()].map((c) => ({
      workload: this.workload,
      variant: c.variant,
      impl: c.impl,
      metric: c.metric,
      median: median(c.values),
      min: Math.min(...c.values),
      max: Math.max(...c.values),
      ...(c.p50.length > 0 ? { p50: median(c.p50), p99: median(c.p99) } : {}),
      runs: c.values.length
    }))
  }
}

/** CPU time (user + system) of another process in microseconds, from /proc (Linux); NaN elsewhere. */
export const processCpuUs = async (pid: number): Promise<number> => {
  try {
    const { readFile } = await import("node:fs/promises")
    const stat = await readFile(`/proc/${pid}/stat`, "utf8")
    // Fields after the command name (which may hold spaces) start at ") ".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const ticks = Number(fields[11]) + Number(fields[12]) // utime, stime
    return (ticks * 1_000_000) / CLOCK_TICKS
  } catch {
    return Number.NaN
  }
}

/** USER_HZ: 100 on every Linux this runs on (it is fixed in the kernel ABI for /proc). */
const CLOCK_TICKS = 100

/** Groups rows by variant, then metric, keeping the order in which each first appeared. */
export const groupRows = (rows: ReadonlyArray<Row>): Array<Row> => {
  const firstSeen = <K>(key: (row: Row) => K) => {
    const order = new Map<K, number>()
    for (const row of rows) if (!order.has(key(row))) order.set(key(row), order.size)
    return (row: Row) => order.get(key(row))!
  }
  const variant = firstSeen((row) => row.variant)
  const metric = firstSeen((row) => row.metric)
  const impl = firstSeen((row) => row.impl)
  return [...rows].sort((a, b) => variant(a) - variant(b) || metric(a) - metric(b) || impl(a) - impl(b))
}

/**
 * Maps with at most `limit` calls at a time; results in input order. Full
 * runs use 1 (runs must not measure each other); smoke runs, which check the
 * harness only, may overlap to finish sooner.
 */
export const mapLimited = async <A, B>(
  items: ReadonlyArray<A>,
  limit: number,
  f: (item: A) => Promise<B>
): Promise<Array<B>> => {
  const results = new Array<B>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      results[i] = await f(items[i]!)
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker))
  return results
}

/** How many measuring processes may run at once. */
export const parallelism = (smoke: boolean): number => (smoke ? 2 : 1)

/** Every (run, item) pair, runs outermost: runs of different items interleave. */
export const interleave = <A>(runs: number, items: ReadonlyArray<A>): Array<A> =>
  Array.from({ length: runs }, () => items).flat()
