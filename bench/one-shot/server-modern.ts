/**
 * A minimal server of the stateless revision (2026-07-28) on node:http, for
 * the one-shot workload until our own server speaks it: every POST is one
 * request, answered with one JSON body (`--mode json`) or a one-event SSE
 * stream (`--mode sse`); `tools/call` gets a complete result, `tools/list`
 * the one tool, `server/discover` this revision and the tools capability (so
 * that clients which discover first, as the stateless-http workload's do,
 * can use it too). No validation, no limits. With `--progress n` (or
 * BENCH_PROGRESS), a `tools/call` carrying a progress token is answered as an
 * SSE stream of n `notifications/progress` and then the result, in one write.
 *
 *   node bench/one-shot/server-modern.ts [--mode json|sse] [--progress N]
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { announce, modeFlag, progressEvents, progressPerCall, reportPeakRssOnExit } from "../http/common.ts"

reportPeakRssOnExit()
const sse = modeFlag() === "sse"
const progress = progressPerCall()
const SERVER_INFO = { "io.modelcontextprotocol/serverInfo": { name: "bench-modern", version: "1.0.0" } }
const TOOL_RESULT = { content: [{ type: "text", text: "ok" }], resultType: "complete", _meta: SERVER_INFO }
const LIST_RESULT = {
  tools: [{ name: "echo", inputSchema: { type: "object" } }],
  resultType: "complete",
  ttlMs: 0,
  cacheScope: "private",
  _meta: SERVER_INFO
}
const DISCOVER_RESULT = {
  supportedVersions: ["2026-07-28"],
  capabilities: { tools: {} },
  resultType: "complete",
  ttlMs: 0,
  cacheScope: "private",
  _meta: SERVER_INFO
}
const RESULTS: Record<string, unknown> = { "tools/call": TOOL_RESULT, "tools/list": LIST_RESULT, "server/discover": DISCOVER_RESULT }

const http = createServer((req, res) => {
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
    if (msg.id === undefined) {
      res.writeHead(202).end()
      return
    }
    const result = msg.method === undefined ? undefined : RESULTS[msg.method]
    const json = JSON.stringify(
      result !== undefined
        ? { jsonrpc: "2.0", id: msg.id, result }
        : { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "Method not found" } }
    )
    const status = result !== undefined ? 200 : 404
    const token = msg.params?._meta?.progressToken
    const events = progress > 0 && token !== undefined && msg.method === "tools/call" ? progressEvents(token, progress) : ""
    if (sse || events.length > 0) {
      res.writeHead(status, { "content-type": "text/event-stream", "cache-control": "no-cache" })
        .end(`${events}event: message\ndata: ${json}\n\n`)
    } else res.writeHead(status, { "content-type": "application/json" }).end(json)
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
