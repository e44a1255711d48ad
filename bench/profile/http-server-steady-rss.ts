/**
 * An HTTP server's resident memory under steady load: starts each server,
 * keeps `concurrency` `tools/call echo`s in flight over one undici Pool for
 * `calls` calls, and reads VmRSS from /proc after every tenth of them. The
 * last three readings are the plateau; a figure still rising there is growth,
 * not a plateau. `session` opens one 2025-11-25 session first; `stateless`
 * sends 2026-07-28 requests (protocol version, client info and capabilities
 * in `_meta`, no handshake).
 *
 *   BENCH_BUILD=dist npx node bench/profile/http-server-steady-rss.ts 100000 32 stateless \
 *     bench/stateless-server/server-ours.ts bench/stateless-server/server-sdk2.ts
 *   BENCH_BUILD=dist npx node bench/profile/http-server-steady-rss.ts 100000 32 session \
 *     bench/stateless-server/server-ours.ts "bench/http/server-sdk.ts --transport http --mode json"
 *
 * Each server runs alone, so the order does not matter.
 */
import { resolve } from "node:path"
import { startListening, statusMiB } from "./listening-server.ts"
import { mcpPoster } from "./mcp-post.ts"

const [callsText = "100000", concurrencyText = "32", era = "stateless", ...servers] = process.argv.slice(2)
const calls = Number(callsText)
const concurrency = Number(concurrencyText)
const STATELESS = "2026-07-28"
const SESSION = "2025-11-25"
const clientInfo = { name: "steady-rss", version: "1.0.0" }
const meta = {
  "io.modelcontextprotocol/protocolVersion": STATELESS,
  "io.modelcontextprotocol/clientInfo": clientInfo,
  "io.modelcontextprotocol/clientCapabilities": {}
}

const measure = async (command: string): Promise<void> => {
  const [script, ...args] = command.split(" ")
  const server = await startListening(resolve(script!), args)
  const { close, post } = mcpPoster(server.url, concurrency)
  let headers: Record<string, string> = { "mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "echo" }
  if (era === "session") {
    const init = await post({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: SESSION, capabilities: {}, clientInfo }
    }, {})
    headers = { "mcp-protocol-version": SESSION, "mcp-session-id": String(init.headers["mcp-session-id"]) }
    await post({ jsonrpc: "2.0", method: "notifications/initialized" }, headers)
  }
  const params = era === "session"
    ? { name: "echo", arguments: { text: "hi" } }
    : { name: "echo", arguments: { text: "hi" }, _meta: meta }
  const readings = [statusMiB(server.pid, "VmRSS")]
  const step = Math.ceil(calls / 10)
  let started = 0
  let done = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (started < calls) {
      const id = ++started
      const res = await post({ jsonrpc: "2.0", id, method: "tools/call", params }, headers)
      if (res.status !== 200 || !res.text.includes("\"result\"")) throw new Error(`${command}: ${res.status} ${res.text}`)
      if (++done % step === 0) readings.push(statusMiB(server.pid, "VmRSS"))
    }
  }))
  const plateau = readings.slice(-3)
  console.log(
    `${command} (${era}): RSS MiB before ${readings[0]!.toFixed(1)}, per tenth ${readings.slice(1).map((r) => r.toFixed(0)).join(" ")}; plateau (last 3) ${
      (plateau.reduce((a, b) => a + b, 0) / plateau.length).toFixed(1)
    }`
  )
  await close()
  server.process.kill("SIGTERM")
}

for (const server of servers) await measure(server)
process.exit(0)
