/**
 * The HTTP server transport's own CPU per request, without sockets or a
 * client process: McpServer on HttpServerTransport's routes behind
 * `HttpRouter.toWebHandler`, driven in-process with web `Request`s. The
 * `floor` variant answers the same requests with one trivial effect/http
 * route, so `ours − floor` is what the transport adds. Steadier than
 * end-to-end runs on a shared machine (one process, CPU time only).
 *
 *   npx node bench/profile/http-server-inproc.ts [json|sse] [ours|floor] [requests=20000] [concurrency=32]
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import { PROTOCOL_VERSION, TOOL_ARGS, toolResult } from "../http/common.ts"

const [mode = "json", variant = "ours", totalText = "20000", concurrencyText = "32"] = process.argv.slice(2)
const total = Number(totalText)
const concurrency = Number(concurrencyText)
const result = toolResult(0)

const definition = McpServer.make({ serverInfo: { name: "inproc", version: "1.0.0" } }).pipe(
  McpServer.method("tools/call", {}, () => Effect.succeed(result))
)
const ours = Layer.unwrap(Effect.map(McpServer.toHandler(definition), (handle) =>
  HttpServerTransport.routes(handle.handler, {
    responseMode: mode === "sse" ? "sse" : "auto",
    allowedHosts: ["127.0.0.1"]
  })))

const encoder = new TextEncoder()
const floor = HttpRouter.add("POST", "/mcp", Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const msg = JSON.parse(yield* Effect.orDie(request.text)) as { id?: number; method?: string }
  if (msg.id === undefined) return HttpServerResponse.empty({ status: 202 })
  const json = JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: msg.method === "tools/call" ? result : { protocolVersion: PROTOCOL_VERSION, capabilities: {}, serverInfo: { name: "floor", version: "1" } } })
  const headers = msg.method === "initialize" ? { "mcp-session-id": "floor" } : {}
  return mode === "sse"
    ? HttpServerResponse.stream(
      (yield* Effect.promise(() => import("effect/Stream"))).make(encoder.encode(`event: message\ndata: ${json}\n\n`)),
      { contentType: "text/event-stream", headers }
    )
    : HttpServerResponse.text(json, { contentType: "application/json", headers })
}))

const { handler, dispose } = HttpRouter.toWebHandler(
  (variant === "floor" ? floor : ours) as Layer.Layer<unknown, never, HttpRouter.HttpRouter>,
  { disableLogger: true }
)
const headers: Record<string, string> = {
  host: "127.0.0.1",
  "content-type": "application/json",
  accept: "application/json, text/event-stream"
}
let nextId = 0
const post = async (message: object) => {
  const body = JSON.stringify(message)
  const response = await handler(new Request("http://127.0.0.1/mcp", {
    method: "POST",
    headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
    body
  }))
  const session = response.headers.get("mcp-session-id")
  if (session !== null) headers["mcp-session-id"] = session
  const text = await response.text()
  if (response.status >= 300) throw new Error(`${response.status}: ${text}`)
  return text
}
await post({ jsonrpc: "2.0", id: ++nextId, method: "initialize", params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "inproc", version: "1" } } })
headers["mcp-protocol-version"] = PROTOCOL_VERSION
await post({ jsonrpc: "2.0", method: "notifications/initialized" })

const run = async (n: number) => {
  let left = n
  const worker = async () => {
    while (left-- > 0) await post({ jsonrpc: "2.0", id: ++nextId, method: "tools/call", params: TOOL_ARGS })
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}
await run(Math.min(5000, total))
const cpu0 = process.cpuUsage()
const t0 = performance.now()
await run(total)
const cpu = process.cpuUsage(cpu0)
const ms = performance.now() - t0
console.log(JSON.stringify({ mode, variant, total, concurrency, cpuUsPerReq: +((cpu.user + cpu.system) / total).toFixed(1), reqPerS: Math.round(total / ms * 1000) }))
await dispose()
