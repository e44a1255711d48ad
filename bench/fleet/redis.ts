/**
 * A real `redis-server` for one bench run: a free 127.0.0.1 port, a
 * temporary directory, no persistence (the figures are the store's, not the
 * disk's), `noeviction`, plus `BENCH_FLEET_REDIS_ARGS`. Stopped by the pid it was started with, and its
 * directory removed. `info` and `keys` read it on a connection of their own.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createClient } from "redis"

export interface RunningRedis {
  readonly url: string
  readonly pid: number
  /** `INFO <section>` as name → value. */
  readonly info: (section: string) => Promise<Record<string, string>>
  /** A command on the bench's own connection. */
  readonly command: (args: ReadonlyArray<string>) => Promise<unknown>
  /** The keys under `prefix` (SCAN). */
  readonly keys: (prefix: string) => Promise<Array<string>>
  readonly stop: () => Promise<void>
}

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      probe.close(() => resolve(port))
    })
  })

const READY = "Ready to accept connections"

/** `BENCH_FLEET_REDIS_ARGS`: more `redis-server` options, space-separated (e.g. `--stream-node-max-bytes 512`). */
const extraArgs = (): Array<string> => (process.env.BENCH_FLEET_REDIS_ARGS ?? "").split(" ").filter((a) => a !== "")

const started = (child: ChildProcess): Promise<void> =>
  new Promise((resolve, reject) => {
    let log = ""
    const onData = (chunk: Buffer) => {
      log += chunk.toString("utf8")
      if (log.includes(READY)) resolve()
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("error", reject)
    child.once("exit", (code, signal) => reject(new Error(`redis-server exited (${code ?? signal}) before it was ready:\n${log}`)))
  })

export const startRedis = async (): Promise<RunningRedis> => {
  const dir = mkdtempSync(join(tmpdir(), "bench-redis-"))
  const port = await freePort()
  const child = spawn(
    process.env.BENCH_REDIS_SERVER ?? "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no",
      "--maxmemory-policy", "noeviction", "--logfile", "", "--daemonize", "no", ...extraArgs()],
    { stdio: ["ignore", "pipe", "pipe"] }
  )
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const stopProcess = async () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, "SIGKILL")
    await exited
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await started(child)
  } catch (error) {
    await stopProcess()
    throw error
  }
  const url = `redis://127.0.0.1:${port}`
  const client = createClient({ url })
  client.on("error", () => {
    // reported by the command that fails
  })
  await client.connect()
  return {
    url,
    pid: child.pid!,
    info: async (section) => {
      const text = await client.info(section)
      return Object.fromEntries(
        text.split("\r\n").filter((line) => line.includes(":")).map((line) => {
          const at = line.indexOf(":")
          return [line.slice(0, at), line.slice(at + 1)]
        })
      )
    },
    command: (args) => client.sendCommand([...args]),
    keys: async (prefix) => {
      const found: Array<string> = []
      for await (const batch of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) found.push(...batch)
      return found
    },
    stop: async () => {
      client.destroy()
      await stopProcess()
    }
  }
}
