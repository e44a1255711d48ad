/**
 * Process plumbing for the HTTP and large-message workloads: server
 * processes that announce their URL and report their peak RSS on exit,
 * client runs in fresh processes (one at a time), and medians into rows.
 */
import { execFile, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { promisify } from "node:util"
import type { Metric, Row } from "../workload.ts"
import type { Job, Result } from "./run-client.ts"

const execFileAsync = promisify(execFile)
const here = (file: string) => new URL(file, import.meta.url).pathname

export const serverScript = {
  ours: here("./server-ours.ts"),
  sdk: here("./server-sdk.ts"),
  raw: here("./server-raw.ts"),
  rawStdio: here("../raw-responder.ts")
} as const

let scratch: string | undefined
let rssFiles = 0
/** A fresh path for a process's peak-RSS report (see `reportPeakRssOnExit`). */
export const rssFile = () => {
  scratch ??= mkdtempSync(join(tmpdir(), "bench-http-"))
  return join(scratch, `rss-${process.pid}-${++rssFiles}`)
}
export const readRss = (file: string): number | undefined => {
  try {
    const bytes = Number(readFileSync(file, "utf8"))
    rmSync(file, { force: true })
    return Number.isFinite(bytes) && bytes > 0 ? bytes : undefined
  } catch {
    return undefined
  }
}
/** Removes the reports' directory (a later `rssFile` makes a new one). */
export const cleanup = () => {
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true })
  scratch = undefined
}

export interface RunningServer {
  readonly url: string
  /** The server's process id (for its CPU time in `/proc`). */
  readonly pid: number
  /** SIGTERM, wait for the exit; the server's peak RSS in bytes when it reported one. */
  readonly stop: () => Promise<number | undefined>
}

const START_BOUND_MS = 60_000

export const startServer = (script: string, args: ReadonlyArray<string>): Promise<RunningServer> => {
  const rss = rssFile()
  const child = spawn(process.execPath, [script, ...args], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, BENCH_RSS_FILE: rss }
  })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  return new Promise<RunningServer>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`${script} did not announce its URL within ${START_BOUND_MS} ms`))
    }, START_BOUND_MS)
    const early = (code: number | null) => {
      clearTimeout(timer)
      reject(new Error(`${script} exited with ${code} before listening`))
    }
    child.once("exit", early)
    const lines = createInterface({ input: child.stdout })
    lines.on("line", (line) => {
      if (!line.startsWith("listening ")) return
      clearTimeout(timer)
      child.off("exit", early)
      resolve({
        url: line.slice("listening ".length).trim(),
        pid: child.pid!,
        stop: async () => {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
          await exited
          return readRss(rss)
        }
      })
    })
  })
}

const clientScript = here("./run-client.ts")

/**
 * One client run in a fresh process. A run that fails (e.g. a connection
 * reset on a machine so loaded that a keep-alive socket idles out) is
 * retried once, and reported on stderr.
 */
export const runClient = async (job: Job): Promise<Result> => {
  try {
    return await runClientOnce(job)
  } catch (error) {
    const text = String((error as { stderr?: unknown }).stderr ?? error).split("\n").find((l) => /Error/.test(l)) ?? ""
    progress(`client run failed, retrying once: ${job.client} ${job.target.kind} ${text.trim()}`)
    return await runClientOnce(job)
  }
}

const runClientOnce = async (job: Job): Promise<Result> => {
  const { stdout } = await execFileAsync(process.execPath, [clientScript, JSON.stringify(job)], {
    encoding: "utf8",
    maxBuffer: 1 << 20,
    timeout: 300_000
  })
  return JSON.parse(stdout.trim().split("\n").pop()!) as Result
}

const sorted = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)
export const med = (xs: ReadonlyArray<number>) => sorted(xs)[Math.floor((xs.length - 1) / 2)] ?? Number.NaN

/** A row from the per-run values of one cell. */
export const row = (
  key: { readonly workload: string; readonly variant: string; readonly impl: string; readonly metric: Metric },
  values: ReadonlyArray<number>,
  latency?: { readonly p50: ReadonlyArray<number>; readonly p99: ReadonlyArray<number> }
): Row => {
  const s = sorted(values)
  return {
    ...key,
    median: med(values),
    min: s[0] ?? Number.NaN,
    max: s[s.length - 1] ?? Number.NaN,
    ...(latency === undefined ? {} : { p50: med(latency.p50), p99: med(latency.p99) }),
    runs: values.length
  }
}

export const envList = (name: string, fallback: string): ReadonlyArray<string> =>
  (process.env[name] ?? fallback).split(",").map((s) => s.trim()).filter((s) => s.length > 0)

/** Progress on stderr (stdout is the orchestrator's table). */
export const progress = (text: string) => {
  if (process.env.BENCH_QUIET !== "1") process.stderr.write(`[bench] ${text}\n`)
}
