/**
 * What V8's scavenges promote per Redis command, by way of the command's
 * timeout. node-redis (6.3) gives every command an `AbortSignal.timeout`
 * (`commandOptions.timeout`, default 5000 ms; `RedisFleet` set 2000) and
 * removes its listener once the command is written; Node cannot cancel that
 * signal's timer, which stays pending, unref'd, for the whole timeout. Each
 * command so leaves a timer, its closure, a `WeakRef` and a
 * `FinalizationRegistry` cell alive across many scavenges: they are promoted,
 * and collected only by a full GC.
 *
 * Ways, each in a child under `--trace-gc-nvp`, 16 loops sending `EXISTS` one
 * after another on one connection (`count` commands after a warm-up):
 *   node-redis            `sendCommand`, node-redis's default timeout
 *   node-redis-timeout-0  the same with `commandOptions: { timeout: 0 }` (what RedisFleet sets)
 *   effect                `Redis.send` of `@effect/platform-node`'s `NodeRedis.layer`, default timeout
 *   effect-timeout-0      the same with `commandOptions: { timeout: 0 }`
 *   signal-timeout        no Redis: `AbortSignal.timeout(2000)`, a listener added, a `setImmediate`
 *                         wait, the listener removed (node-redis's pattern in plain Node)
 *   immediate             no Redis: a `setImmediate` wait
 * and prints the bytes promoted per command. Starts its own `redis-server`
 * (bench/fleet/redis.ts), stopped by its pid.
 *
 *   npx node bench/profile/redis-command-timeout-promotion.ts [count=40000] [ways=all]
 *
 * Measured (Node 22.23, node-redis 6.3.1, bytes promoted per command; a
 * way with few scavenges is noisy): count 20000: node-redis 675,
 * node-redis-timeout-0 98 (3 scavenges; 33 at count 60000), effect 722,
 * effect-timeout-0 2, signal-timeout 466, immediate 1.
 */
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"

const WAYS = ["node-redis", "node-redis-timeout-0", "effect", "effect-timeout-0", "signal-timeout", "immediate"]

const child = async (way: string, url: string, count: number) => {
  const noTimeout = way.endsWith("-timeout-0") ? { commandOptions: { timeout: 0 } } : {}
  let op: () => Promise<unknown>
  if (way.startsWith("node-redis")) {
    const { createClient } = await import("redis")
    const client = createClient({ url, ...noTimeout })
    await client.connect()
    op = () => client.sendCommand(["EXISTS", "bench:none"])
  } else if (way.startsWith("effect")) {
    const Effect = await import("effect/Effect")
    const Context = await import("effect/Context")
    const Layer = await import("effect/Layer")
    const Scope = await import("effect/Scope")
    const Redis = await import("effect/persistence/Redis")
    const NodeRedis = await import("@effect/platform-node/NodeRedis")
    const scope = Effect.runSync(Scope.make())
    const context = await Effect.runPromise(Layer.buildWithScope(NodeRedis.layer({ url, ...noTimeout }), scope))
    const redis = Context.get(context, Redis.Redis)
    op = () => Effect.runPromise(redis.send("EXISTS", "bench:none"))
  } else if (way === "signal-timeout") {
    op = () =>
      new Promise((resolve) => {
        const signal = AbortSignal.timeout(2000)
        const listener = () => resolve(undefined)
        signal.addEventListener("abort", listener, { once: true })
        setImmediate(() => {
          signal.removeEventListener("abort", listener)
          resolve(undefined)
        })
      })
  } else op = () => new Promise((resolve) => setImmediate(resolve))
  const run = async (n: number) => {
    let left = n
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (left-- > 0) await op()
    }))
  }
  await run(5000)
  process.stdout.write("measure\n")
  await run(count)
  process.stdout.write("done\n")
  process.exit(0)
}

const [first, second, third, fourth] = process.argv.slice(2)
if (first === "child") {
  await child(second!, third!, Number(fourth))
} else {
  const count = Number(first ?? "40000")
  const ways = second === undefined || second === "all" ? WAYS : second.split(",")
  const { startRedis } = await import("../fleet/redis.ts")
  const redis = await startRedis()
  try {
    for (const way of ways) {
      const gc = { measuring: false, scavenges: 0, promoted: 0 }
      const proc = spawn(
        process.execPath,
        ["--trace-gc-nvp", fileURLToPath(import.meta.url), "child", way, redis.url, String(count)],
        { stdio: ["ignore", "pipe", "inherit"] }
      )
      await new Promise<void>((resolve) =>
        createInterface({ input: proc.stdout! }).on("line", (line) => {
          if (line === "measure") gc.measuring = true
          else if (line === "done") {
            gc.measuring = false
            resolve()
          }
          const s = gc.measuring ? / gc=s .*? promoted=(\d+)/.exec(line) : null
          if (s !== null) {
            gc.scavenges++
            gc.promoted += Number(s[1])
          }
        })
      )
      await new Promise((resolve) => proc.once("exit", resolve))
      console.log(JSON.stringify({
        way,
        commands: count,
        scavenges: gc.scavenges,
        promotedBytesPerCommand: Math.round(gc.promoted / count)
      }))
    }
  } finally {
    await redis.stop()
  }
}
