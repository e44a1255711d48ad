/**
 * A minimal server of the stateless revision (2026-07-28) on node:http, for
 * the one-shot workload until our own server speaks it: every POST is one
 * request, answered with one JSON body (`--mode json`) or a one-event SSE
 * stream (`--mode sse`); `tools/call` gets a complete result, `tools/list`
 * the one tool. No validation, no limits.
 *
 *   node bench/one-shot/server-modern.ts [--mode json|sse]
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { announce, modeFlag, reportPeakRssOnExit } from "../http/common.ts"

reportPeakRssOnExit()
const sse = modeFlag() === "sse"
const SERVER_INFO = { "io.modelcontextprotocol/serverInfo": { name: "bench-modern", version: "1.0.0" } }
const TOOL_RESULT = { content: [{ type: "text", text: "ok" }], resultType: "complete", _meta: SERVER_INFO }
const LIST_RESULT = { tools: [{ name: "echo", inputSchema: { type: "object" } }], resultType: "complete", _meta: SERVER_INFO }

const http = createServer((req, res) => {
  if (req.method !== "POST") {
    res.writeHead(405).end()
    return
  }
  let body = ""
  req.setEncoding("utf8")
  req.on("data", (chunk: string) => (body += chunk))
  req.on("end", () => {
    const msg = JSON.parse(body) as { id?: number | string; method?: string }
    if (msg.id === undefined) {
      res.writeHead(202).end()
      return
    }
    const json = JSON.stringify(
      msg.method === "tools/call" || msg.method === "tools/list"
        ? { jsonrpc: "2.0", id: msg.id, result: msg.method === "tools/call" ? TOOL_RESULT : LIST_RESULT }
        : { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "Method not found" } }
    )
    const status = msg.method === "tools/call" || msg.method === "tools/list" ? 200 : 404
    if (sse) res.writeHead(status, { "content-type": "text/event-stream", "cache-control": "no-cache" }).end(`event: message\ndata: ${json}\n\n`)
    else res.writeHead(status, { "content-type": "application/json" }).end(json)
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
