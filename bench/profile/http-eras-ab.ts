/**
 * A/B of the HTTP server transport's CPU per `tools/call` in each era, both
 * sides in one process (so machine load hits them alike): this checkout's
 * `src/` and another's (`BEFORE_ROOT`, e.g. a built copy of main), each an
 * McpServer like bench/stateless-server/server-ours.ts on
 * HttpServerTransport's routes behind `HttpRouter.toWebHandler`, driven with
 * web `Request`s carrying a `Content-Length`. Rounds interleave the four
 * variants (order rotating); the figures are medians of per-round CPU time
 * (`process.cpuUsage()`) per request, web `Request`/`Response` costs
 * included alike on both sides.
 *
 *   BEFORE_ROOT=/work/before npx node bench/profile/http-eras-ab.ts [requests=5000] [concurrency=32] [rounds=7]
 */
import { resolve } from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { HttpRouter } from "effect/http"

const [totalText = "5000", concText = "32", roundsText = "7"] = process.argv.slice(2)
const total = Number(totalText), concurrency = Number(concText), rounds = Number(roundsText)
const here = new URL(".", import.meta.url).pathname
const STATELESS = "2026-07-28"
const SESSION = "2025-11-25"
const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] })
const CallParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})
const meta = {
  "io.modelcontextprotocol/protocolVersion": STATELESS,
  "io.modelcontextprotocol/clientInfo": { name: "ab", version: "1.0.0" },
  "io.modelcontextprotocol/clientCapabilities": {}
}

type WebHandler = (request: Request) => Promise<Response>
const serverOf = async (root: string): Promise<WebHandler> => {
  const McpServer = await import(resolve(root, "src/server/McpServer.ts")) as typeof import("../../src/server/McpServer.ts")
  const HttpServerTransport = await import(resolve(root, "src/server/HttpServerTransport.ts")) as typeof import(
    "../../src/server/HttpServerTransport.ts"
  )
  const definition = McpServer.make({ serverInfo: { name: "ab", version: "1.0.0" }, capabilities: { tools: {} }, stateless: true }).pipe(
    McpServer.method("tools/list", {}, () =>
      Effect.succeed({ tools: [{ name: "echo", inputSchema: { type: "object", properties: { text: { type: "string" } } } }] })),
    McpServer.method("tools/call", { params: CallParams }, ({ arguments: args }) => Effect.succeed(text(`echo: ${String(args?.text)}`)))
  )
  const routes = Layer.unwrap(Effect.map(McpServer.toHandler(definition), (handle) =>
    HttpServerTransport.routes(handle.handler, { allowedHosts: ["127.0.0.1"], eras: "both" })))
  return HttpRouter.toWebHandler(routes as Layer.Layer<unknown, never, HttpRouter.HttpRouter>, { disableLogger: true }).handler
}

interface Variant {
  readonly name: string
  readonly call: () => Promise<void>
}
const variantsOf = async (name: string, handler: WebHandler): Promise<ReadonlyArray<Variant>> => {
  const base: Record<string, string> = { host: "127.0.0.1", "content-type": "application/json", accept: "application/json, text/event-stream" }
  const post = async (headers: Record<string, string>, message: object) => {
    const body = JSON.stringify(message)
    const response = await handler(new Request("http://127.0.0.1/mcp", {
      method: "POST",
      headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
      body
    }))
    return { session: response.headers.get("mcp-session-id"), status: response.status, text: await response.text() }
  }
  const init = await post(base, {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: SESSION, capabilities: {}, clientInfo: { name: "ab", version: "1" } }
  })
  const sessionHeaders = { ...base, "mcp-protocol-version": SESSION, "mcp-session-id": init.session! }
  await post(sessionHeaders, { jsonrpc: "2.0", method: "notifications/initialized" })
  const statelessHeaders = { ...base, "mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "echo" }
  let nextId = 0
  const call = (headers: Record<string, string>, withMeta: boolean) => async () => {
    const params = withMeta ? { name: "echo", arguments: { text: "hi" }, _meta: meta } : { name: "echo", arguments: { text: "hi" } }
    const answer = await post(headers, { jsonrpc: "2.0", id: ++nextId, method: "tools/call", params })
    if (answer.status !== 200 || !answer.text.includes("echo: hi")) throw new Error(`${name}: ${answer.status} ${answer.text}`)
  }
  return [
    { name: `${name} stateless`, call: call(statelessHeaders, true) },
    { name: `${name} session`, call: call(sessionHeaders, false) }
  ]
}

const beforeRoot = process.env.BEFORE_ROOT
const variants = [
  ...(await variantsOf("after", await serverOf(resolve(here, "../..")))),
  ...(beforeRoot === undefined ? [] : await variantsOf("before", await serverOf(beforeRoot)))
]
const drive = async (v: Variant, n: number) => {
  let left = n
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (left-- > 0) await v.call()
  }))
}
for (const v of variants) await drive(v, total)
const figures = new Map<string, Array<number>>(variants.map((v) => [v.name, []]))
for (let r = 0; r < rounds; r++) {
  for (let i = 0; i < variants.length; i++) {
    const v = variants[(i + r) % variants.length]
    const c0 = process.cpuUsage()
    await drive(v, total)
    const c = process.cpuUsage(c0)
    figures.get(v.name)!.push((c.user + c.system) / total)
  }
}
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
console.log(`CPU µs per tools/call in-process, c${concurrency}, ${total} calls x ${rounds} rounds (median, min)`)
for (const [name, xs] of figures) {
  console.log(`  ${name.padEnd(18)} ${median(xs).toFixed(1).padStart(7)}  min ${Math.min(...xs).toFixed(1).padStart(7)}`)
}
process.exit(0)
