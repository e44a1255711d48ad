/**
 * The HTTP server transport's CPU per `tools/call` in each era, in-process
 * (HttpServerTransport's routes behind `HttpRouter.toWebHandler`, web
 * `Request`s with a `Content-Length`, as a socket's would carry), for one
 * handler of two:
 * - `mcp`: an McpServer like bench/stateless-server/server-ours.ts (both
 *   eras, `tools/list`, `tools/call` with a Schema for its params);
 * - `bare`: a `Handler` answering at once, so the figure is the transport's
 *   own work.
 * Run with `--cpu-prof` to see where the time goes.
 *
 *   npx node bench/profile/http-eras-inproc.ts [stateless|session] [mcp|bare] [requests=20000] [concurrency=32]
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { HttpRouter } from "effect/http"
import { loadHttpServerTransport, loadJsonRpc, loadMcpServer } from "../our-modules.ts"

const McpServer = await loadMcpServer()
const HttpServerTransport = await loadHttpServerTransport()
const JsonRpc = await loadJsonRpc()
const [era = "stateless", handlerKind = "mcp", totalText = "20000", concurrencyText = "32"] = process.argv.slice(2)
const total = Number(totalText)
const concurrency = Number(concurrencyText)
const STATELESS = "2026-07-28"
const SESSION = "2025-11-25"
const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] })

const CallParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})
const definition = McpServer.make({ serverInfo: { name: "inproc", version: "1.0.0" }, capabilities: { tools: {} }, stateless: true }).pipe(
  McpServer.method("tools/list", {}, () =>
    Effect.succeed({ tools: [{ name: "echo", inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } }] })),
  McpServer.method("tools/call", { params: CallParams }, ({ arguments: args }) =>
    Effect.succeed(text(`echo: ${String(args?.text)}`)))
)
type Message = { readonly id?: unknown; readonly method: string; readonly params?: { readonly arguments?: { readonly text?: string } } }
const bare = Object.assign((message: Message) => {
  if (message.id === undefined) return Effect.succeed(null)
  const id = message.id as string | number
  return Effect.succeed(
    message.method === "initialize"
      ? JsonRpc.success(id, { protocolVersion: SESSION, capabilities: { tools: {} }, serverInfo: { name: "bare", version: "1" } })
      : JsonRpc.success(id, { ...text(`echo: ${message.params?.arguments?.text}`), resultType: "complete" })
  )
}, { stateless: true })
const handlerOf = handlerKind === "bare"
  ? Effect.succeed(bare as never)
  : Effect.map(McpServer.toHandler(definition), (handle) => handle.handler)
const routes = Layer.unwrap(Effect.map(handlerOf, (handler) =>
  HttpServerTransport.routes(handler, { allowedHosts: ["127.0.0.1"], eras: "both" })))

const { handler, dispose } = HttpRouter.toWebHandler(routes as Layer.Layer<unknown, never, HttpRouter.HttpRouter>, {
  disableLogger: true
})
const headers: Record<string, string> = {
  host: "127.0.0.1",
  "content-type": "application/json",
  accept: "application/json, text/event-stream"
}
const post = async (message: object) => {
  const body = JSON.stringify(message)
  const response = await handler(new Request("http://127.0.0.1/mcp", {
    method: "POST",
    headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
    body
  }))
  const session = response.headers.get("mcp-session-id")
  if (session !== null) headers["mcp-session-id"] = session
  const answer = await response.text()
  if (response.status >= 300) throw new Error(`${response.status}: ${answer}`)
  return answer
}
const meta = {
  "io.modelcontextprotocol/protocolVersion": STATELESS,
  "io.modelcontextprotocol/clientInfo": { name: "inproc", version: "1.0.0" },
  "io.modelcontextprotocol/clientCapabilities": {}
}
if (era === "session") {
  await post({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: SESSION, capabilities: {}, clientInfo: { name: "inproc", version: "1" } } })
  headers["mcp-protocol-version"] = SESSION
  await post({ jsonrpc: "2.0", method: "notifications/initialized" })
} else {
  Object.assign(headers, { "mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "echo" })
}
let nextId = 0
const call = async () => {
  const params = era === "session" ? { name: "echo", arguments: { text: "hi" } } : { name: "echo", arguments: { text: "hi" }, _meta: meta }
  const answer = await post({ jsonrpc: "2.0", id: ++nextId, method: "tools/call", params })
  if (!answer.includes("echo: hi")) throw new Error(answer)
}
const run = async (n: number) => {
  let left = n
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (left-- > 0) await call()
  }))
}
await run(Math.min(5000, total))
const cpu0 = process.cpuUsage()
await run(total)
const cpu = process.cpuUsage(cpu0)
console.log(JSON.stringify({ era, handler: handlerKind, total, concurrency, cpuUsPerReq: +((cpu.user + cpu.system) / total).toFixed(1) }))
await dispose()
