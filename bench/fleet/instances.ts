/**
 * Instances of bench/fleet/server.ts as child processes: each announces its
 * URL, answers `cpu` (its own `process.cpuUsage()`) over IPC, and is stopped
 * by its pid: SIGTERM at the end of a measurement, SIGKILL when a
 * measurement kills it as a crash.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createInterface } from "node:readline"
import type { Config } from "./protocol.ts"

const SERVER = new URL("./server.ts", import.meta.url).pathname
const START_BOUND_MS = 120_000

export interface Instance {
  readonly name: string
  readonly url: string
  readonly pid: number
  /** CPU time of the instance's process so far, in µs (user + system, read inside it). */
  readonly cpuUs: () => Promise<number>
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>
  /** SIGKILL now (a crash); resolves once it exited. */
  readonly kill: () => Promise<void>
  /** SIGTERM, and SIGKILL if it has not exited within 10 s. */
  readonly stop: () => Promise<void>
}

export const startInstance = (config: Config): Promise<Instance> => {
  const child: ChildProcess = spawn(process.execPath, [SERVER, JSON.stringify(config)], {
    stdio: ["ignore", "pipe", "inherit", "ipc"]
  })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const running = () => child.exitCode === null && child.signalCode === null
  let nextId = 0
  const pending = new Map<number, (body: { user: number; system: number }) => void>()
  child.on("message", (message: { id: number; user: number; system: number }) => {
    pending.get(message.id)?.(message)
    pending.delete(message.id)
  })
  const cpuUs = () =>
    new Promise<number>((resolve, reject) => {
      if (!running()) return reject(new Error(`${config.name}: not running`))
      const id = ++nextId
      pending.set(id, (body) => resolve(body.user + body.system))
      child.send({ id, op: "cpu" })
    })
  const signal = async (name: NodeJS.Signals) => {
    if (running()) process.kill(child.pid!, name)
    await exited
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void signal("SIGKILL")
      reject(new Error(`${config.name}: no URL within ${START_BOUND_MS} ms`))
    }, START_BOUND_MS)
    const early = (code: number | null) => {
      clearTimeout(timer)
      reject(new Error(`${config.name}: exited with ${code} before listening`))
    }
    child.once("exit", early)
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (!line.startsWith("listening ")) return
      clearTimeout(timer)
      child.off("exit", early)
      resolve({
        name: config.name ?? "?",
        url: line.slice("listening ".length).trim(),
        pid: child.pid!,
        cpuUs,
        exited,
        kill: () => signal("SIGKILL"),
        stop: async () => {
          const hard = setTimeout(() => void signal("SIGKILL"), 10_000)
          await signal("SIGTERM")
          clearTimeout(hard)
        }
      })
    })
  })
}

/** Starts `n` instances at once (A, B, C…); stops those started if one fails. */
export const startInstances = async (n: number, config: Config): Promise<Array<Instance>> => {
  const results = await Promise.allSettled(
    Array.from({ length: n }, (_, i) => startInstance({ ...config, name: String.fromCharCode(65 + i) }))
  )
  const started = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []))
  const failed = results.find((r) => r.status === "rejected")
  if (failed === undefined) return started
  await Promise.all(started.map((instance) => instance.stop()))
  throw failed.reason
}
