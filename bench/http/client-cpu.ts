/**
 * The client side of one HTTP exchange, alone: CPU µs of this process per
 * `tools/call` against any server (a bare `node:http` responder makes the
 * server's cost irrelevant), for one build of the client. Prints one JSON line.
 *
 *   npx node bench/http/client-cpu.ts '<json Job>'
 *
 * `root` is the `src/` (or `dist/`) directory the client is loaded from, so
 * that two builds can be compared in the same run (`client-cpu-ab.ts`).
 * Clients:
 * - `transport`: `StreamableHttpClientTransport.request` (session mode, or
 *   the stateless mode with `protocol: "2026-07-28"`)
 * - `mcp`: `McpClient.callTool` over the same transport
 * - `effect-http`: `HttpClient` alone, one POST and `JSON.parse` per call
 *   (the body read whole, or with BENCH_READ=stream through `response.stream`)
 * - `raw`: undici's `Pool.request` and `JSON.parse`
 * `http` picks the `HttpClient` layer: `undici` (`NodeHttpClient.layerUndici`),
 * `fetch` (`FetchHttpClient.layer`) or `node` (`NodeHttpClient.layerNodeHttp`).
 */
import { driveEffect } from "../clients/effect-drive.ts"
import { drive, measureAndExit } from "../stats.ts"

export interface Job {
  readonly root: string
  readonly client: "transport" | "mcp" | "effect-http" | "raw"
  readonly http: "undici" | "fetch" | "node"
  readonly protocol: "2025-11-25" | "2026-07-28"
  readonly url: string
  readonly concurrency: number
  readonly total: number
  readonly warmup: number
}

const job = JSON.parse(process.argv[2]!) as Job
const ext = job.root.endsWith("dist") || job.root.endsWith("dist/") ? ".js" : ".ts"
const load = <M>(module: string): Promise<M> => import(`${job.root.replace(/\/$/, "")}/${module}${ext}`)
const ARGS = { name: "echo", arguments: { text: "hi" } }
const stateless = job.protocol === "2026-07-28"
const META = {
  "io.modelcontextprotocol/protocolVersion": job.protocol,
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "bench", version: "1.0.0" }
}

const httpLayer = async () => {
  if (job.http === "fetch") return (await import("effect/http/FetchHttpClient")).layer
  const NodeHttpClient = await import("@effect/platform-node/NodeHttpClient")
  return job.http === "node" ? NodeHttpClient.layerNodeHttp : NodeHttpClient.layerUndici
}

const check = (result: unknown) => {
  const content = (result as { content?: ReadonlyArray<{ text?: unknown }> } | undefined)?.content
  if (typeof content?.[0]?.text !== "string") throw new Error(`unexpected result ${JSON.stringify(result)}`)
  return result
}

const effectClient = async () => {
  const Effect = await import("effect/Effect")
  const Layer = await import("effect/Layer")
  const ManagedRuntime = await import("effect/ManagedRuntime")
  const T = await load<typeof import("../../src/client/StreamableHttpClientTransport.ts")>(
    "client/StreamableHttpClientTransport"
  )
  const transport = T.layer({ url: job.url, ...(stateless ? { protocolVersion: job.protocol } : {}) }).pipe(
    Layer.provide(await httpLayer())
  )
  if (job.client === "mcp") {
    const McpClient = await load<typeof import("../../src/client/McpClient.ts")>("client/McpClient")
    const runtime = ManagedRuntime.make(
      McpClient.layer({ clientInfo: { name: "bench", version: "1.0.0" }, protocol: job.protocol }).pipe(
        Layer.provide(transport)
      )
    )
    const client = await runtime.runPromise(McpClient.McpClient)
    const call = Effect.map(client.callTool(ARGS), check)
    return { run: (n: number) => runtime.runPromise(driveEffect(call, n, job.concurrency)), close: () => runtime.dispose() }
  }
  const { ClientTransport } = await load<typeof import("../../src/client/ClientTransport.ts")>("client/ClientTransport")
  const runtime = ManagedRuntime.make(transport)
  const t = await runtime.runPromise(ClientTransport)
  if (!stateless) {
    await runtime.runPromise(Effect.gen(function*() {
      const init = (yield* t.request("initialize", {
        protocolVersion: job.protocol,
        capabilities: {},
        clientInfo: { name: "bench", version: "1.0.0" }
      })) as { protocolVersion: string }
      yield* t.setProtocolVersion(init.protocolVersion)
      yield* t.notify("notifications/initialized")
    }))
  }
  const call = Effect.map(t.request("tools/call", stateless ? { ...ARGS, _meta: META } : ARGS), check)
  return { run: (n: number) => runtime.runPromise(driveEffect(call, n, job.concurrency)), close: () => runtime.dispose() }
}

