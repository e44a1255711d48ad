/** What the tasks workload's servers and driver agree on. */

/** The polling interval the servers suggest, and the driver follows (ms). */
export const POLL_MS = Number(process.env.BENCH_TASKS_POLL_MS ?? 100)

export const workText = (ms: number) => `worked ${ms} ms`

export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
