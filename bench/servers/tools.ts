/**
 * What every benchmark server fixture answers, whatever it is built on:
 * - `echo`: a small fixed result (the workload of the stdio server benchmark);
 * - `mem`: this process's memory after a full GC (start it with `--expose-gc`),
 *   as JSON in the result text: the baseline of the in-flight workload;
 * - `held`: waits until `--hold N` calls of `held` have arrived, samples the
 *   memory at that peak (after a GC) and then answers all of them with it.
 * Plain Node: shared by the servers built on our runtime and on the SDK.
 */
export const ECHO_RESULT = { content: [{ type: "text" as const, text: "ok" }] }

export const holdCount = (argv: ReadonlyArray<string> = process.argv): number => {
  const i = argv.indexOf("--hold")
  return i === -1 ? 10_000 : Number(argv[i + 1])
}

export interface MemorySample {
  readonly heapUsed: number
  readonly rss: number
}

export const sampleMemory = (): MemorySample => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc !== undefined) {
    gc()
    gc()
  }
  const { heapUsed, rss } = process.memoryUsage()
  return { heapUsed, rss }
}

export const memoryResult = (sample: MemorySample) => ({ content: [{ type: "text" as const, text: JSON.stringify(sample) }] })
