/**
 * One client floods the HTTP server transport with a batch while another
 * pings it: a server process (a `hold` tool that takes `--hold` ms), a flood
 * process (a 2025-03-26 session posting `N` `tools/call` entries, by default
 * in one POST) and this process (a 2025-11-25 session sending one ping after
 * another until the flood is answered, and reading the server's VmRSS/VmHWM
 * from /proc). Prints the server's RSS before the flood and its peak, what
 * the flood got back, and the pinging client's latency during the flood.
 *
 *   npx node bench/profile/batch-flood.ts [N=80000] [--batch N] [--hold 50]
 *
 * `--batch M` splits the flood into POSTs of M entries sent at once.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import type { Handler } from "../../src/server/Handler.ts"
import { loadHttpServerTransport, loadJsonRpc } from "../our-modules.ts"
import { percentile } from "../stats.ts"
import { startListening, statusMiB } from "./listening-server.ts"

const args = process.argv.slice(2)
const flag = (name: string, fallback: string) => {
  const at = args.indexOf(`--${name}`)
  return at >= 0 && at + 1 < args.length ? args[at + 1]! : fallback
}
const positional = args.filter((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--"))
const role = positional[0] === "serve" || positional[0] === "flood" ? positional[0] : "main"

const headers = (extra: Record<string, string> = {}) => ({
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  ...extra
})

/** Initializes a session of `version` and returns the headers that name it. */
const openSession = async (url: string, version: string) => {
  const init = await fetch(url, {
    method: "POST",
    headers: headers(),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "batch-flood", version: "1" } }
    })
  })
  await init.text()
  const h = { "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": version }
  const done = await fetch(url, {
    method: "POST",
    headers: headers(h),
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })
  })
  await done.text()
  return h
}

const serve = async () => {
  const [HttpServerTransport, JsonRpc, { Effect, Layer, Option }, { NodeRuntime }] = await Promise.all([
    loadHttpServerTransport(),
    loadJsonRpc(),
    import("effect"),
    import("@effect/platform-node")
  ])
  const holdMs = Number(flag("hold", "50"))
  const handler: Handler = (message) =>
    Effect.gen(function*() {
      if (!("id" in message)) return null
      const id = message.id
      switch (message.method) {
        case "initialize":
          return JsonRpc.success(id, {
            protocolVersion: (message.params as { protocolVersion: string }).protocolVersion,
            capabilities: { tools: {} },
            serverInfo: { name: "batch-flood", version: "1" }
          })
        case "tools/call":
          yield* Effect.sleep(holdMs)
          return JsonRpc.success(id, { content: [{ type: "text", text: "held" }] })
        default:
          return JsonRpc.success(id, {})
      }
    })
  const served = HttpServerTransport.layer(handler, { port: 0 })
  const announced = Layer.effectDiscard(Effect.gen(function*() {
    const transport = yield* HttpServerTransport.HttpServerTransport
    yield* Effect.sync(() => console.log(`listening ${Option.getOrThrow(transport.url)}`))
  }))
  NodeRuntime.runMain(Layer.launch(Layer.provideMerge(announced, served)))
}

const flood = async (url: string, total: number, batchSize: number) => {
  const h = await openSession(url, "2025-03-26")
  const bodies: Array<string> = []
  for (let start = 0; start < total; start += batchSize) {
    const entries = []
    for (let i = start; i < Math.min(total, start + batchSize); i++) {
      entries.push({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name: "hold", arguments: {} } })
    }
    bodies.push(JSON.stringify(entries))
  }
  const bytes = bodies.reduce((n, b) => n + Buffer.byteLength(b), 0)
  // The parent times its pings from this line on.
  console.log("posting")
  const t0 = performance.now()
  const statuses = new Map<number, number>()
  let results = 0
  let errors = 0
  await Promise.all(bodies.map(async (body) => {
    const res = await fetch(url, { method: "POST", headers: headers(h), body })
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
    const answer = (await res.json()) as unknown
    if (!Array.isArray(answer)) return
    for (const r of answer as Array<Record<string, unknown>>) {
      if ("result" in r) results++
      else errors++
    }
  }))
  const ms = performance.now() - t0
  console.log(JSON.stringify({ posts: bodies.length, bytes, statuses: Object.fromEntries(statuses), results, errors, ms }))
}

const main = async (total: number) => {
  const here = fileURLToPath(import.meta.url)
  const hold = flag("hold", "50")
  const { process: server, pid, url } = await startListening(here, ["serve", "--hold", hold])

  const h = await openSession(url, "2025-11-25")
  let id = 0
  const ping = async () => {
    const t0 = performance.now()
    const res = await fetch(url, { method: "POST", headers: headers(h), body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "ping" }) })
    await res.text()
    if (res.status !== 200) throw new Error(`ping answered ${res.status}`)
    return performance.now() - t0
  }
  for (let i = 0; i < 50; i++) await ping()
  const quiet: Array<number> = []
  for (let i = 0; i < 50; i++) quiet.push(await ping())
  const rssBefore = statusMiB(pid, "VmRSS")

  const batch = flag("batch", String(total))
  const flooder = spawn(process.execPath, [here, "flood", url, String(total), "--batch", batch], {
    stdio: ["ignore", "pipe", "inherit"]
  })
  let floodOut = ""
  let flooding = false
  const posting = new Promise<void>((started) => {
    flooder.stdout.setEncoding("utf8")
    flooder.stdout.on("data", (text: string) => {
      floodOut += text
      if (!flooding && floodOut.includes("posting\n")) {
        flooding = true
        floodOut = floodOut.slice(floodOut.indexOf("posting\n") + 8)
        started()
      }
      // The summary line: the flood has been answered.
      if (flooding && floodOut.includes("\n")) flooding = false
    })
  })
  const floodDone = new Promise<void>((done) => flooder.on("exit", () => done()))
  let rssMax = rssBefore
  const sampler = setInterval(() => {
    rssMax = Math.max(rssMax, statusMiB(pid, "VmRSS"))
  }, 20)
  await posting
  const during: Array<number> = []
  do during.push(await ping())
  while (flooding)
  await floodDone
  clearInterval(sampler)
  const sorted = (xs: Array<number>) => [...xs].sort((a, b) => a - b)
  const fmt = (ms: number) => ms.toFixed(1)
  const q = sorted(quiet)
  const d = sorted(during)
  console.log(`batch flood: ${total} tools/call (hold ${hold} ms) in POSTs of ${batch}`)
  console.log(`  flood: ${floodOut.trim()}`)
  console.log(
    `  server RSS: ${rssBefore.toFixed(0)} MiB before, ${rssMax.toFixed(0)} MiB sampled max, VmHWM ${statusMiB(pid, "VmHWM").toFixed(0)} MiB`
  )
  console.log(`  other client's ping, quiet: p50 ${fmt(percentile(q, 50))} ms, max ${fmt(q.at(-1)!)} ms`)
  console.log(
    `  other client's ping, during the flood: ${d.length} pings, p50 ${fmt(percentile(d, 50))} ms, max ${fmt(d.at(-1)!)} ms`
  )
  server.kill("SIGTERM")
}

if (role === "serve") await serve()
else if (role === "flood") await flood(positional[1]!, Number(positional[2]), Number(flag("batch", positional[2]!)))
else await main(Number(positional[0] ?? 80_000))
