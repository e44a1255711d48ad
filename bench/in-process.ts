/**
 * Where the client's time goes, without pipes or a second process: the stdio
 * client transport against an in-process responder behind the same Node
 * stream adapters the real spawner uses (a PassThrough piped into another for
 * stdout, `NodeSink.fromWritable` for stdin), replies sent one event-loop turn
 * later as a real server's would be. Prints CPU microseconds per request for
 * the transport and for a floor client (the same Effect-fiber driver and
 * responder, plain Node stream calls and one `Effect.callback` per request),
 * so that the difference is what the transport itself costs. A third row,
 * `adapters`, is that floor reading and writing through the same Effect
 * plumbing as the transport (stdout pulled through `NodeStream`, stdin
 * written by `BatchWriter` into `NodeSink`), so the gap splits into what
 * those adapters cost (a fiber wake-up per read and per write) and what the
 * transport's own code costs (framing, decoding, correlation, deadlines).
 *
 *   node bench/in-process.ts [concurrency=1] [total=20000] [ours|floor|adapters]
 */
import * as NodeSink from "@effect/platform-node/NodeSink"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Effect, Exit, Fiber, Scope, Stream } from "effect"
import { ChildProcessSpawner } from "effect/process"
import * as StdioClientTransport from "../src/client/StdioClientTransport.ts"
import * as BatchWriter from "../src/internal/BatchWriter.ts"
import { driveEffect } from "./clients/effect-drive.ts"
import { makeLink, spawner } from "./in-process-spawner.ts"

const concurrency = Number(process.argv[2] ?? 1)
const total = Number(process.argv[3] ?? 20_000)
const only = process.argv[4] // "ours", "floor" or "adapters" to run one of them (for profiling)

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

/** Responses settled by id from one stdout read, as the floor does. */
const makeSettler = () => {
  const waiting = new Map<number, (exit: Exit.Exit<unknown>) => void>()
  let pending = ""
  const onText = (text: string) => {
    pending += text
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
  }
  return { waiting, onText }
}

const floor = Effect.gen(function*() {
  const link = makeLink()
  const { onText, waiting } = makeSettler()
  let nextId = 0
  let out = ""
  let scheduled = false
  const flush = () => {
    scheduled = false
    link.stdin.write(out)
    out = ""
  }
  link.stdout.setEncoding("utf8")
  link.stdout.on("data", onText)
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

const adapters = Effect.gen(function*() {
  const link = makeLink()
  const { onText, waiting } = makeSettler()
  const decoder = new TextDecoder()
  const writer = BatchWriter.make<never>(256)
  const reading = yield* Effect.forkChild(
    NodeStream.fromReadable({ evaluate: () => link.stdout, onError: (e) => e as never }).pipe(
      Stream.runForEachArray((chunks) => {
        for (const chunk of chunks) onText(decoder.decode(chunk, { stream: true }))
        return Effect.void
      })
    )
  )
  const writing = yield* Effect.forkChild(
    writer.run(NodeSink.fromWritable({ evaluate: () => link.stdin, onError: (e) => e as never }))
  )
  let nextId = 0
  const call = Effect.callback<unknown>((resume) => {
    const id = ++nextId
    waiting.set(id, resume)
    writer.tryWrite(
      JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } }) + "\n"
    )
  })
  const result = yield* measure(call)
  writer.close(undefined as never)
  yield* Fiber.interrupt(reading)
  yield* Fiber.interrupt(writing)
  return result
})

const fmt = (r: { rps: number; p50: number; p99: number; cpuUs: number }) =>
  `${r.cpuUs.toFixed(2).padStart(7)} µs CPU/request  ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${(r.p50 * 1000).toFixed(1)} µs  p99 ${(r.p99 * 1000).toFixed(1)} µs`

const program = Effect.gen(function*() {
  for (let i = 0; i < 3; i++) {
    if (only === undefined || only === "floor") console.log(`floor c${concurrency}`, fmt(yield* floor))
    if (only === undefined || only === "adapters") console.log(`adapters c${concurrency}`, fmt(yield* adapters))
    if (only === undefined || only === "ours") console.log(`ours  c${concurrency}`, fmt(yield* ours))
  }
})

Effect.runPromise(program).then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
