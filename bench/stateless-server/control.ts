/**
 * What every server of the stateless-server workload shares (plain Node, so
 * each server framework uses it alike): the tools' answers, the latch the
 * `held` tool waits on, and the control channel the driver (run.ts) talks
 * to over the IPC channel it starts the server with:
 * - `{ op: "cpu" }` → `{ user, system }` (µs, `process.cpuUsage()`), read
 *   inside the server so the figure is the server's own work, and
 *   `mainThread` (µs, the event loop's thread alone)
 * - `{ op: "memory" }` → `{ heapUsed, rss }` after two full GCs (the server
 *   runs with `--expose-gc`)
 * - `{ op: "arrived", n }` → `{ arrived }` once `n` calls of `held` wait
 * - `{ op: "release" }` → `{}` after every waiting `held` call is let go
 * Each request carries an `id` that its answer repeats.
 */

import { readFileSync } from "node:fs"

export const ECHO_SCHEMA = {
  type: "object",
  properties: { text: { type: "string" } },
  required: ["text"]
} as const
export const HELD_SCHEMA = { type: "object", properties: {} } as const
export const echoText = (text: string) => `echo: ${text}`
/** The result of `tools/call` of `echo` for its `params`, built by hand (servers without a tool API). */
export const echoCallResult = (params: unknown) => ({
  content: [{ type: "text", text: echoText(String((params as { arguments?: { text?: unknown } } | undefined)?.arguments?.text)) }]
})
export const HELD_TEXT = "released"

let waiting: Array<() => void> = []
let arrivals: Array<{ readonly n: number; readonly answer: () => void }> = []

/** Resolves when the driver releases the held calls. */
export const hold = (): Promise<void> =>
  new Promise((resolve) => {
    waiting.push(resolve)
    const ready = arrivals.filter((a) => waiting.length >= a.n)
    arrivals = arrivals.filter((a) => waiting.length < a.n)
    for (const a of ready) a.answer()
  })

const sampleMemory = () => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error("start the server with --expose-gc")
  gc()
  gc()
  const { heapUsed, rss } = process.memoryUsage()
  return { heapUsed, rss }
}

/**
 * The main thread's own CPU time in µs (Linux `schedstat`, nanoseconds on
 * CPU), NaN elsewhere: the part of the process's CPU that one request's
 * turn on the event loop waits for; GC and I/O helper threads run beside it.
 */
const mainThreadUs = (): number => {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]) / 1000
  } catch {
    return Number.NaN
  }
}

interface Command {
  readonly id: number
  readonly op: "cpu" | "memory" | "arrived" | "release"
  readonly n?: number
}

/** Answers the driver's commands; a server without an IPC channel (started by hand) has no control. */
export const installControl = (): void => {
  if (process.send === undefined) return
  const reply = (id: number, body: object) => process.send!({ id, ...body })
  process.on("message", (command: Command) => {
    switch (command.op) {
      case "cpu":
        return reply(command.id, { ...process.cpuUsage(), mainThread: mainThreadUs() })
      case "memory":
        return reply(command.id, sampleMemory())
      case "arrived": {
        const n = command.n ?? 0
        const answer = () => reply(command.id, { arrived: waiting.length })
        if (waiting.length >= n) answer()
        else arrivals.push({ n, answer })
        return
      }
      case "release": {
        const released = waiting
        waiting = []
        for (const resolve of released) resolve()
        return reply(command.id, {})
      }
    }
  })
  // The IPC channel must not keep a stopped server alive, and a driver that dies takes its server with it.
  process.channel?.unref()
  process.once("disconnect", () => process.exit(0))
}

/** The last line a server prints when it is ready: `listening <url>`. */
export const announce = (url: string) => process.stdout.write(`listening ${url}\n`)
