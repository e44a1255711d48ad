/**
 * What an HTTP server holds for a legacy HTTP+SSE client that never reads its
 * stream: starts a server (an `echo` tool on HttpServerTransport's defaults)
 * in one child process, and in another a client that opens `GET /sse`, stops
 * reading after the `endpoint` event and POSTs `count` echoes of `bytes` each
 * to `/messages`. Prints the server's memory (after a full GC) and transport
 * stats when listening, after the POSTs (the client still connected) and after
 * the client has gone. With `read` the client reads its stream instead: what
 * serving the same POSTs costs when nothing piles up.
 *
 *   npx node bench/profile/slow-consumer-rss.ts [count=10000] [bytes=16384] [unread|read]
 *
 * `BENCH_BUILD=dist` serves from the built package instead of `src/`.
 */
import { spawn } from "node:child_process"
import * as http from "node:http"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import type { Handler } from "../../src/server/Handler.ts"

const self = fileURLToPath(import.meta.url)
const role = process.argv[2]

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`

// ---------------------------------------------------------------------------
// Server: answers `stats` lines on stdin with one line of memory and transport stats.

const serve = async () => {
  const { loadHttpServerTransport, loadJsonRpc } = await import("../our-modules.ts")
  const HttpServerTransport = await loadHttpServerTransport()
  const JsonRpc = await loadJsonRpc()
  const { Context, Effect, Layer, Option, Scope } = await import("effect")
  const handler: Handler = (message) =>
    Effect.sync(() => {
      if (!("id" in message)) return null
      if (message.method === "initialize") {
        return JsonRpc.success(message.id, {
          protocolVersion: "2024-11-05",
          capabilities: { tools: {} },
          serverInfo: { name: "slow-consumer-rss", version: "1.0.0" }
        })
      }
      const params = (message.params ?? {}) as { arguments?: { text?: string } }
      return JsonRpc.success(message.id, { content: [{ type: "text", text: params.arguments?.text ?? "" }] })
    })
  const transport = await Effect.runPromise(Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(HttpServerTransport.layer(handler, { port: 0 }), scope)
    return Context.get(context, HttpServerTransport.HttpServerTransport)
  }))
  const gc = (globalThis as { gc?: () => void }).gc
  createInterface({ input: process.stdin }).on("line", async () => {
    // Array buffers are freed by a task after the collection that found them dead: collect, let it run, collect.
    gc?.()
    await new Promise((resolve) => setTimeout(resolve, 200))
    gc?.()
    const stats = await Effect.runPromise(transport.stats)
    const m = process.memoryUsage()
    process.stdout.write(`stats ${JSON.stringify({ rss: m.rss, heapUsed: m.heapUsed, external: m.external, stats })}\n`)
  }).on("close", () => process.exit(0))
  process.stdout.write(`listening ${Option.getOrThrow(transport.url)}\n`)
}

// ---------------------------------------------------------------------------
// Client: never reads the SSE stream past `endpoint`; exits on SIGTERM.

const abuse = async (base: string, count: number, bytes: number, reads: boolean) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const endpoint = await new Promise<string>((resolve, reject) => {
    const req = http.get(`${base}/sse`, { headers: { accept: "text/event-stream" } }, (res) => {
      let text = ""
      const onData = (chunk: Buffer) => {
        text += chunk.toString("utf8")
        const found = /event: endpoint\ndata: (.*)\n/.exec(text)
        if (found === null) return
        res.off("data", onData)
        if (reads) res.resume()
        else res.pause()
        resolve(found[1]!)
      }
      res.on("data", onData)
      res.on("close", () => process.stdout.write("sse closed\n"))
    })
    req.on("error", reject)
  })
  const post = (body: unknown) =>
    new Promise<number>((resolve) => {
      const req = http.request(`${base}${endpoint}`, {
        method: "POST",
        agent,
        headers: { "content-type": "application/json" }
      }, (res) => {
        res.resume()
        res.on("end", () => resolve(res.statusCode ?? 0))
      })
      req.on("error", () => resolve(0))
      req.end(JSON.stringify(body))
    })
  await post({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2024-11-05", capabilities: {}, clientInfo: { name: "slow", version: "1" } } })
  await post({ jsonrpc: "2.0", method: "notifications/initialized" })
  const text = "x".repeat(bytes)
  const statuses = new Map<number, number>()
  let firstRefused: number | undefined
  for (let i = 1; i <= count; i++) {
    const status = await post({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "echo", arguments: { text } } })
    statuses.set(status, (statuses.get(status) ?? 0) + 1)
    if (status !== 202 && firstRefused === undefined) firstRefused = i
  }
  const summary = [...statuses].map(([status, n]) => `${n} x ${status}`).join(", ")
  process.stdout.write(`posted ${count}: ${summary}${firstRefused === undefined ? "" : `; first refusal at #${firstRefused}`}\n`)
  // Stays connected (a paused socket alone does not keep the process alive) until told to go.
  setInterval(() => {}, 60_000)
  process.on("SIGTERM", () => process.exit(0))
}

// ---------------------------------------------------------------------------
// Parent

/** The next line of a child's stdout that starts with `prefix`; every other line is echoed. */
const lines = (child: ReturnType<typeof spawn>) => {
  const waiting: Array<{ readonly prefix: string; readonly resolve: (line: string) => void }> = []
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const at = waiting.findIndex((w) => line.startsWith(w.prefix))
    if (at < 0) process.stdout.write(`  ${line.slice(0, 300)}\n`)
    else waiting.splice(at, 1)[0]!.resolve(line)
  })
  return (prefix: string) => new Promise<string>((resolve) => waiting.push({ prefix, resolve }))
}

const main = async (count: number, bytes: number, mode: string) => {
  const server = spawn(process.execPath, ["--expose-gc", self, "serve"], { stdio: ["pipe", "pipe", "inherit"] })
  const nextServerLine = lines(server)
  const url = (await nextServerLine("listening ")).replace(/^listening /, "")
  const base = url.replace(/\/mcp$/, "")
  const sample = async () => {
    server.stdin!.write("stats\n")
    return JSON.parse((await nextServerLine("stats ")).slice(6)) as {
      readonly rss: number
      readonly heapUsed: number
      readonly external: number
      readonly stats: Record<string, number>
    }
  }
  const print = (label: string, { external, heapUsed, rss, stats }: Awaited<ReturnType<typeof sample>>) =>
    console.log(`${label.padEnd(34)} RSS ${mib(rss)}, heap ${mib(heapUsed)}, external ${mib(external)}; ` +
      `legacy sessions ${stats.legacySessions}, open streams ${stats.openStreams}` +
      (stats.streamsDropped === undefined ? "" : `, streams dropped ${stats.streamsDropped}`))
  print("listening", await sample())
  const client = spawn(process.execPath, [self, "abuse", base, String(count), String(bytes), mode], { stdio: ["ignore", "pipe", "inherit"] })
  const nextClientLine = lines(client)
  process.stdout.write(`  ${await nextClientLine("posted ")}\n`)
  print(`after ${count} x ${bytes} B ${mode}`, await sample())
  const exited = new Promise((resolve) => client.on("exit", resolve))
  client.kill("SIGTERM")
  await exited
  // The server notices the closed socket on a later turn; then its buffers are garbage.
  let after = await sample()
  for (let i = 0; i < 50 && (after.stats.legacySessions > 0 || after.stats.openStreams > 0); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    after = await sample()
  }
  await new Promise((resolve) => setTimeout(resolve, 1000))
  print("after the client left", await sample())
  server.stdin!.end()
}

if (role === "serve") await serve()
else if (role === "abuse") await abuse(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]), process.argv[6] === "read")
else await main(Number(process.argv[2] ?? 10_000), Number(process.argv[3] ?? 16_384), process.argv[4] === "read" ? "read" : "unread")
