/**
 * Where the client's time goes, without pipes or a second process: the stdio
 * client transport against an in-process responder behind the same Node
 * stream adapters the real spawner uses (a PassThrough piped into another for
 * stdout, `NodeSink.fromWritable` for stdin), replies sent one event-loop turn
 * later as a real server's would be. Prints CPU microseconds per request for
 * the transport and for a floor client (the same Effect-fiber driver and
 * responder, plain Node stream calls and one `Effect.callback` per request),
 * so that the difference is what the transport itself costs.
 *
 *   node bench/in-process.ts [concurrency=1] [total=20000]
 */
import { Effect, Exit, Scope } from "effect"
import { ChildProcessSpawner } from "effect/process"
import * as StdioClientTransport from "../src/client/StdioClientTransport.ts"
import { driveEffect } from "./clients/effect-drive.ts"
import { makeLink, spawner } from "./in-process-spawner.ts"

const concurrency = Number(process.argv[2] ?? 1)
const total = Number(process.argv[3] ?? 20_000)
const only = process.argv[4] // "ours" or "floor" to run one of them (for profiling)

const measure = <E>(call: Effect.Effect<unknown, E>) =>
  Effect.gen(function*() {
    yield* driveEffect(call, Math.min(2000, total), concurrency)
    const cpu0 = process.cpuUsage()
    const result = yield* driveEffect(call, total, concurrency)
    const cpu = process.cpuUsage(cpu0)
    return { ...result, cpuUs: (cpu.user + cpu.system) / total }
  })

const ours = Effect.gen(function*() {
  const scope = yield* Scope.make()
  const t = yield* StdioClientTransport.make({ command: "in-process" }).pipe(
    Scope.provide(scope),
    Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, spawner)
  )
  const result = yield* measure(t.request("tools/call", { name: "echo", arguments: { text: "hi" } }))
  yield* Scope.close(scope, Exit.void)
  return result
})

const floor = Effect.gen(function*() {
  const link = makeLink()
  const waiting = new Map<number, (exit: Exit.Exit<unknown>) => void>()
  let nextId = 0
  let out = ""
  let scheduled = false
  const flush = () => {
    scheduled = false
    link.stdin.write(out)
    out = ""
  }
  let pending = ""
  link.stdout.setEncoding("utf8")
  link.stdout.on("data", (chunk: string) => {
    pending += chunk
    let start = 0
    let nl: number
    while ((nl = pending.indexOf("\n", start)) !== -1) {
      const msg = JSON.parse(pending.slice(start, nl)) as { id: number; result: unknown }
      start = nl + 1
      const resume = waiting.get(msg.id)
      if (resume !== undefined) {
        waiting.delete(msg.id)
        resume(Exit.succeed(msg.result))
      }
    }
    pending = pending.slice(start)
  })
  const call = Effect.callback<unknown>((resume) => {
    const id = ++nextId
    waiting.set(id, resume)
    out += JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } }) +
      "\n"
    if (!scheduled) {
      scheduled = true
      queueMicrotask(flush)
    }
  })
  const result = yield* measure(call)
  link.stdin.end()
  return result
})

const fmt = (r: { rps: number; p50: number; p99: number; cpuUs: number }) =>
  `${r.cpuUs.toFixed(2).padStart(7)} µs CPU/request  ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${(r.p50 * 1000).toFixed(1)} µs  p99 ${(r.p99 * 1000).toFixed(1)} µs`

const program = Effect.gen(function*() {
  for (let i = 0; i < 3; i++) {
    if (only !== "ours") console.log(`floor c${concurrency}`, fmt(yield* floor))
    if (only !== "floor") console.log(`ours  c${concurrency}`, fmt(yield* ours))
  }
})

Effect.runPromise(program).then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
