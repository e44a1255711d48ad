/**
 * What recording a stdio server's descendants costs (Linux).
 *
 * 1. One walk of the tree under a spawned server, as the periodic sampler and
 *    the teardown do it, timed over many repetitions, for a server with no
 *    children and for one with a detached helper: CPU time (user + system)
 *    per walk, which machine load disturbs less than wall time.
 * 2. The server's exit after a walk: from stdin's end to its `exit` event,
 *    with and without its threads' /proc entries looked up first, runs
 *    interleaved. The kernel drops a thread's cached /proc entries when the
 *    thread exits, and that shows in the exit time.
 *
 *   npx node bench/profile/descendant-walk.ts [walks] [exits]
 */
import { spawn } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import * as ProcessTree from "../../src/client/internal/ProcessTree.ts"

const walks = Number(process.argv[2] ?? "2000")
const exits = Number(process.argv[3] ?? "60")
const responder = new URL("../raw-responder.ts", import.meta.url).pathname
const helperSource = "const { spawn } = require('node:child_process');" +
  "const h = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' });" +
  "h.unref(); process.stdout.write(h.pid + '\\n'); setInterval(() => {}, 1000)"

const started = (args: Array<string>) =>
  new Promise<{ pid: number; helper: number | undefined }>((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "ignore"] })
    child.stdout.once("data", (chunk: Buffer) => resolve({ pid: child.pid!, helper: Number(String(chunk).trim()) || undefined }))
    if (args[0] === responder) {
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) + "\n")
    }
  })

const time = (label: string, pid: number, run: () => void) => {
  for (let i = 0; i < 100; i++) run() // warm-up
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  for (let i = 0; i < walks; i++) run()
  const wallUs = ((performance.now() - t0) * 1000) / walks
  const cpu = process.cpuUsage(cpu0)
  const cpuUs = (cpu.user + cpu.system) / walks
  const threads = readdirSync(`/proc/${pid}/task`).length
  console.log(JSON.stringify({ label, threads, walks, cpuUsPerWalk: +cpuUs.toFixed(1), wallUsPerWalk: +wallUs.toFixed(1) }))
}

const plain = await started([responder])
const withHelper = await started(["-e", helperSource])
try {
  const tracker = ProcessTree.makeTracker(plain.pid)
  time("server with no children: sample(true)", plain.pid, () => tracker.sample(true))
  const helperTracker = ProcessTree.makeTracker(withHelper.pid)
  time("server with one detached helper: sample(true)", withHelper.pid, () => helperTracker.sample(true))
  time("server with one detached helper: alive()", withHelper.pid, () => helperTracker.alive())
  const scanTracker = ProcessTree.makeTracker(plain.pid, { listChildren: ProcessTree.scanChildLister })
  time(`fallback /proc scan (${readdirSync("/proc").filter((e) => /^\d+$/.test(e)).length} processes): sample(true)`, plain.pid, () => scanTracker.sample(true))
} finally {
  for (const pid of [plain.pid, withHelper.pid, withHelper.helper]) {
    if (pid !== undefined) process.kill(pid, "SIGKILL")
  }
}

/** Milliseconds from stdin's end to the server's exit, after `before` ran on its pid. */
const exitTime = (before: (pid: number) => void) =>
  new Promise<number>((resolve) => {
    const child = spawn(process.execPath, [responder], { stdio: ["pipe", "pipe", "ignore"] })
    child.stdout.once("data", () => {
      before(child.pid!)
      const t0 = performance.now()
      child.once("exit", () => resolve(performance.now() - t0))
      child.stdin.end()
    })
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) + "\n")
  })

const exitVariants: Array<[string, (pid: number) => void]> = [
  ["not walked", () => {}],
  ["walked (every thread's children file)", (pid) => ProcessTree.makeTracker(pid).sample(true)],
  ["main thread's children file only", (pid) => void readFileSync(`/proc/${pid}/task/${pid}/children`)]
]
const exitTimes = exitVariants.map(() => [] as Array<number>)
for (let r = 0; r < exits; r++) {
  for (const [i, [, before]] of exitVariants.entries()) exitTimes[i]!.push(await exitTime(before))
}
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
for (const [i, [label]] of exitVariants.entries()) {
  console.log(JSON.stringify({ label: `server exit, ${label}`, runs: exits, medianMs: +median(exitTimes[i]!).toFixed(2) }))
}
