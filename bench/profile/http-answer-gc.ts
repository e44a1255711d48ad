/**
 * What our HTTP server promotes to the old generation per `tools/call`, for
 * each way an answer can go out: starts bench/http/server-ours.ts under
 * `--trace-gc-nvp` with the server flags given after the driver's own, drives
 * `tools/call` with one undici Pool at concurrency `c` (every call carries a
 * progress token, so a server with `--progress n` streams an SSE answer),
 * and after a 5,000-call warm-up sums what the scavenges promoted.
 *
 *   BENCH_BUILD=dist npx node bench/profile/http-answer-gc.ts [session|stateless] [calls=20000] [concurrency=32] [server flags…]
 *
 * e.g. `… session 20000 32 --mode json` (JSON answers), `… --mode sse`
 * (whole SSE bodies), `… --mode json --progress 1` (streamed SSE answers),
 * `… --api tool` (the tool defined with `Tool.add`). `NODE_FLAGS` adds
 * V8 flags to the server (e.g. `--no-allocation-site-pretenuring`).
 */
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { mcpPoster, openSession } from "./mcp-post.ts"

const [era = "session", totalText = "20000", concText = "32", ...serverFlags] = process.argv.slice(2)
const total = Number(totalText)
const concurrency = Number(concText)
const script = new URL("../http/server-ours.ts", import.meta.url).pathname
const child = spawn(process.execPath, [...(process.env.NODE_FLAGS ?? "").split(" ").filter(Boolean), "--trace-gc-nvp", script, "--transport", "http", ...serverFlags], {
  stdio: ["ignore", "pipe", "inherit"],
  env: { ...process.env, BENCH_BUILD: process.env.BENCH_BUILD ?? "dist" }
})
const young = { measuring: false, scavenges: 0, promoted: 0 }
const url = await new Promise<string>((ok) =>
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const found = /listening (http:\/\/\S+)/.exec(line)
    if (found !== null) ok(found[1]!)
    const scavenge = young.measuring ? / gc=s .*? promoted=(\d+)/.exec(line) : null
    if (scavenge !== null) {
      young.scavenges++
      young.promoted += Number(scavenge[1])
    }
  })
)
const { close, post } = mcpPoster(url, concurrency)
const STATELESS = "2026-07-28"
let headers: Record<string, string>
if (era === "session") {
  headers = await openSession(post, "answer-gc")
} else {
  headers = { "mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "echo" }
}
const meta = {
  "io.modelcontextprotocol/protocolVersion": STATELESS,
  "io.modelcontextprotocol/clientInfo": { name: "answer-gc", version: "1.0.0" },
  "io.modelcontextprotocol/clientCapabilities": {}
}

let nextId = 0
const drive = async (n: number) => {
  let left = n
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (left-- > 0) {
      const id = ++nextId
      const _meta = era === "session" ? { progressToken: id } : { ...meta, progressToken: id }
      const params = { name: "echo", arguments: { text: "hi" }, _meta }
      const res = await post({ jsonrpc: "2.0", id, method: "tools/call", params }, headers)
      if (!res.text.includes("\"result\"")) throw new Error(`${res.status} ${res.text}`)
    }
  }))
}
await drive(5000)
young.measuring = true
await drive(total)
young.measuring = false
console.log(JSON.stringify({
  era,
  server: serverFlags.join(" "),
  total,
  concurrency,
  scavenges: young.scavenges,
  promotedKiBPerScavenge: Math.round(young.promoted / young.scavenges / 1024),
  promotedBytesPerCall: Math.round(young.promoted / total)
}))
await close()
child.kill("SIGINT")
await new Promise((exited) => child.on("exit", exited))