const effectHttp = async () => {
  const Effect = await import("effect/Effect")
  const HttpBody = await import("effect/http/HttpBody")
  const HttpClient = await import("effect/http/HttpClient")
  const HttpClientRequest = await import("effect/http/HttpClientRequest")
  const ManagedRuntime = await import("effect/ManagedRuntime")
  const Stream = await import("effect/Stream")
  const decoder = new TextDecoder()
  const runtime = ManagedRuntime.make(await httpLayer())
  const client = await runtime.runPromise(HttpClient.HttpClient)
  let nextId = 0
  const headers: Record<string, string> = { accept: "application/json, text/event-stream" }
  if (stateless) Object.assign(headers, { "mcp-protocol-version": job.protocol, "mcp-method": "tools/call", "mcp-name": "echo" })
  const post = (message: object) =>
    Effect.flatMap(
      client.execute(HttpClientRequest.post(job.url, {
        headers,
        body: HttpBody.text(JSON.stringify(message), "application/json")
      })),
      (response) => {
        const session = response.headers["mcp-session-id"]
        if (session !== undefined) headers["mcp-session-id"] = session
        const body = process.env.BENCH_READ === "stream"
          ? Effect.map(Stream.runFold(response.stream, () => "", (acc, chunk: Uint8Array) => acc + decoder.decode(chunk, { stream: true })), (t) => t + decoder.decode())
          : response.text
        return Effect.map(body, (text) => {
          if (text.length === 0) return undefined
          const json = response.headers["content-type"]?.startsWith("text/event-stream")
            ? text.slice(text.lastIndexOf("data:") + 5)
            : text
          return (JSON.parse(json) as { result: unknown }).result
        })
      }
    )
  if (!stateless) {
    await runtime.runPromise(post({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: job.protocol, capabilities: {}, clientInfo: { name: "bench", version: "1" } } }))
    await runtime.runPromise(post({ jsonrpc: "2.0", method: "notifications/initialized" }))
  }
  const params = stateless ? { ...ARGS, _meta: META } : ARGS
  const call = Effect.suspend(() => Effect.map(post({ jsonrpc: "2.0", id: ++nextId, method: "tools/call", params }), check))
  return { run: (n: number) => runtime.runPromise(driveEffect(call, n, job.concurrency)), close: () => runtime.dispose() }
}

const raw = async () => {
  const { Pool } = await import("undici")
  const { origin, pathname } = new URL(job.url)
  const pool = new Pool(origin, { pipelining: 1 })
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json, text/event-stream" }
  if (stateless) Object.assign(headers, { "mcp-protocol-version": job.protocol, "mcp-method": "tools/call", "mcp-name": "echo" })
  let nextId = 0
  const post = async (message: object) => {
    const { headers: got, body } = await pool.request({ origin, path: pathname, method: "POST", headers, body: JSON.stringify(message) })
    const text = await body.text()
    const session = got["mcp-session-id"]
    if (typeof session === "string") headers["mcp-session-id"] = session
    if (text.length === 0) return undefined
    const json = String(got["content-type"]).startsWith("text/event-stream") ? text.slice(text.lastIndexOf("data:") + 5) : text
    return (JSON.parse(json) as { result: unknown }).result
  }
  if (!stateless) {
    await post({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: job.protocol, capabilities: {}, clientInfo: { name: "bench", version: "1" } } })
    await post({ jsonrpc: "2.0", method: "notifications/initialized" })
  }
  const params = stateless ? { ...ARGS, _meta: META } : ARGS
  const call = async () => check(await post({ jsonrpc: "2.0", id: ++nextId, method: "tools/call", params }))
  return { run: (n: number) => drive(call, n, job.concurrency), close: () => pool.close() }
}

const runner = job.client === "raw" ? await raw() : job.client === "effect-http" ? await effectHttp() : await effectClient()
await measureAndExit(runner.run, runner.close, job)
