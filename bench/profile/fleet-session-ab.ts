/**
 * One handshake-era session's calls on a fleet instance with the Redis
 * store (bench/fleet/server.ts on `RedisFleet.layer`), one at a time: this
 * checkout's instance and, with `BEFORE_ROOT`, another checkout's, both on
 * one `redis-server` (each under its own prefix), in rounds that alternate
 * which goes first, so load on a shared machine hits both alike. Prints,
 * per instance, the medians over rounds of the instance's CPU per call
 * (read inside it) and the wall time per call.
 *
 *   BEFORE_ROOT=/tmp/before npx node bench/profile/fleet-session-ab.ts <requests|events> [rounds=10] [calls=200] [events=20]
 *
 * - `requests`: `tools/call wait {ms: 0}`, answered as JSON;
 * - `events`: `tools/call progress {n: events, gapMs: 1}`, answered on SSE
 *   (each event through the Redis event log).
 *
 * `BEFORE_ROOT` is a checkout with `bench/` and `src/` (or `dist/` under
 * `BENCH_BUILD=dist`, built there) and `node_modules` linked beside them,
 * e.g. `git worktree add /tmp/before <commit>`.
 */
import { Agent } from "node:http"
import { startRedis } from "../fleet/redis.ts"

const kind = process.argv[2] === "events" ? "events" : "requests"
const rounds = Number(process.argv[3] ?? 10)
const calls = Number(process.argv[4] ?? 200)
const events = Number(process.argv[5] ?? 20)
const here = new URL("../..", import.meta.url).pathname.replace(/\/$/, "")
const roots = process.env.BEFORE_ROOT === undefined ? [here] : [process.env.BEFORE_ROOT, here]

interface Driven {
  readonly root: string
  readonly call: () => Promise<unknown>
  readonly cpuUs: () => Promise<number>
  readonly close: () => Promise<void>
  readonly cpu: Array<number>
  readonly wall: Array<number>
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

const redis = await startRedis()
const driven: Array<Driven> = []
try {
  for (const [i, root] of roots.entries()) {
    const { startInstance } = await import(`${root}/bench/fleet/instances.ts`)
    const wire = await import(`${root}/bench/fleet/wire.ts`)
    const instance = await startInstance({ store: "redis", redis: redis.url, prefix: `ab${i}:`, name: `ab${i}` })
    const agent = new Agent({ keepAlive: true, maxSockets: 2 })
    const session = await wire.openSession(instance.url, agent)
    const params = kind === "events"
      ? { name: "progress", arguments: { n: events, gapMs: 1 } }
      : { name: "wait", arguments: { ms: 0 } }
    driven.push({
      root,
      call: async () => wire.resultOf(await wire.sessionCall(instance.url, agent, session, "tools/call", params, kind === "events")),
      cpuUs: () => instance.cpuUs(),
      close: async () => {
        agent.destroy()
        await instance.stop()
      },
      cpu: [],
      wall: []
    })
  }
  for (const d of driven) for (let i = 0; i < 20; i++) await d.call()
  for (let round = 0; round < rounds; round++) {
    for (const d of round % 2 === 0 ? driven : [...driven].reverse()) {
      const cpu0 = await d.cpuUs()
      const t0 = performance.now()
      for (let i = 0; i < calls; i++) await d.call()
      d.wall.push((performance.now() - t0) / calls)
      d.cpu.push((await d.cpuUs() - cpu0) / calls)
    }
  }
  for (const d of driven) {
    process.stdout.write(
      `${d.root} ${kind}: server CPU ${median(d.cpu).toFixed(0)} µs a call, wall ${median(d.wall).toFixed(3)} ms a call` +
        ` (rounds: ${d.cpu.map((c) => c.toFixed(0)).join(" ")} µs)\n`
    )
  }
} finally {
  for (const d of driven) await d.close()
  await redis.stop()
}
