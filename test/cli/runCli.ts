/**
 * Runs the BUILT `effect-mcp-transport` binary as a user would: `node dist/cli/main.js
 * …` in a child process, with pipes for stdout and stderr. Build first
 * (`npm run build`); the helpers fail with that advice when dist is missing.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"

const ROOT = path.resolve(import.meta.dirname, "../..")
export const MAIN = path.join(ROOT, "dist/cli/main.js")
/** The example server on stdio, without the CLI around it (what `serve --stdio` runs, lighter to start). */
export const EXAMPLE_STDIO = path.join(ROOT, "dist/cli/example-server-stdio.js")
export const NODE = process.execPath

/** The words that make the example server the target: `-- node dist/cli/example-server-stdio.js`. */
export const exampleServer: ReadonlyArray<string> = ["--", NODE, EXAMPLE_STDIO]

export const ensureBuilt = (): void => {
  for (const file of [MAIN, EXAMPLE_STDIO]) {
    if (!fs.existsSync(file)) {
      throw new Error(`${path.relative(ROOT, file)} is missing: run \`npm run build\` first (the CLI tests run the built binary)`)
    }
  }
}

export interface CliResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

export interface CliOptions {
  /** Added to this process's environment; a variable set to `undefined` is left out. */
  readonly env?: Record<string, string | undefined> | undefined
  /** Run this command line instead of `node dist/cli/main.js <args>` (e.g. under `script` for a terminal). */
  readonly command?: ReadonlyArray<string> | undefined
  /** A pipe for the CLI's stdin (`child.stdin`) instead of none, to type into a terminal under `script`. Default false. */
  readonly stdin?: boolean | undefined
  /** Kill the CLI (SIGKILL) if it has not exited by then; the test then fails on the result. Default 100 s (the machine may be heavily loaded). */
  readonly killAfterMs?: number | undefined
}

export interface RunningCli {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  /** Resolves once stderr (or stdout) contains `text`; rejects if the CLI exits first. */
  readonly waitFor: (text: string | RegExp, stream?: "stdout" | "stderr") => Promise<void>
  readonly exit: Promise<CliResult>
}

/** Starts the CLI; `args` are what a user types after `effect-mcp-transport`. */
export const startCli = (args: ReadonlyArray<string>, options: CliOptions = {}): RunningCli => {
  ensureBuilt()
  const [file, ...rest] = options.command ?? [NODE, MAIN, ...args]
  const child = spawn(file!, rest, {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: [options.stdin === true ? "pipe" : "ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  const listeners = new Set<() => void>()
  const changed = () => listeners.forEach((l) => l())
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    stdout += d
    changed()
  })
  child.stderr!.setEncoding("utf8").on("data", (d: string) => {
    stderr += d
    changed()
  })
  const killer = setTimeout(() => child.kill("SIGKILL"), options.killAfterMs ?? 100_000)
  // Set before the waiters are told of the close, so that one still waiting fails at once.
  let exited = false
  const exit = new Promise<CliResult>((resolve) => {
    child.on("close", (code, signal) => {
      clearTimeout(killer)
      exited = true
      resolve({ code, signal, stdout, stderr })
      changed()
    })
  })
  const waitFor = (text: string | RegExp, stream: "stdout" | "stderr" = "stderr") =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        const seen = stream === "stdout" ? stdout : stderr
        if (typeof text === "string" ? seen.includes(text) : text.test(seen)) {
          listeners.delete(check)
          resolve()
        } else if (exited) {
          listeners.delete(check)
          reject(new Error(`the CLI exited before printing ${String(text)} on ${stream}:\n${stdout}\n${stderr}`))
        }
      }
      listeners.add(check)
      check()
    })
  return { child, stdout: () => stdout, stderr: () => stderr, waitFor, exit }
}

/** Runs the CLI to completion. */
export const runCli = (args: ReadonlyArray<string>, options: CliOptions = {}): Promise<CliResult> =>
  startCli(args, options).exit

/** The example server's events file, parsed (empty while it is missing or a line is half written). */
export const readEvents = (file: string): Array<Record<string, unknown>> => {
  try {
    return fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l))
  } catch {
    return []
  }
}

/** Polls the events file (bounded, 20 ms apart): a server writes it in its own time. */
export const awaitEvent = (file: string, predicate: (e: Record<string, unknown>) => boolean, attempts = 500) =>
  Effect.gen(function*() {
    for (let i = 0; i < attempts; i++) {
      const found = readEvents(file).find(predicate)
      if (found !== undefined) return found
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.die(new Error(`no such event in ${file}: ${JSON.stringify(readEvents(file))}`))
  })

export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}
