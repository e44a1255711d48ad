/**
 * Counting a Node process's instructions with valgrind's callgrind, for the
 * drivers that compare builds by a count load does not move: the process
 * starts with counting off, is told to count around the measured work
 * (`callgrind_control -i on|off <pid>`), and writes its total when it exits.
 */
import { spawn } from "node:child_process"
import { readFileSync, rmSync } from "node:fs"

/** valgrind's arguments to run `node` with `args` under callgrind, its counts written to `out`. */
export const valgrindArgs = (out: string, args: ReadonlyArray<string>): Array<string> => [
  "--tool=callgrind",
  "--instr-atstart=no",
  // V8 writes the code it compiles: every block is checked for changes.
  "--smc-check=all",
  `--callgrind-out-file=${out}`,
  process.execPath,
  ...args
]

/** The instructions counted in `out` (after the process exited), the file removed unless `keep`. */
export const totalIn = (out: string, keep = false): number | undefined => {
  const totals = /^totals: (\d+)/m.exec(readFileSync(out, "utf8"))
  if (!keep) rmSync(out, { force: true })
  return totals === null ? undefined : Number(totals[1])
}

/**
 * Turns counting on or off in the process `pid` runs under callgrind. Asynchronous, so that a process
 * may switch its own counting: it must keep running while `callgrind_control` waits for its answer.
 */
export const count = (pid: number, on: boolean, showOutput = false): Promise<void> =>
  new Promise((done) =>
    spawn("callgrind_control", ["-i", on ? "on" : "off", String(pid)], { stdio: showOutput ? "inherit" : "ignore" })
      .once("exit", () => done())
  )
