/**
 * One client measurement of the stateless-http workload in a fresh process:
 * `node bench/stateless-http/run-client.ts '<json Job>'` prints one JSON line
 * (`Result` of bench/http/run-client.ts).
 *
 * Every client speaks 2026-07-28 over Streamable HTTP, lists the tools once,
 * then calls `echo {text: "hi"}`:
 * - `ours`: `McpClient` with `protocol: "2026-07-28"` on
 *   StreamableHttpClientTransport over `NodeHttpClient.layerUndici`
 * - `ours-auto`: the same with `protocol: "auto"`, built after a first client
 *   of the same `eraKey` has probed, so it starts from the cached era
 * - `sdk2`: the official SDK v2 `Client` (`@modelcontextprotocol/client`)
 *   with `versionNegotiation: { mode: { pin: "2026-07-28" } }` over its
 *   StreamableHTTPClientTransport
 * - `effect-ai`: `effect/ai`'s McpClient, `McpProtocol.v2026_07_28`, over
 *   `McpClient.layerHttp` on the same undici HttpClient as ours
 * - `fetch`: a hand-written `fetch` client sending the same `_meta` and
 *   headers, reading `res.json()`: the server's ceiling, not a peer
 */
import { loadMcpClient, loadStreamableHttpClientTransport } from "../our-modules.ts"
import { drive, measureAndExit, type RunResult } from "../stats.ts"

export type StatelessClient = "ours" | "ours-auto" | "sdk2" | "effect-ai" | "fetch"

export interface Job {
  readonly client: StatelessClient
  readonly url: string
  readonly concurrency: number
  readonly total: number
  readonly warmup: number
}

const VERSION = "2026-07-28"
const ARGS = { text: "hi" }
const clientInfo = (name: string) => ({ name, version: "1.0.0" })

interface Runner {
  readonly run: (n: number) => Promise<RunResult>
  readonly close: () => Promise<void>
}

const ours = async (job: Job, auto: boolean): Promise<Runner> => {
  const Layer = await import("effect/Layer")
  const Effect = await import("effect/Effect")
  const ManagedRuntime = await import("effect/ManagedRuntime")
  const NodeHttpClient = await import("@effect/platform-node/NodeHttpClient")
  const McpClient = await loadMcpClient()
  const StreamableHttpClientTransport = await loadStreamableHttpClientTransport()
  const { driveEffect } = await import("../clients/effect-drive.ts")
  const transport = StreamableHttpClientTransport.layer({ url: job.url }).pipe(Layer.provide(NodeHttpClient.layerUndici))
  const options = auto
    ? { clientInfo: clientInfo("bench-ours-auto"), protocol: "auto" as const, eraKey: job.url }
    : { clientInfo: clientInfo("bench-ours"), protocol: VERSION as "2026-07-28" }
  if (auto) {
    // A first client finds the era and leaves it in the process-wide cache.
    const probe = ManagedRuntime.make(McpClient.layer(options).pipe(Layer.provide(transport)))
    const first = await probe.runPromise(McpClient.McpClient)
    if (first.era !== "modern") throw new Error(`auto found the ${first.era} era`)
    await probe.dispose()
  }
  const runtime = ManagedRuntime.make(McpClient.layer(options).pipe(Layer.provide(transport)))
  const client = await runtime.runPromise(McpClient.McpClient)
  if (client.era !== "modern") throw new Error(`expected the modern era, got ${client.era}`)
  await runtime.runPromise(client.listAllTools())
  const call = Effect.map(client.callTool({ name: "echo", arguments: ARGS }), check)
  return { run: (n) => runtime.runPromise(driveEffect(call, n, job.concurrency)), close: () => runtime.dispose() }
}

const effectAi = async (job: Job): Promise<Runner> => {
  const Layer = await import("effect/Layer")
  const Effect = await import("effect/Effect")
  const ManagedRuntime = await import("effect/ManagedRuntime")
  const NodeHttpClient = await import("@effect/platform-node/NodeHttpClient")
  const McpClient = await import("effect/ai/McpClient")
  const McpProtocol = await import("effect/ai/McpProtocol")
  const { driveEffect } = await import("../clients/effect-drive.ts")
  const runtime = ManagedRuntime.make(
    McpClient.layerHttp({ ...clientInfo("bench-effect-ai"), protocol: McpProtocol.v2026_07_28, url: job.url }).pipe(
      Layer.provide(NodeHttpClient.layerUndici)
    )
  )
  const client = await runtime.runPromise(McpClient.McpClient)
  const tools = await runtime.runPromise(client.listTools())
  const tool = tools.find((t) => t.name === "echo")
  if (tool === undefined) throw new Error("no echo tool")
  const call = Effect.map(client.callTool({ tool, arguments: ARGS }), check)
  return { run: (n) => runtime.runPromise(driveEffect(call, n, job.concurrency)), close: () => runtime.dispose() }
}

const sdk2 = async (job: Job): Promise<Runner> => {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client")
  const client = new Client(clientInfo("bench-sdk2"), { versionNegotiation: { mode: { pin: VERSION } } })
  await client.connect(new StreamableHTTPClientTransport(new URL(job.url)))
  if (client.getProtocolEra() !== "modern") throw new Error(`expected the modern era, got ${client.getProtocolEra()}`)
  await client.listTools()
  const call = async () => check(await client.callTool({ name: "echo", arguments: ARGS }))
  return { run: (n) => drive(call, n, job.concurrency), close: () => client.close() }
}

const handWritten = (job: Job): Runner => {
  let nextId = 0
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": VERSION,
    "mcp-method": "tools/call",
    "mcp-name": "echo"
  }
  const meta = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": clientInfo("bench-fetch")
  }
  const call = async () => {
    const res = await fetch(job.url, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: ++nextId, method: "tools/call", params: { name: "echo", arguments: ARGS, _meta: meta } })
    })
    if (res.headers.get("content-type")?.startsWith("text/event-stream")) {
      const text = await res.text()
      for (const line of text.split("\n")) {
        if (!line.startsWith("data:")) continue
        const message = JSON.parse(line.slice(5)) as { result?: unknown }
        if ("result" in message) return check(message.result)
      }
      throw new Error("no result in the stream")
    }
    return check(((await res.json()) as { result?: unknown }).result)
  }
  return { run: (n) => drive(call, n, job.concurrency), close: async () => {} }
}

/** Each answer is looked at, so that a client that fails fast cannot look fast. */
function check<A>(result: A): A {
  const content = (result as { content?: ReadonlyArray<{ text?: unknown }> } | undefined)?.content
  if (typeof content?.[0]?.text !== "string") throw new Error(`unexpected result ${JSON.stringify(result)}`)
  return result
}

const job = JSON.parse(process.argv[2]!) as Job
const runner = job.client === "ours" || job.client === "ours-auto"
  ? await ours(job, job.client === "ours-auto")
  : job.client === "sdk2"
  ? await sdk2(job)
  : job.client === "effect-ai"
  ? await effectAi(job)
  : handWritten(job)
await measureAndExit(runner.run, runner.close, job)
