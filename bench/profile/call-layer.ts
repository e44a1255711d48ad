/**
 * What `McpClient`'s call layer costs per call above the stdio transport,
 * without pipes or a second process: the transport against an in-process
 * responder that sends `progress` notifications (1..n, total n) before each
 * `tools/call` result, in the same chunk, one event-loop turn later.
 *
 *   npx node bench/profile/call-layer.ts <mode> <progress> <concurrency> <total> [srcDir]
 *   npx node bench/profile/call-layer.ts ab <runs> <before-src> <mode:progress:concurrency:total>...
 *
 * mode `bare`: `transport.request` with a progress token (nothing routes it);
 * `plain`: `McpClient.callTool` without `onProgress`; `progress`: with one.
 * The first form prints one JSON line { mode, progress, concurrency, cpuUs,
 * progressSeen }; `ab` runs the cells in fresh processes, before and after
 * interleaved, and prints medians. Run the first form under `--cpu-prof`
 * and summarise with bench/profile/summarize.ts.
 *
 * BENCH_PROTOCOL pins `McpClient` to a revision (`2025-11-25`, or
 * `2026-07-28`: no handshake, the revision in every request's `_meta`, the
 * responder answering as that revision does); unset, the client's default.
 * The `ab` form passes it on, e.g. both eras of one cell:
 *
 *   for p in 2025-11-25 2026-07-28; do BENCH_PROTOCOL=$p npx node bench/profile/call-layer.ts ab 5 /tmp/before/src plain:0:8:50000; done
 */
import { execFileSync } from "node:child_process"
import { resolve } from "node:path"
import { Effect } from "effect"
import { ChildProcessSpawner } from "effect/process"
import { driveEffect } from "../clients/effect-drive.ts"
import { makeSpawner } from "../in-process-spawner.ts"

const [mode = "plain", ...rest] = process.argv.slice(2)

if (mode === "ab") {
  const [runsText = "5", beforeSrc, ...cells] = rest
  if (beforeSrc === undefined || cells.length === 0) throw new Error("usage: call-layer.ts ab <runs> <before-src> <cell>...")
  const self = new URL(import.meta.url).pathname
  const after = resolve(new URL("../../src", import.meta.url).pathname)
  const runOne = (cell: string, src: string): number => {
    const out = execFileSync(process.execPath, [self, ...cell.split(":"), src], { encoding: "utf8" })
    return JSON.parse(out.trim().split("\n").at(-1)!).cpuUs
  }
  const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const fmt = (xs: Array<number>) => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`
  for (const cell of cells) {
    const before: Array<number> = []
    const afterRuns: Array<number> = []
    for (let r = 0; r < Number(runsText); r++) {
      before.push(runOne(cell, beforeSrc))
      afterRuns.push(runOne(cell, after))
    }
    console.log(
      `${cell.padEnd(24)} cpu µs/call before ${fmt(before).padEnd(26)} after ${fmt(afterRuns).padEnd(26)}` +
        ` after/before ${(median(afterRuns) / median(before)).toFixed(2)}`
    )
  }
  console.log(`load ${(await import("node:os")).loadavg().map((l) => l.toFixed(2)).join(" ")}`)
  process.exit(0)
}

const [progressText = "20", concurrencyText = "8", totalText = "20000", srcText] = rest
const progress = Number(progressText)
const concurrency = Number(concurrencyText)
const total = Number(totalText)
const srcDir = resolve(srcText ?? new URL("../../src", import.meta.url).pathname)

const StdioClientTransport = await import(`${srcDir}/client/StdioClientTransport.ts`)
const McpClient = await import(`${srcDir}/client/McpClient.ts`)

const protocol = process.env.BENCH_PROTOCOL || undefined
const spawner = makeSpawner(progress, protocol === "2026-07-28")

let progressSeen = 0
const params = { name: "echo", arguments: { text: "hi" } }

const measure = <E>(call: Effect.Effect<unknown, E>) =>
  Effect.gen(function*() {
    yield* driveEffect(call, Math.min(5000, total), concurrency)
    progressSeen = 0
    const cpu0 = process.cpuUsage()
    yield* driveEffect(call, total, concurrency)
    const cpu = process.cpuUsage(cpu0)
    return (cpu.user + cpu.system) / total
  })

const program = Effect.scoped(
  Effect.gen(function*() {
    const t: any = yield* StdioClientTransport.make({ command: "in-process" })
    if (mode === "bare") {
      yield* t.request("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "b", version: "1" } })
      let token = 0
      return yield* measure(
        Effect.suspend(() => t.request("tools/call", { ...params, _meta: { progressToken: `t${++token}` } }))
      )
    }
    const client: any = yield* McpClient.fromTransport(t, {
      clientInfo: { name: "m", version: "1" },
      ...(protocol === undefined ? {} : { protocol })
    })
    const onProgress = () =>
      Effect.sync(() => {
        progressSeen++
      })
    return yield* measure(mode === "progress" ? client.callTool(params, { onProgress }) : client.callTool(params))
  })
).pipe(Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, spawner)) as Effect.Effect<number, unknown, never>

const cpuUs = await Effect.runPromise(program)
process.stdout.write(
  JSON.stringify({ mode, protocol, progress, concurrency, cpuUs, progressSeen: progressSeen / total }) + "\n"
)
process.exit(0)
