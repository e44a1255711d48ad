/**
 * The floor of the stateless-server workload: a bare node:http server of the
 * 2026-07-28 revision (no validation, no limits, no MCP library), answering
 * `tools/call` of `echo` and `held` as the real servers do, with one JSON body:
 * a request with `_meta` as the stateless era answers, one without as a session does.
 * What a node:http exchange and its socket cost by themselves.
 *
 *   node --expose-gc bench/stateless-server/server-minimal.ts
 */
import { createServer, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { announce, echoText, HELD_TEXT, hold, installControl } from "./control.ts"

installControl()
const SERVER_INFO = { "io.modelcontextprotocol/serverInfo": { name: "bench-minimal", version: "1.0.0" } }
// A request of the stateless era (its `_meta` sent) is answered as that era answers, with `resultType` and the
// server's identity; a session's request as the handshake era answers, with the content alone.
const result = (text: string, stateless: boolean) =>
  stateless ? { content: [{ type: "text", text }], resultType: "complete", _meta: SERVER_INFO } : { content: [{ type: "text", text }] }

const answer = (res: ServerResponse, id: unknown, body: object, status = 200) =>
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id, ...body }))

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
      id?: unknown
      method?: string
      params?: { name?: string; arguments?: { text?: string }; _meta?: unknown }
    }
    if (msg.method !== "tools/call") return answer(res, msg.id, { error: { code: -32601, message: "Method not found" } }, 404)
    const stateless = msg.params?._meta !== undefined
    if (msg.params?.name === "held") return void hold().then(() => answer(res, msg.id, { result: result(HELD_TEXT, stateless) }))
    answer(res, msg.id, { result: result(echoText(String(msg.params?.arguments?.text)), stateless) })
  })
})
http.keepAliveTimeout = 60_000
http.listen(0, "127.0.0.1", () => announce(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`))
