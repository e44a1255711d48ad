/**
 * One server's run of the stateless-server workload, in a fresh process:
 * `node bench/stateless-server/run.ts '<json Job>'` starts the server with
 * `--expose-gc` and an IPC channel (control.ts), drives it and prints one
 * JSON line (`Measured`).
 *
 * The driver is the same for every server: node:http with a keep-alive
 * agent, one POST per `tools/call` with the 2026-07-28 headers and `_meta`,
 * every answer parsed and checked. In order:
 * 1. warm-up: `warmup` calls of `echo` at concurrency 32, then all sockets closed;
 * 2. idle memory: the server's heap and RSS after two full GCs, no connection open;
 * 3. per concurrency: a short warm-up, then `total` calls, with the server's
 *    CPU (`process.cpuUsage()` read inside it) before and after;
 * 4. in flight: `hold` calls of `held` sent at once on as many sockets; once
 *    all wait on the latch, the server's memory after two full GCs, less the
 *    idle figure, ÷ `hold`; then released, and every answer checked.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { Agent, request } from "node:http"
import { createInterface } from "node:readline"
import { drive, type RunResult } from "../stats.ts"
import { echoText, HELD_TEXT } from "./control.ts"

export interface Job {
  readonly server: string
  readonly script: string
  readonly concurrencies: ReadonlyArray<number>
  /** measured calls per concurrency: `total × c / 32`, at least a quarter of it, so that c1 does not take as long as c32 */
  readonly total: number
  readonly warmup: number
  readonly hold: number
}

export interface Load extends RunResult {
  readonly concurrency: number
  /** server CPU µs per call over the measured window */
  readonly serverCpuUs: number
  /** the server's main thread's CPU µs per call (the event loop alone; NaN off Linux) */
  readonly mainThreadUs: number
  /** the driver's own CPU µs per call, for reference */
  readonly driverCpuUs: number
}

export interface Measured {
  readonly server: string
  readonly startMs: number
  readonly idle: { readonly heapUsed: number; readonly rss: number }
  readonly loads: ReadonlyArray<Load>
  readonly inFlight: { readonly n: number; readonly heapKiB: number; readonly rssKiB: number }
}

interface Cpu {
  readonly user: number
  readonly system: number
  readonly mainThread: number
}

const VERSION = "2026-07-28"
const START_BOUND_MS = 60_000

const job = JSON.parse(process.argv[2]!) as Job

// ---------------------------------------------------------------------------
// The server and its control channel

/** Extra Node flags for the server, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it. */
const serverFlags = process.env.BENCH_STATELESS_SERVER_NODE_ARGS?.split(" ").filter((f) => f.length > 0) ?? []

const startServer = (): Promise<{ child: ChildProcess; url: URL }> => {
  const child = spawn(process.execPath, ["--expose-gc", ...serverFlags, job.script], { stdio: ["ignore", "pipe", "inherit", "ipc"] })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`${job.server} did not announce its URL within ${START_BOUND_MS} ms`))
    }, START_BOUND_MS)
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`${job.server} exited with ${code} before listening`))
    })
    // Read to the end: a server that logs must not block on a full pipe.
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
const listen = (child: ChildProcess) =>
  child.on("message", (message: { id: number } & Record<string, number>) => {
    const resolve = pending.get(message.id)
    pending.delete(message.id)
    resolve?.(message)
  })

// ---------------------------------------------------------------------------
// The driver

const headersFor = (name: string, body: string) => ({
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "content-length": Buffer.byteLength(body),
  "mcp-protocol-version": VERSION,
  "mcp-method": "tools/call",
  "mcp-name": name
})
const META = {
  "io.modelcontextprotocol/protocolVersion": VERSION,
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "bench-driver", version: "1.0.0" }
}

