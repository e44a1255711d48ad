/** Small statistics helpers shared by the benchmark scripts. */
export const percentile = (sorted: ReadonlyArray<number>, p: number): number => {
  if (sorted.length === 0) return Number.NaN
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[i]!
}

export const median = (xs: ReadonlyArray<number>): number => percentile([...xs].sort((a, b) => a - b), 50)

export interface RunResult {
  readonly rps: number
  /** Milliseconds. */
  readonly p50: number
  readonly p99: number
}

/** What `run-one.ts` prints: a run plus the process-level figures. */
export interface Measurement extends RunResult {
  /** CPU microseconds of the client process per request. */
  readonly cpuUs: number
  /** Milliseconds from process start to the first result. */
  readonly coldMs: number
}

/**
 * Runs `total` calls with `concurrency` workers, timing each call.
 * `call` must resolve when the response has arrived.
 */
export const drive = async (
  call: () => Promise<unknown>,
  total: number,
  concurrency: number
): Promise<RunResult> => {
  const latencies = new Float64Array(total)
  let next = 0
  const worker = async () => {
    while (next < total) {
      const i = next++
      const t0 = performance.now()
      await call()
      latencies[i] = performance.now() - t0
    }
  }
  const start = performance.now()
  await Promise.all(Array.from({ length: concurrency }, worker))
  const elapsed = performance.now() - start
  const sorted = Array.from(latencies).sort((a, b) => a - b)
  return { rps: (total / elapsed) * 1000, p50: percentile(sorted, 50), p99: percentile(sorted, 99) }
}

/**
 * The end of every client process of the HTTP workloads: warm up, measure
 * `total` calls with this process's CPU time and peak RSS, close, print one
 * JSON line (`Result` of bench/http/run-client.ts) and exit.
 */
export const measureAndExit = async (
  run: (n: number) => Promise<RunResult>,
  close: () => Promise<void>,
  job: { readonly warmup: number; readonly total: number }
): Promise<never> => {
  if (job.warmup > 0) await run(job.warmup)
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const measured = await run(job.total)
  const elapsed = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  await close()
  const result = {
    ...measured,
    cpuUs: (cpu.user + cpu.system) / job.total,
    msPerCall: elapsed / job.total,
    peakRss: process.resourceUsage().maxRSS * 1024
  }
  process.stdout.write(JSON.stringify(result) + "\n")
  process.exit(0)
}
