/**
 * `McpClient.callTool` per call, several builds and protocol eras in ONE
 * process, measured in alternating short rounds (every variant once per
 * round, in turn), so that load from other processes falls on all of them
 * alike; no pipes, no second process (the in-process responder of
 * bench/in-process-spawner.ts, stateless for 2026-07-28, whose own work is
 * in the figures too):
 *
 *   npx node bench/profile/call-layer-rounds.ts <rounds> <calls> <mode:progress:concurrency> <srcDir>...
 *
 * e.g. `… 15 4000 progress:20:4 ./src /tmp/before/src` (a copy of an older
 * `src/` with `node_modules` and `package.json` linked beside it).
 * mode `plain`: `callTool` without `onProgress`; `progress`: with one (as the
 * sweep's `ours`). BENCH_ERAS: the eras, default `2025-11-25,2026-07-28`.
 * Prints, per variant, the median and minimum CPU µs per call over the
 * rounds, each median's ratio to the first variant's, and the median of the
 * same less the responder's own time ("client"; the responder's work differs
 * by era: bigger requests to parse, bigger results to write).
 */
import { Effect, Scope } from "effect"
import { ChildProcessSpawner } from "effect/process"
import { resolve } from "node:path"
import { loadavg } from "node:os"
import { driveEffect } from "../clients/effect-drive.ts"
import { makeSpawner, type ResponderTime } from "../in-process-spawner.ts"

const [roundsText = "15", callsText = "4000", cellText = "progress:20:4", ...srcArgs] = process.argv.slice(2)
const rounds = Number(roundsText)
const calls = Number(callsText)
const [mode = "progress", progressText = "20", concurrencyText = "4"] = cellText.split(":")
const progress = Number(progressText)
const concurrency = Number(concurrencyText)
const srcDirs = (srcArgs.length > 0 ? srcArgs : [new URL("../../src", import.meta.url).pathname]).map((d) => resolve(d))
const eras = (process.env.BENCH_ERAS ?? "2025-11-25,2026-07-28").split(",")
const params = { name: "echo", arguments: { text: "hi" } }

interface Variant {
  readonly name: string
  readonly run: (n: number) => Promise<void>
  readonly samples: Array<number>
  /** CPU µs per call less the responder's time. */
  readonly client: Array<number>
  readonly time: ResponderTime
}

let seen = 0
const variants: Array<Variant> = []
for (const src of srcDirs) {
  const StdioClientTransport = await import(`${src}/client/StdioClientTransport.ts`)
  const McpClient = await import(`${src}/client/McpClient.ts`)
  for (const protocol of eras) {
    const time: ResponderTime = { ms: 0 }
    const spawner = makeSpawner(progress, protocol === "2026-07-28", time)
    const client: any = await Effect.runPromise(
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make({ command: "in-process" })
        return yield* McpClient.fromTransport(t, { clientInfo: { name: "m", version: "1" }, protocol })
      }).pipe(
        Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, spawner),
        // Kept open until the process exits.
        Effect.provideService(Scope.Scope, Scope.makeUnsafe())
      ) as Effect.Effect<unknown>
    )
    const onProgress = () => Effect.sync(() => void seen++)
    const call: Effect.Effect<unknown, unknown> = mode === "progress"
      ? client.callTool(params, { onProgress })
      : client.callTool(params)
    variants.push({
      name: `${src} ${protocol}`,
      run: (n) => Effect.runPromise(driveEffect(call, n, concurrency) as Effect.Effect<void, unknown>),
      samples: [],
      client: [],
      time
    })
  }
}

// Warm-up: every variant compiled before any is measured.
for (const v of variants) await v.run(calls * 3)
for (let r = 0; r < rounds; r++) {
  // Alternating order, so that neither side always follows the same one.
  const order = r % 2 === 0 ? variants : [...variants].reverse()
  for (const v of order) {
    const responder0 = v.time.ms
    const cpu0 = process.cpuUsage()
    await v.run(calls)
    const cpu = process.cpuUsage(cpu0)
    v.samples.push((cpu.user + cpu.system) / calls)
    v.client.push((cpu.user + cpu.system - (v.time.ms - responder0) * 1000) / calls)
  }
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const base = median(variants[0]!.samples)
console.log(`${mode} p${progress} c${concurrency}, ${rounds} rounds of ${calls} calls, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`)
for (const v of variants) {
  const m = median(v.samples)
  console.log(
    `${v.name.padEnd(50)} cpu µs/call median ${m.toFixed(2).padStart(6)}  min ${Math.min(...v.samples).toFixed(2).padStart(6)}  ${(m / base).toFixed(2)}x` +
      `   client ${median(v.client).toFixed(2).padStart(6)}`
  )
}
process.exit(0)
