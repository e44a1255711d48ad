/**
 * One server's run of the tasks workload, in a fresh process:
 * `node bench/tasks/run.ts '<json Job>'` starts the server with
 * `--expose-gc` and an IPC channel (../stateless-server/control.ts), drives
 * it over loopback HTTP (2026-07-28, node:http with a keep-alive agent) and
 * prints one JSON line (`Measured`).
 *
 * For each tool duration (`work {ms}`), `calls` calls at concurrency
 * `concurrency`, first as plain calls (the extension not declared: the
 * server answers inline), then as tasks (declared: `tools/call` answers a
 * `CreateTaskResult`; the driver waits the suggested `pollIntervalMs` before
 * each `tasks/get` until the task completed, and checks its result). For
 * each: wall time per call (from the first POST to the result), POSTs per
 * call, and the server's CPU per call (`process.cpuUsage()` inside it).
 * Then memory: `live` tasks of `held` (waiting on the latch) created, the
 * server's heap and RSS after two full GCs less the idle figure; released
 * after.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { Agent, request } from "node:http"
import { createInterface } from "node:readline"
import { setTimeout as sleep } from "node:timers/promises"
import { drive, type RunResult } from "../stats.ts"
import { HELD_TEXT } from "../stateless-server/control.ts"
import { TASKS_EXTENSION, workText } from "./protocol.ts"

export interface Job {
  readonly server: string
  readonly script: string
  readonly durations: ReadonlyArray<number>
  readonly calls: number
  readonly concurrency: number
  readonly live: number
  readonly pollMs: number
}

export type Mode = "plain" | "task"

export interface Cell extends RunResult {
  readonly ms: number
  readonly mode: Mode
  readonly roundTrips: number
  readonly serverCpuUs: number
}

export interface Measured {
  readonly server: string
  readonly cells: ReadonlyArray<Cell>
  readonly live: { readonly n: number; readonly heapBytes: number; readonly rssBytes: number }
}

const VERSION = "2026-07-28"
const START_BOUND_MS = 60_000
const job = JSON.parse(process.argv[2]!) as Job

const startServer = (): Promise<{ child: ChildProcess; url: URL }> => {
  const child = spawn(process.execPath, ["--expose-gc", job.script], {
    stdio: ["ignore", "pipe", "inherit", "ipc"],
    env: { ...process.env, BENCH_TASKS_POLL_MS: String(job.pollMs) }
  })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`${job.server} did not announce its URL within ${START_BOUND_MS} ms`))
    }, START_BOUND_MS)
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`${job.server} exited with ${code} before listening`))
    })
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (!line.startsWith("listening ")) return
      clearTimeout(timer)
      resolve({ child, url: new URL(line.slice("listening ".length).trim()) })
    })
  })
}

let nextCommand = 0
const pending = new Map<number, (body: Record<string, number>) => void>()
const command = <A extends object>(child: ChildProcess, op: string, extra: object = {}): Promise<A> =>
  new Promise((resolve) => {
    const id = ++nextCommand
    pending.set(id, resolve as (body: Record<string, number>) => void)
    child.send({ id, op, ...extra })
  })

const metaFor = (mode: Mode) => ({
  "io.modelcontextprotocol/protocolVersion": VERSION,
  "io.modelcontextprotocol/clientCapabilities": mode === "task" ? { extensions: { [TASKS_EXTENSION]: {} } } : {},
  "io.modelcontextprotocol/clientInfo": { name: "bench-driver", version: "1.0.0" }
})

let posts = 0
let nextId = 0

/** One POST of a request; resolves with its `result`, fails on an error or anything else. */
const post = (url: URL, agent: Agent, method: string, name: string, params: object): Promise<Record<string, unknown>> => {
  posts++
  const body = JSON.stringify({ jsonrpc: "2.0", id: ++nextId, method, params })
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "content-length": Buffer.byteLength(body),
    "mcp-protocol-version": VERSION,
    "mcp-method": method,
    "mcp-name": name
  }
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", agent, headers }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => (text += chunk))
      res.on("error", reject)
      res.on("end", () => {
        try {
          const messages = res.headers["content-type"]?.startsWith("text/event-stream")
            ? text.split("\n").filter((l) => l.startsWith("data:")).map((l) => JSON.parse(l.slice(5)))
            : [JSON.parse(text)]
          const reply = messages.find((m) => "result" in m || "error" in m) as { result?: Record<string, unknown> } | undefined
          if (reply?.result === undefined) throw new Error(`${method}: unexpected answer: ${text.slice(0, 300)}`)
          resolve(reply.result)
        } catch (error) {
          reject(error)
        }
      })
    })
    req.on("error", reject)
    req.end(body)
  })
}

