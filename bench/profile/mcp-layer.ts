/**
 * What the McpClient protocol layer costs per call, without pipes or a second
 * process: the stdio transport against an in-process responder (`bench/in-process-spawner.ts`), measured bare
 * (`transport.request`) and through `McpClient.callTool`, interleaved.
 *
 *   npx node bench/profile/mcp-layer.ts [concurrency=32] [total=50000] [rounds=3] [srcDir=src]
 *
 * `srcDir` may point at another build's `src` (e.g. /tmp/before/src) to compare.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Layer, Scope } from "effect"
import { ChildProcessSpawner } from "effect/process"
import { resolve } from "node:path"
import { driveEffect } from "../clients/effect-drive.ts"
import { spawner } from "../in-process-spawner.ts"

const concurrency = Number(process.argv[2] ?? 32)
const total = Number(process.argv[3] ?? 50_000)
const rounds = Number(process.argv[4] ?? 3)
const srcDir = resolve(process.argv[5] ?? new URL("../../src", import.meta.url).pathname)
const only = process.env.ONLY // "bare" or "mcp", for profiling one of them

const StdioClientTransport = await import(`${srcDir}/client/StdioClientTransport.ts`)
const McpClient = await import(`${srcDir}/client/McpClient.ts`)

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
