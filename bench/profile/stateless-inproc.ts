/**
 * The stateless-era (2026-07-28) POST path's own CPU per request, without
 * sockets or a client process: McpServer (`stateless: true`) on
 * HttpServerTransport's routes behind `HttpRouter.toWebHandler`, driven
 * in-process with web `Request`s carrying the era's headers and `_meta`. The
 * `floor` variant answers with one trivial effect/http route, so
 * `ours − floor` is what the transport and McpServer add. Steadier than
 * end-to-end runs on a shared machine (one process, CPU time only); run it
 * with `--cpu-prof` to see where that time goes.
 *
 *   npx node bench/profile/stateless-inproc.ts [ours|floor] [requests=20000] [concurrency=32]
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { loadHttpServerTransport, loadMcpServer } from "../our-modules.ts"

const McpServer = await loadMcpServer()
const HttpServerTransport = await loadHttpServerTransport()
const [variant = "ours", totalText = "20000", concurrencyText = "32"] = process.argv.slice(2)
const total = Number(totalText)
const concurrency = Number(concurrencyText)
const VERSION = "2026-07-28"
const result = (text: string) => ({ content: [{ type: "text" as const, text }] })

const definition = McpServer.make({ serverInfo: { name: "inproc", version: "1.0.0" }, capabilities: { tools: {} }, stateless: true }).pipe(
  McpServer.method("tools/list", {}, () =>
    Effect.succeed({ tools: [{ name: "echo", inputSchema: { type: "object", properties: { text: { type: "string" } } } }] })),
  McpServer.method("tools/call", {}, (params) =>
    Effect.succeed(result(`echo: ${(params as { arguments?: { text?: string } }).arguments?.text}`)))
)
const ours = Layer.unwrap(Effect.map(McpServer.toHandler(definition), (handle) =>
  HttpServerTransport.routes(handle.handler, { allowedHosts: ["127.0.0.1"], eras: "both" })))

const floor = HttpRouter.add("POST", "/mcp", Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const msg = JSON.parse(yield* Effect.orDie(request.text)) as { id: number; params: { arguments: { text: string } } }
  const json = JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: { ...result(`echo: ${msg.params.arguments.text}`), resultType: "complete" } })
  return HttpServerResponse.text(json, { contentType: "application/json" })
}))

const { handler, dispose } = HttpRouter.toWebHandler(
  (variant === "floor" ? floor : ours) as Layer.Layer<unknown, never, HttpRouter.HttpRouter>,
  { disableLogger: true }
)
const headers = {
  host: "127.0.0.1",
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": VERSION,
  "mcp-method": "tools/call",
  "mcp-name": "echo"
}
const meta = { "io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {} }
let nextId = 0
const call = async () => {
  const body = JSON.stringify({ jsonrpc: "2.0", id: ++nextId, method: "tools/call", params: { name: "echo", arguments: { text: "hi" }, _meta: meta } })
  const response = await handler(new Request("http://127.0.0.1/mcp", { method: "POST", headers, body }))
  const text = await response.text()
  if (response.status !== 200 || !text.includes("echo: hi")) throw new Error(`${response.status}: ${text}`)
}

const run = async (n: number) => {
  let left = n
  const worker = async () => {
    while (left-- > 0) await call()
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}
await run(Math.min(5000, total))
const cpu0 = process.cpuUsage()
const t0 = performance.now()
await run(total)
const cpu = process.cpuUsage(cpu0)
const ms = performance.now() - t0
console.log(JSON.stringify({ variant, total, concurrency, cpuUsPerReq: +((cpu.user + cpu.system) / total).toFixed(1), reqPerS: Math.round(total / ms * 1000) }))
await dispose()
