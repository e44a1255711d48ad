/**
 * The HTTP server transport's own CPU per `tools/call`, two builds of this
 * project's source side by side in one process (as `http-server-inproc.ts`
 * measures one): McpServer on HttpServerTransport behind
 * `HttpRouter.toWebHandler`, driven with web `Request`s, measured in rounds
 * that alternate between the two, so load on a shared machine hits both
 * alike. `root` is a directory holding `src/` (e.g. an older commit's, from
 * `git archive <commit> src | tar -x -C /tmp/before`, with `node_modules`
 * linked beside it). The protocol picks the era: `2025-11-25` opens a
 * session first, `2026-07-28` posts stateless requests.
 *
 *   npx node bench/profile/http-server-ab.ts <rootA> <rootB> [json|sse] [protocol=2025-11-25] [requests=10000] [concurrency=32] [rounds=6]
 *
 * Prints the median and minimum CPU µs per request of each, and B ÷ A.
 */
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { HttpRouter } from "effect/http"

const [rootA, rootB, mode = "json", proto = "2025-11-25", totalText = "10000", concText = "32", roundsText = "6"] = process.argv.slice(2)
const total = Number(totalText), concurrency = Number(concText), rounds = Number(roundsText)
const stateless = proto === "2026-07-28"
const result = { content: [{ type: "text" as const, text: "ok" }] }

const setup = async (root: string) => {
  const src = (module: string) => pathToFileURL(resolve(root, "src", module)).href
  const McpServer = await import(src("server/McpServer.ts"))
  const HttpServerTransport = await import(src("server/HttpServerTransport.ts"))
  const definition = McpServer.make({ serverInfo: { name: "inproc", version: "1.0.0" }, capabilities: { tools: {} } }).pipe(
    McpServer.method("tools/call", {}, (params: any) => Effect.succeed(stateless ? { content: [{ type: "text", text: `echo: ${params.arguments?.text}` }] } : result))
  )
  const layer = Layer.unwrap(Effect.map(McpServer.toHandler(definition), (handle: any) =>
    HttpServerTransport.routes(handle.handler, { responseMode: mode === "sse" ? "sse" : "auto", allowedHosts: ["127.0.0.1"], eras: "both" })))
  const { handler } = HttpRouter.toWebHandler(layer as any, { disableLogger: true })
  const headers: Record<string, string> = { host: "127.0.0.1", "content-type": "application/json", accept: "application/json, text/event-stream" }
  let nextId = 0
  const post = async (message: any) => {
    const body = JSON.stringify(message)
    const h: Record<string, string> = { ...headers, "content-length": String(Buffer.byteLength(body)) }
    if (stateless && message.method) { h["mcp-method"] = message.method; if (message.params?.name) h["mcp-name"] = message.params.name }
    const response = await handler(new Request("http://127.0.0.1/mcp", { method: "POST", headers: h, body }))
    const session = response.headers.get("mcp-session-id")
    if (session !== null) headers["mcp-session-id"] = session
    const text = await response.text()
    if (response.status >= 300) throw new Error(`${response.status}: ${text}`)
    return text
  }
  if (stateless) {
    headers["mcp-protocol-version"] = proto
  } else {
    await post({ jsonrpc: "2.0", id: ++nextId, method: "initialize", params: { protocolVersion: proto, capabilities: {}, clientInfo: { name: "inproc", version: "1" } } })
    headers["mcp-protocol-version"] = proto
    await post({ jsonrpc: "2.0", method: "notifications/initialized" })
  }
  const meta = stateless ? { _meta: { "io.modelcontextprotocol/protocolVersion": proto, "io.modelcontextprotocol/clientInfo": { name: "inproc", version: "1" }, "io.modelcontextprotocol/clientCapabilities": {} } } : {}
  return async (n: number) => {
    let left = n
    const worker = async () => {
      while (left-- > 0) await post({ jsonrpc: "2.0", id: ++nextId, method: "tools/call", params: { name: "echo", arguments: { text: "hi" }, ...meta } })
    }
    await Promise.all(Array.from({ length: concurrency }, worker))
  }
}
const a = await setup(rootA), b = await setup(rootB)
await a(3000); await b(3000)
const ra: number[] = [], rb: number[] = []
const measure = async (run: (n: number) => Promise<void>) => {
  const c0 = process.cpuUsage(); await run(total); const c = process.cpuUsage(c0); return (c.user + c.system) / total
}
for (let r = 0; r < rounds; r++) {
  if (r % 2 === 0) { ra.push(await measure(a)); rb.push(await measure(b)) } else { rb.push(await measure(b)); ra.push(await measure(a)) }
}
const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]
const f = (xs: number[]) => `median ${med(xs).toFixed(1)} min ${Math.min(...xs).toFixed(1)}`
console.log(`${mode} ${proto} c${concurrency}  A: ${f(ra)}   B: ${f(rb)}   B/A median ${(med(rb) / med(ra)).toFixed(3)} min ${(Math.min(...rb) / Math.min(...ra)).toFixed(3)}`)
process.exit(0)
