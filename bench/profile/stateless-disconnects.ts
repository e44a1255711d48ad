/**
 * Many stateless-era (2026-07-28) `tools/call`s at once over real loopback
 * HTTP, a seeded share cut by their client at random points (mid-body, on
 * the first answer bytes, after a random delay; see
 * test/fixtures/stateless-load.ts), against McpServer on HttpServerTransport
 * in a child process (served from `src/`). Prints the server's memory
 * (after a full GC) before, and for each round of `count` requests at
 * once: at the peak (sampled every 100 ms, and the kernel's VmHWM), when
 * every request settled, and after a full GC, with the transport's stats
 * and the handlers still running; then whether every kept call got its own
 * answer. A second round shows whether what the first left behind grows.
 *
 *   npx node bench/profile/stateless-disconnects.ts [count=10000] [rounds=2] [cutShare=0.33] [seed=26] [maxWorkMs=20]
 */
import { spawn } from "node:child_process"
import * as http from "node:http"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { statusMiB } from "./listening-server.ts"

const self = fileURLToPath(import.meta.url)
const role = process.argv[2]

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`

interface Sample {
  readonly rss: number
  readonly heapUsed: number
  readonly external: number
  readonly handlers: { readonly active: number; readonly started: number }
  readonly stats: Record<string, number>
}

// ---------------------------------------------------------------------------
// Server: `gc` and `peek` lines on stdin, each answered with one `sample` line.

const serve = async (count: number) => {
  const { Context, Effect, Layer, Option, Scope } = await import("effect")
  const HttpServerTransport = await import("../../src/server/HttpServerTransport.ts")
  const McpServer = await import("../../src/server/McpServer.ts")
  const { loadOptions, makeLoadServer } = await import("../../test/fixtures/stateless-load.ts")
  const handlers = { active: 0, started: 0 }
  const transport = await Effect.runPromise(Effect.gen(function*() {
    const scope = yield* Scope.make()
    const handle = yield* McpServer.toHandler(makeLoadServer(handlers)).pipe(Scope.provide(scope))
    const context = yield* Layer.buildWithScope(
      HttpServerTransport.layer(handle.handler, { port: 0, ...loadOptions(count) }),
      scope
    )
    return Context.get(context, HttpServerTransport.HttpServerTransport)
  }))
  const gc = (globalThis as { gc?: () => void }).gc
  createInterface({ input: process.stdin }).on("line", async (command) => {
    if (command === "gc") {
      // Array buffers are freed by a task after the collection that found them dead: collect, let it run, collect.
      gc?.()
      await new Promise((resolve) => setTimeout(resolve, 200))
      gc?.()
    }
    const stats = await Effect.runPromise(transport.stats)
    const m = process.memoryUsage()
    const sample: Sample = { rss: m.rss, heapUsed: m.heapUsed, external: m.external, handlers, stats: { ...stats } }
    process.stdout.write(`sample ${JSON.stringify(sample)}\n`)
  }).on("close", () => process.exit(0))
  process.stdout.write(`listening ${Option.getOrThrow(transport.url)}\n`)
}

// ---------------------------------------------------------------------------
// Parent

const main = async (count: number, rounds: number, cutShare: number, seed: number, maxWorkMs: number) => {
  const { runLoad } = await import("../../test/fixtures/stateless-load.ts")
  const server = spawn(process.execPath, ["--expose-gc", self, "serve", String(count)], { stdio: ["pipe", "pipe", "inherit"] })
  const waiting: Array<{ readonly prefix: string; readonly resolve: (line: string) => void }> = []
  createInterface({ input: server.stdout! }).on("line", (line) => {
    const at = waiting.findIndex((w) => line.startsWith(w.prefix))
    if (at < 0) process.stdout.write(`  ${line.slice(0, 300)}\n`)
    else waiting.splice(at, 1)[0]!.resolve(line)
  })
  const next = (prefix: string) => new Promise<string>((resolve) => waiting.push({ prefix, resolve }))
  const url = (await next("listening ")).replace(/^listening /, "")
  const ask = async (command: "gc" | "peek"): Promise<Sample> => {
    const line = next("sample ")
    server.stdin!.write(`${command}\n`)
    return JSON.parse((await line).slice(7)) as Sample
  }
  const print = (label: string, s: Sample) =>
    console.log(
      `${label.padEnd(30)} RSS ${mib(s.rss)}, heap ${mib(s.heapUsed)}, external ${mib(s.external)}; ` +
        `handlers running ${s.handlers.active}; stateless ${s.stats.statelessRequests}, open ${s.stats.openStreams}, ` +
        `slots ${s.stats.slotsInUse}, sessions ${s.stats.sessions + s.stats.ephemeralSessions}, buffered ${s.stats.bufferedBytes}`
    )

  // Each round has an agent of its own: a socket kept alive from an earlier round may be closed by
  // the server's keep-alive timeout just as it is reused, a client-side race that is no fault of the server.
  const agentFor = (n: number) => new http.Agent({ keepAlive: true, maxSockets: n })
  // A first, smaller round: modules loaded, code warm.
  const warmup = Math.min(1_000, count)
  const warmAgent = agentFor(warmup)
  await runLoad({ url, count: warmup, seed: seed + 1, cutShare, maxWorkMs, agent: warmAgent })
  warmAgent.destroy()
  const idle = async () => {
    for (let i = 0; i < 200; i++) {
      const s = await ask("peek")
      if (s.handlers.active === 0 && s.stats.statelessRequests === 0 && s.stats.openStreams === 0) return s
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    return ask("peek")
  }
  await idle()
  const before = await ask("gc")
  print(`before (after ${warmup} warm-up)`, before)

  let failed = 0
  let after = before
  for (let round = 1; round <= rounds; round++) {
    let peakRss = 0
    let peakHeap = 0
    let peakHandlers = 0
    let sampling = true
    const sampler = (async () => {
      while (sampling) {
        const s = await ask("peek")
        peakRss = Math.max(peakRss, s.rss)
        peakHeap = Math.max(peakHeap, s.heapUsed)
        peakHandlers = Math.max(peakHandlers, s.handlers.active)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    })()
    const agent = agentFor(count)
    const startedBefore = after.handlers.started
    const started = performance.now()
    const outcome = await runLoad({ url, count, seed: seed + round - 1, cutShare, maxWorkMs, agent })
    const seconds = ((performance.now() - started) / 1000).toFixed(2)
    sampling = false
    await sampler
    agent.destroy()
    console.log(
      `round ${round}: peak (sampled)     RSS ${mib(peakRss)} (VmHWM ${statusMiB(server.pid!, "VmHWM").toFixed(1)} MiB), ` +
        `heap ${mib(peakHeap)}; handlers running at most ${peakHandlers}`
    )
    print(`round ${round}: settled (no GC)`, await idle())
    after = await ask("gc")
    print(`round ${round}: after GC`, after)
    console.log(
      `round ${round}: ${count} requests (seed ${seed + round - 1}, cut share ${cutShare}, work 0-${maxWorkMs} ms) in ${seconds} s: ` +
        `${outcome.answered} answered, ${outcome.cut} cut, ${outcome.failures.length} kept calls without their answer; ` +
        `handlers started ${after.handlers.started - startedBefore}; ` +
        `heap after GC - before ${((after.heapUsed - before.heapUsed) / 1024 / 1024).toFixed(1)} MiB, ` +
        `RSS after GC - before ${((after.rss - before.rss) / 1024 / 1024).toFixed(1)} MiB`
    )
    for (const failure of outcome.failures.slice(0, 10)) console.log(`  ${failure}`)
    failed += outcome.failures.length
  }
  server.stdin!.end()
  process.exit(failed === 0 && after.handlers.active === 0 ? 0 : 1)
}

if (role === "serve") {
  await serve(Number(process.argv[3] ?? "10000"))
} else {
  const [count = "10000", rounds = "2", cutShare = "0.33", seed = "26", maxWorkMs = "20"] = process.argv.slice(2)
  await main(Number(count), Number(rounds), Number(cutShare), Number(seed), Number(maxWorkMs))
}