let nextId = 0
/** One `tools/call`; resolves with the result's text, or fails on anything else. */
const call = (url: URL, agent: Agent, name: string, args: object): Promise<string> => {
  const body = JSON.stringify({ jsonrpc: "2.0", id: ++nextId, method: "tools/call", params: { name, arguments: args, _meta: META } })
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", agent, headers: headersFor(name, body) }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => (text += chunk))
      res.on("error", reject)
      res.on("end", () => {
        try {
          resolve(resultText(res.headers["content-type"], text))
        } catch (error) {
          reject(error)
        }
      })
    })
    req.on("error", reject)
    req.end(body)
  })
}

const resultText = (contentType: string | undefined, text: string): string => {
  const messages = contentType?.startsWith("text/event-stream")
    ? text.split("\n").filter((l) => l.startsWith("data:")).map((l) => JSON.parse(l.slice(5)))
    : [JSON.parse(text)]
  const reply = messages.find((m) => "result" in m || "error" in m) as
    | { result?: { content?: Array<{ text?: unknown }> }; error?: unknown }
    | undefined
  const value = reply?.result?.content?.[0]?.text
  if (typeof value !== "string") throw new Error(`unexpected answer: ${text.slice(0, 300)}`)
  return value
}

const echo = (url: URL, agent: Agent) => async () => {
  const text = await call(url, agent, "echo", { text: "hi" })
  if (text !== echoText("hi")) throw new Error(`unexpected echo: ${text}`)
}

// ---------------------------------------------------------------------------
// The run

const t0 = performance.now()
const { child, url } = await startServer()
const startMs = performance.now() - t0
listen(child)
const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
try {
  const warmAgent = new Agent({ keepAlive: true, maxSockets: 32 })
  await drive(echo(url, warmAgent), job.warmup, 32)
  warmAgent.destroy()
  const { heapUsed, rss } = await command<{ heapUsed: number; rss: number }>(child, "memory")
  const idle = { heapUsed, rss }

  const loads: Array<Load> = []
  for (const c of job.concurrencies) {
    const agent = new Agent({ keepAlive: true, maxSockets: c })
    const total = Math.max(Math.round((job.total * c) / 32), Math.round(job.total / 4))
    await drive(echo(url, agent), Math.max(c * 4, Math.round(job.warmup / 4)), c)
    const driver0 = process.cpuUsage()
    const cpu0 = await command<Cpu>(child, "cpu")
    const run = await drive(echo(url, agent), total, c)
    const cpu1 = await command<Cpu>(child, "cpu")
    const driver = process.cpuUsage(driver0)
    agent.destroy()
    loads.push({
      ...run,
      concurrency: c,
      serverCpuUs: (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / total,
      mainThreadUs: (cpu1.mainThread - cpu0.mainThread) / total,
      driverCpuUs: (driver.user + driver.system) / total
    })
  }

  const base = await command<{ heapUsed: number; rss: number }>(child, "memory")
  const holdAgent = new Agent({ keepAlive: true, maxSockets: Infinity })
  const held = Array.from({ length: job.hold }, () => call(url, holdAgent, "held", {}))
  // A failed call must not go unnoticed while the others wait.
  const failed = Promise.all(held).then(() => undefined)
  const arrived = command<{ arrived: number }>(child, "arrived", { n: job.hold })
  await Promise.race([arrived, failed])
  const peak = await command<{ heapUsed: number; rss: number }>(child, "memory")
  await command(child, "release")
  for (const text of await Promise.all(held)) if (text !== HELD_TEXT) throw new Error(`unexpected held answer: ${text}`)
  holdAgent.destroy()

  const measured: Measured = {
    server: job.server,
    startMs,
    idle,
    loads,
    inFlight: {
      n: job.hold,
      heapKiB: (peak.heapUsed - base.heapUsed) / job.hold / 1024,
      rssKiB: (peak.rss - base.rss) / job.hold / 1024
    }
  }
  process.stdout.write(JSON.stringify(measured) + "\n")
} finally {
  child.kill("SIGTERM")
  await exited
}
process.exit(0)
