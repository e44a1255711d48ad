/**
 * A bench HTTP server in a child process: started, awaited until it prints
 * its URL on stdout, and measured from /proc. Shared by the server memory
 * probes (http-server-rss, session-churn, batch-flood).
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { readFileSync } from "node:fs"

export interface ListeningServer {
  readonly process: ChildProcessWithoutNullStreams
  readonly pid: number
  readonly url: string
}

/** Runs `node script ...args` and resolves once the server prints an `http://` URL. */
export const startListening = async (script: string, args: ReadonlyArray<string>): Promise<ListeningServer> => {
  const child = spawn(process.execPath, [script, ...args], { stdio: ["ignore", "pipe", "inherit"] }) as unknown as ChildProcessWithoutNullStreams
  const url = await new Promise<string>((done, fail) => {
    let out = ""
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (text: string) => {
      out += text
      const found = /http:\/\/\S+/.exec(out)
      if (found !== null) done(found[0])
    })
    child.on("exit", (code) => fail(new Error(`${script} exited with ${code} before listening`)))
  })
  return { process: child, pid: child.pid!, url }
}

/** A field of /proc/<pid>/status in MiB (`VmRSS`, `VmHWM`, …). */
export const statusMiB = (pid: number, field: string): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]) / 1024
}

/** The process's resident and peak memory, as printed by the probes. */
export const memoryLine = (pid: number): string =>
  `RSS ${statusMiB(pid, "VmRSS").toFixed(0)} MiB, peak ${statusMiB(pid, "VmHWM").toFixed(0)} MiB`
