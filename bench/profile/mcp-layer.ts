/**
 * What the McpClient protocol layer costs per call, without pipes or a second
 * process: the stdio transport against an in-process responder (the same
 * Node stream adapters as `bench/in-process.ts`), measured bare
 * (`transport.request`) and through `McpClient.callTool`, interleaved.
 *
 *   npx node bench/profile/mcp-layer.ts [concurrency=32] [total=50000] [rounds=3] [srcDir=src]
 *
 * `srcDir` may point at another build's `src` (e.g. /tmp/before/src) to compare.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as NodeSink from "@effect/platform-node/NodeSink"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Effect, Latch, Layer, Scope } from "effect"
import { ChildProcessSpawner } from "effect/process"
import { resolve } from "node:path"
import { PassThrough } from "node:stream"
import { driveEffect } from "../clients/effect-drive.ts"

const concurrency = Number(process.argv[2] ?? 32)
const total = Number(process.argv[3] ?? 50_000)
const rounds = Number(process.argv[4] ?? 3)
const srcDir = resolve(process.argv[5] ?? new URL("../../src", import.meta.url).pathname)
const only = process.env.ONLY // "bare" or "mcp", for profiling one of them

const StdioClientTransport = await import(`${srcDir}/client/StdioClientTransport.ts`)
const McpClient = await import(`${srcDir}/client/McpClient.ts`)

const INIT_RESULT = {
  protocolVersion: "2025-11-25",
  capabilities: { tools: {} },
  serverInfo: { name: "in-process", version: "1.0.0" }
}
const TOOL_RESULT = { content: [{ type: "text", text: "ok" }] }

/** A responder reading `stdin` and answering on `stdout` one turn later, like the raw responder. */
const makeLink = () => {
  const stdin = new PassThrough()
  const childStdout = new PassThrough()
  const stdout = new PassThrough()
  childStdout.pipe(stdout)
  let pending = ""
  stdin.setEncoding("utf8")
  stdin.on("data", (chunk: string) => {
    pending += chunk
    let out = ""
    let start = 0
    let nl: number
    while ((nl = pending.indexOf("\n", start)) !== -1) {
      const msg = JSON.parse(pending.slice(start, nl)) as { id?: number; method?: string }
      start = nl + 1
      if (msg.id === undefined || msg.method === undefined) continue
      const result = msg.method === "initialize" ? INIT_RESULT : msg.method === "tools/call" ? TOOL_RESULT : {}
      out += JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }) + "\n"
    }
    pending = pending.slice(start)
    if (out.length > 0) setImmediate(() => childStdout.write(out))
  })
  return { stdin, stdout, end: () => childStdout.end() }
}

const spawner = ChildProcessSpawner.make(() =>
  Effect.sync(() => {
    const link = makeLink()
    const exited = Latch.makeUnsafe(false)
    link.stdin.on("end", () => {
      link.end()
      exited.openUnsafe()
    })
    const ended = () => NodeStream.fromReadable({ evaluate: () => new PassThrough().end(), onError: (e) => e as never })
    return ChildProcessSpawner.makeHandle({
      pid: ChildProcessSpawner.ProcessId(-1),
      exitCode: Effect.as(exited.await, ChildProcessSpawner.ExitCode(0)),
      isRunning: Effect.sync(() => !exited.isOpen()),
      kill: () => Effect.sync(() => link.stdin.end()),
      stdin: NodeSink.fromWritable({ evaluate: () => link.stdin, onError: (e) => e as never }),
      stdout: NodeStream.fromReadable({ evaluate: () => link.stdout, onError: (e) => e as never }),
      stderr: ended(),
      all: ended(),
      getInputFd: () => NodeSink.fromWritable({ evaluate: () => new PassThrough(), onError: (e) => e as never }),
      getOutputFd: () => ended(),
      unref: Effect.succeed(Effect.void)
    })
  })
)

const measure = <E>(call: Effect.Effect<unknown, E>) =>
  Effect.gen(function*() {
    yield* driveEffect(call, Math.min(5000, total), concurrency)
    const cpu0 = process.cpuUsage()
    const result = yield* driveEffect(call, total, concurrency)
    const cpu = process.cpuUsage(cpu0)
    return { ...result, cpuUs: (cpu.user + cpu.system) / total }
  })

const withTransport = <A, E>(f: (transport: any) => Effect.Effect<A, E, Scope.Scope>) =>
  Effect.scoped(
    Effect.flatMap(StdioClientTransport.make({ command: "in-process" }), f).pipe(
      Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, spawner)
    ) as Effect.Effect<A, E, Scope.Scope>
  )

const params = { name: "echo", arguments: { text: "hi" } }
const bare = withTransport((t) =>
  Effect.andThen(t.request("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "b", version: "1" } }),
    measure(t.request("tools/call", params)))
)
const mcp = withTransport((t) =>
  Effect.flatMap(McpClient.fromTransport(t, { clientInfo: { name: "m", version: "1" } }), (c: any) => measure(c.callTool(params)))
)

const fmt = (r: { rps: number; cpuUs: number }) => `${r.cpuUs.toFixed(2).padStart(7)} µs CPU/call  ${r.rps.toFixed(0).padStart(7)} calls/s`
const program = Effect.gen(function*() {
  const b: Array<number> = []
  const m: Array<number> = []
  for (let i = 0; i < rounds; i++) {
    if (only !== "mcp") {
      const r = yield* bare
      b.push(r.cpuUs)
      console.log(`bare transport c${concurrency}`, fmt(r))
    }
    if (only !== "bare") {
      const r = yield* mcp
      m.push(r.cpuUs)
      console.log(`McpClient      c${concurrency}`, fmt(r))
    }
  }
  const med = (xs: Array<number>) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!
  if (b.length > 0 && m.length > 0) {
    console.log(`median: bare ${med(b).toFixed(2)} µs, McpClient ${med(m).toFixed(2)} µs, ratio ${(med(m) / med(b)).toFixed(2)}x, layer +${(med(m) - med(b)).toFixed(2)} µs`)
  }
})

Effect.runPromise(program.pipe(Effect.provide(Layer.empty), Effect.provide(NodeServices.layer))).then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