const textOf = (result: Record<string, unknown> | undefined) =>
  ((result?.content as Array<{ text?: unknown }> | undefined) ?? []).map((c) => String(c.text ?? "")).join("")

/** A call of `tool`, as a task or not, to its result's text. */
const callTool = async (url: URL, agent: Agent, mode: Mode, tool: string, args: object): Promise<string> => {
  const first = await post(url, agent, "tools/call", tool, { name: tool, arguments: args, _meta: metaFor(mode) })
  if (mode === "plain") {
    if (first.resultType === "task") throw new Error(`${tool}: a plain call was answered with a task`)
    return textOf(first)
  }
  if (first.resultType !== "task") throw new Error(`${tool}: a task call was answered without a task`)
  const taskId = String(first.taskId)
  let task = first
  while (task.status === "working") {
    await sleep(Number(task.pollIntervalMs ?? job.pollMs))
    task = await post(url, agent, "tasks/get", taskId, { taskId, _meta: metaFor(mode) })
  }
  if (task.status !== "completed") throw new Error(`${tool}: task ended ${String(task.status)}`)
  return textOf(task.result as Record<string, unknown>)
}

const { child, url } = await startServer()
child.on("message", (message: { id: number } & Record<string, number>) => {
  const resolve = pending.get(message.id)
  pending.delete(message.id)
  resolve?.(message)
})
const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
try {
  const agent = new Agent({ keepAlive: true, maxSockets: Math.max(job.concurrency, 32) })
  const work = (mode: Mode, ms: number) => async () => {
    const got = await callTool(url, agent, mode, "work", { ms })
    if (got !== workText(ms)) throw new Error(`unexpected work result: ${got}`)
  }
  // Warm-up of both paths, then the idle memory.
  await drive(work("plain", 0), job.concurrency * 4, job.concurrency)
  await drive(work("task", 0), job.concurrency * 2, job.concurrency)
  const idle = await command<{ heapUsed: number; rss: number }>(child, "memory")

  const cells: Array<Cell> = []
  for (const ms of job.durations) {
    for (const mode of ["plain", "task"] as const) {
      const posts0 = posts
      const cpu0 = await command<{ user: number; system: number }>(child, "cpu")
      const run = await drive(work(mode, ms), job.calls, job.concurrency)
      const cpu1 = await command<{ user: number; system: number }>(child, "cpu")
      cells.push({
        ...run,
        ms,
        mode,
        roundTrips: (posts - posts0) / job.calls,
        serverCpuUs: (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / job.calls
      })
    }
  }

  // Live tasks: `held` tasks created (each answered with its CreateTaskResult at once), then measured.
  const taskIds: Array<string> = []
  await drive(async () => {
    const created = await post(url, agent, "tools/call", "held", { name: "held", arguments: {}, _meta: metaFor("task") })
    if (created.resultType !== "task") throw new Error("held was not run as a task")
    taskIds.push(String(created.taskId))
  }, job.live, 32)
  await command(child, "arrived", { n: job.live })
  const full = await command<{ heapUsed: number; rss: number }>(child, "memory")
  await command(child, "release")
  // Every task completes once released.
  const last = taskIds.at(-1)!
  for (let task: Record<string, unknown> = { status: "working" }; task.status === "working";) {
    task = await post(url, agent, "tasks/get", last, { taskId: last, _meta: metaFor("task") })
    if (task.status === "completed" && textOf(task.result as Record<string, unknown>) !== HELD_TEXT) throw new Error("held answered wrongly")
  }
  agent.destroy()
  const measured: Measured = {
    server: job.server,
    cells,
    live: { n: job.live, heapBytes: full.heapUsed - idle.heapUsed, rssBytes: full.rss - idle.rss }
  }
  process.stdout.write(`${JSON.stringify(measured)}\n`)
} finally {
  child.kill("SIGTERM")
  await exited
}
