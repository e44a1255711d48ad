/**
 * The practical limit on the HTTP server side: `node:http` and JSON.parse,
 * nothing else. Each POST body is one JSON-RPC message; a request is
 * answered with one JSON body (`--mode json`) or a one-event SSE stream
 * (`--mode sse`), a notification with 202. It hands out a session id on
 * `initialize` and echoes nothing else of the protocol: no validation, no
 * session checks, no limits. With `--progress n` (or BENCH_PROGRESS), a
 * `tools/call` carrying a progress token is answered as an SSE stream of n
 * `notifications/progress` and then the result, in one write.
 *
 *   node bench/http/server-raw.ts [--mode json|sse] [--bytes N] [--progress N]
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import {
  announce,
  flag,
  modeFlag,
  progressEvents,
  progressPerCall,
  PROTOCOL_VERSION,
  reportPeakRssOnExit,
  toolResult
} from "./common.ts"

reportPeakRssOnExit()
const sse = modeFlag() === "sse"
const TOOL_RESULT = toolResult(Number(flag("bytes", "0")))
const progress = progressPerCall()
const INIT_RESULT = {
  protocolVersion: PROTOCOL_VERSION,
  capabilities: { tools: {} },
  serverInfo: { name: "raw-http", version: "1.0.0" }
}
let sessions = 0

const http = createServer((req, res) => {
  if (req.method === "DELETE") {
    res.writeHead(204).end()
    return
  }
  if (req.method !== "POST") {
    res.writeHead(405).end()
    return
  }
  let body = ""
  req.setEncoding("utf8")
  req.on("data", (chunk: string) => (body += chunk))
  req.on("end", () => {
    const msg = JSON.parse(body) as {
      id?: number | string
      method?: string
      params?: { _meta?: { progressToken?: string | number } }
    }
    if (msg.id === undefined || msg.method === undefined) {
      res.writeHead(202).end()
      return
    }
    const result = msg.method === "tools/call" ? TOOL_RESULT : msg.method === "initialize" ? INIT_RESULT : {}
    const json = JSON.stringify({ jsonrpc: "2.0", id: msg.id, result })
    const headers: Record<string, string> = {}
    if (msg.method === "initialize") headers["mcp-session-id"] = `raw-${++sessions}`
    const token = msg.params?._meta?.progressToken
    const progressed = progress > 0 && token !== undefined && msg.method === "tools/call"
    if (sse || progressed) {
      headers["content-type"] = "text/event-stream"
      headers["cache-control"] = "no-cache"
      const events = progressed ? progressEvents(token, progress) : ""
      res.writeHead(200, headers).end(`${events}event: message\ndata: ${json}\n\n`)
    } else {
      headers["content-type"] = "application/json"
      res.writeHead(200, headers).end(json)
    }
  })
})
http.keepAliveTimeout = 60_000
http.listen(0, "127.0.0.1", () => announce(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`))
const stop = () => {
  http.closeAllConnections()
  http.close(() => process.exit(0))
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
