/**
 * How fast an instance of a fleet turns requests away while its Redis is
 * gone, and how fast that answer is:
 *
 *   npx node bench/fleet/outage.ts            # 5 rounds each, 2,000 refused requests per latency figure
 *   BENCH_OUTAGE_ROUNDS=3 BENCH_OUTAGE_TOTAL=500 npx node bench/fleet/outage.ts
 *
 * One instance (`McpServer.layerHttp` on `RedisFleet.layer`, default
 * options) in this process, a real `redis-server` on loopback
 * (test/fixtures/RedisServer.ts), and one client sending `tools/list` on a
 * handshake-era session back to back (node's fetch, keep-alive).
 *
 * - killed: Redis is SIGKILLed; the time from the signal to the first 503
 *   (the client notices the closed socket), then the latency of 503s at
 *   concurrency 1 and 16 (p50, p99). Redis is started again between rounds.
 * - paused: Redis is SIGSTOPped (connections stay open, nothing answers);
 *   the time to the first 503 (the `PING` probe, every `probeIntervalMs`,
 *   unanswered within `commandTimeoutMs`) and the longest request meanwhile
 *   (a request under way waits out the command timeout).
 *
 * Prints a Markdown table and one JSON line.
 */
import { Context, Effect, Exit, Layer, Option, References, Scope } from "effect"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as RedisFleet from "../../src/server/RedisFleet.ts"
import * as RedisServer from "../../test/fixtures/RedisServer.ts"
import { percentile } from "../stats.ts"

const ROUNDS = Number(process.env.BENCH_OUTAGE_ROUNDS ?? 5)
const TOTAL = Number(process.env.BENCH_OUTAGE_TOTAL ?? 2000)
const HANDSHAKE = "2025-11-25"

const server = McpServer.make({
  serverInfo: { name: "outage-bench", version: "1.0.0" },
  capabilities: { tools: {} },
  requestStateKeys: ["b".repeat(32)]
}).pipe(
  McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [], ttlMs: 0, cacheScope: "private" }))
)

const json = { "content-type": "application/json", accept: "application/json, text/event-stream" }

const openSession = async (url: string): Promise<Record<string, string>> => {
  const init = await fetch(url, {
    method: "POST",
    headers: json,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: HANDSHAKE, capabilities: {}, clientInfo: { name: "bench", version: "1" } }
    })
  })
  await init.text()
  const headers = { ...json, "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": HANDSHAKE }
  await (await fetch(url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })).text()
  return headers
}

/** One `tools/list`: its status and how long it took (ms). */
const list = async (url: string, headers: Record<string, string>) => {
  const t0 = performance.now()
  const res = await fetch(url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) })
  await res.text()
  return { status: res.status, ms: performance.now() - t0 }
}

/** Sends requests back to back from `since` until one is 503: ms from `since` to that answer, and the longest request. */
const untilRefused = async (url: string, headers: Record<string, string>, since: number) => {
  let longest = 0
  for (;;) {
    const r = await list(url, headers)
    longest = Math.max(longest, r.ms)
    if (r.status === 503) return { firstMs: performance.now() - since, longestMs: longest }
  }
}

const refusedLatency = async (url: string, headers: Record<string, string>, concurrency: number) => {
  const latencies: Array<number> = []
  let next = 0
  const worker = async () => {
    while (next++ < TOTAL) {
      const r = await list(url, headers)
      if (r.status !== 503) throw new Error(`expected 503 during the outage, got ${r.status}`)
      latencies.push(r.ms)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  latencies.sort((a, b) => a - b)
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
}

const waitHealthy = async (healthUrl: string) => {
  while ((await fetch(healthUrl)).status !== 200) await new Promise((r) => setTimeout(r, 50))
}

const med = (xs: ReadonlyArray<number>) => percentile([...xs].sort((a, b) => a - b), 50)
const fmt = (ms: number) => ms < 10 ? ms.toFixed(2) : ms.toFixed(0)

const program = Effect.gen(function*() {
  const redis = yield* RedisServer.make()
  const scope = yield* Scope.make()
  const context = yield* Layer.buildWithScope(
    McpServer.layerHttp(server, { port: 0 }).pipe(Layer.provide(RedisFleet.layer({ url: redis.url, prefix: "bench:" }))),
    scope
  )
  const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
  const healthUrl = `${url}/health`
  const headers = yield* Effect.promise(() => openSession(url))

  const killed = { firstMs: [] as Array<number>, c1: [] as Array<{ p50: number; p99: number }>, c16: [] as Array<{ p50: number; p99: number }> }
  const paused = { firstMs: [] as Array<number>, longestMs: [] as Array<number> }
  const served: Array<number> = []
  for (let round = 0; round < ROUNDS; round++) {
    // Warm, and the same request answered (200) for comparison.
    for (let i = 0; i < 50; i++) served.push((yield* Effect.promise(() => list(url, headers))).ms)
    const since = performance.now()
    yield* redis.kill
    const first = yield* Effect.promise(() => untilRefused(url, headers, since))
    killed.firstMs.push(first.firstMs)
    killed.c1.push(yield* Effect.promise(() => refusedLatency(url, headers, 1)))
    killed.c16.push(yield* Effect.promise(() => refusedLatency(url, headers, 16)))
    yield* redis.start
    yield* Effect.promise(() => waitHealthy(healthUrl))

    for (let i = 0; i < 50; i++) yield* Effect.promise(() => list(url, headers))
    const pausedAt = performance.now()
    yield* redis.pause
    const stalled = yield* Effect.promise(() => untilRefused(url, headers, pausedAt))
    paused.firstMs.push(stalled.firstMs)
    paused.longestMs.push(stalled.longestMs)
    yield* redis.resume
    yield* Effect.promise(() => waitHealthy(healthUrl))
  }
  yield* Scope.close(scope, Exit.void)

  const row = (name: string, xs: ReadonlyArray<number>) =>
    `| ${name} | ${fmt(med(xs))} | ${fmt(Math.min(...xs))} | ${fmt(Math.max(...xs))} |`
  const lines = [
    `Redis outage, ${ROUNDS} rounds, ${TOTAL} refused requests per latency figure (ms: median, min, max over the rounds)`,
    "",
    "| figure | median | min | max |",
    "|---|---|---|---|",
    row("Redis up: tools/list latency p50, c1 (200)", [percentile([...served].sort((a, b) => a - b), 50)]),
    row("killed: signal to first 503", killed.firstMs),
    row("killed: 503 latency p50, c1", killed.c1.map((r) => r.p50)),
    row("killed: 503 latency p99, c1", killed.c1.map((r) => r.p99)),
    row("killed: 503 latency p50, c16", killed.c16.map((r) => r.p50)),
    row("killed: 503 latency p99, c16", killed.c16.map((r) => r.p99)),
    row("paused: signal to first 503", paused.firstMs),
    row("paused: longest request meanwhile", paused.longestMs)
  ]
  console.log(lines.join("\n"))
  console.log(JSON.stringify({ rounds: ROUNDS, total: TOTAL, killed, paused }))
})

// The Redis client's reconnect warnings are expected here.
Effect.runPromise(Effect.scoped(program).pipe(Effect.provideService(References.MinimumLogLevel, "Error"))).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
