/**
 * How much of a cold stdio close is V8 meeting code for the first time: open
 * against the raw responder, one `tools/call`, then `close()`, in a fresh
 * process under `--log-function-events`; counts the functions that run for
 * the first time during the close (before the server's stdin ends, and in
 * all) and adds up the time V8's log gives their parsing and compiling.
 * Each close is teardown-timeline.ts's child, whose marker functions around
 * `close()` and at stdin's end say where each window is in the log. The log
 * itself slows compiling, so the times are for comparing clients, not
 * absolute.
 *
 *   BENCH_BUILD=dist npx node bench/profile/teardown-compile.ts [runs=3] [client...]
 *
 * A client is a bench client name (default `effect-floor ours ours-mcp sdk`).
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

interface Window {
  firstRuns: number
  compileMs: number
}

/** `function,<event>,<script>,<start>,<end>,<ms>,<timestamp>,<name>` lines, between the markers' first executions. */
const windows = (log: string): { beforeStdinEnd: Window; whole: Window } => {
  const beforeStdinEnd = { firstRuns: 0, compileMs: 0 }
  const whole = { firstRuns: 0, compileMs: 0 }
  let phase: "before" | "open" | "after" | "done" = "before"
  for (const line of log.split("\n")) {
    if (!line.startsWith("function,")) continue
    const fields = line.split(",")
    const [event, ms, name] = [fields[1], Number(fields[5]), fields[7]]
    if (event === "first-execution") {
      if (name === "TEARDOWN_START") phase = "open"
      else if (name === "TEARDOWN_STDIN_ENDED" && phase === "open") phase = "after"
      else if (name === "TEARDOWN_END") phase = "done"
    }
    if (phase !== "open" && phase !== "after") continue
    const windowsHit = phase === "open" ? [beforeStdinEnd, whole] : [whole]
    for (const w of windowsHit) {
      if (event === "first-execution") w.firstRuns++
      else if (Number.isFinite(ms)) w.compileMs += ms
    }
  }
  return { beforeStdinEnd, whole }
}

const [runsText = "3", ...names] = process.argv.slice(2)
const clients = names.length > 0 ? names : ["effect-floor", "ours", "ours-mcp", "sdk"]
const dir = mkdtempSync(join(tmpdir(), "teardown-compile-"))
const seen = new Map<string, Array<{ beforeStdinEnd: Window; whole: Window }>>()
try {
  for (let r = 0; r < Number(runsText); r++) {
    for (const client of clients) {
      const logFile = join(dir, `${r}.log`)
      execFileSync(process.execPath, [
        "--log-function-events",
        "--no-logfile-per-isolate",
        `--logfile=${logFile}`,
        new URL("./teardown-timeline.ts", import.meta.url).pathname,
        client
      ], { env: { ...process.env, TEARDOWN_TIMELINE_CHILD: "1" }, stdio: ["ignore", "ignore", "inherit"] })
      const runs = seen.get(client) ?? []
      runs.push(windows(readFileSync(logFile, "utf8")))
      rmSync(logFile)
      seen.set(client, runs)
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
console.log(`functions run for the first time in a cold close, and their parse + compile ms (medians of ${runsText})`)
for (const [client, runs] of seen) {
  const cell = (pick: (r: { beforeStdinEnd: Window; whole: Window }) => Window) =>
    `${median(runs.map((r) => pick(r).firstRuns))} functions, ${median(runs.map((r) => pick(r).compileMs)).toFixed(2)} ms`
  console.log(`  ${client.padEnd(14)} before stdin's end: ${cell((r) => r.beforeStdinEnd)}   whole close: ${cell((r) => r.whole)}`)
}
