/**
 * When each step of a cold close of a stdio client happens, seen from Node
 * alone (no marks in the client's code, so the SDK is timed the same way):
 * open against the raw responder, one `tools/call`, then `close()`, in a
 * fresh process per run, with `net.Socket#end` and `ChildProcess#emit`
 * hooked. Milliseconds from `close()`:
 * - `stdinEnd`: the client ends the server's stdin (the first `end` call);
 * - `stdoutEnd`: Node ends our side of the server's stdout, which it does on
 *   its end of file, i.e. once the server closed it or exited;
 * - `exit`, `close`: the child's events (`exit` once the parent reaped it);
 * - `returned`: `close()` resolved;
 * - `cpu`: the CPU time our process (all its threads) spent from `close()`
 *   to its return (`process.cpuUsage`).
 * Clients run interleaved; prints each step's median per client. The child
 * also runs three empty marker functions, found by name in a V8 log
 * (teardown-compile.ts): `TEARDOWN_START` just before `close()`,
 * `TEARDOWN_STDIN_ENDED` at stdin's end, `TEARDOWN_END` after the return.
 *
 *   BENCH_BUILD=dist npx node bench/profile/teardown-timeline.ts [runs=8] [client...]
 *
 * A client is a bench client name (default `effect-floor ours ours-mcp sdk`;
 * `effect-floor` closes politely through `effect`'s spawner with nothing else
 * in the way: the floor for a client built on it).
 */
import { execFileSync } from "node:child_process"

type Step = "stdinEnd" | "stdoutEnd" | "exit" | "close" | "returned" | "cpu"
const STEPS: ReadonlyArray<Step> = ["stdinEnd", "stdoutEnd", "exit", "close", "returned", "cpu"]

if (process.env.TEARDOWN_TIMELINE_CHILD === "1") {
  const { Socket } = await import("node:net")
  const { ChildProcess } = await import("node:child_process")
  const at: Partial<Record<Step, number>> = {}
  let t0 = 0
  const mark = (step: Step) => {
    if (t0 > 0 && at[step] === undefined) at[step] = performance.now() - t0
  }
  let ends = 0
  const end = Socket.prototype.end as unknown as (...args: Array<unknown>) => unknown
  Socket.prototype.end = function(this: unknown, ...args: Array<unknown>) {
    if (t0 > 0 && ends === 0) (function TEARDOWN_STDIN_ENDED() {})()
    if (t0 > 0) mark(ends++ === 0 ? "stdinEnd" : "stdoutEnd")
    return end.apply(this, args)
  } as typeof Socket.prototype.end
  const emit = ChildProcess.prototype.emit as unknown as (...args: Array<unknown>) => boolean
  ChildProcess.prototype.emit = function(this: unknown, name: string | symbol, ...args: Array<unknown>) {
    if (name === "exit" || name === "close") mark(name)
    return emit.call(this, name, ...args)
  }
  const { loaderFor } = await import("../clients/index.ts")
  const client = await (await loaderFor(process.argv[2]!)()).make(process.execPath, [
    new URL("../raw-responder.ts", import.meta.url).pathname
  ])
  await client.callTool()
  const cpuBefore = process.cpuUsage()
  t0 = performance.now()
  ;(function TEARDOWN_START() {})()
  await client.close()
  mark("returned")
  const cpu = process.cpuUsage(cpuBefore)
  ;(function TEARDOWN_END() {})()
  at.cpu = (cpu.user + cpu.system) / 1000
  console.log(JSON.stringify(at))
  process.exit(0)
}

const [runsText = "8", ...names] = process.argv.slice(2)
const clients = names.length > 0 ? names : ["effect-floor", "ours", "ours-mcp", "sdk"]
const seen = new Map<string, Array<Partial<Record<Step, number>>>>()
for (let r = 0; r < Number(runsText); r++) {
  for (const client of clients) {
    const out = execFileSync(process.execPath, [new URL(import.meta.url).pathname, client], {
      env: { ...process.env, TEARDOWN_TIMELINE_CHILD: "1" },
      encoding: "utf8"
    })
    const runs = seen.get(client) ?? []
    runs.push(JSON.parse(out.trim().split("\n").pop()!))
    seen.set(client, runs)
  }
}
const median = (xs: Array<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? Number.NaN : s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}
console.log(`ms after close(), medians of ${runsText} fresh processes`)
for (const [client, runs] of seen) {
  const cells = STEPS.map((step) => {
    const values = runs.map((r) => r[step]).filter((v): v is number => v !== undefined)
    return `${step} ${values.length === 0 ? "-" : median(values).toFixed(2)}`
  })
  console.log(`  ${client.padEnd(12)} ${cells.join("   ")}`)
}
