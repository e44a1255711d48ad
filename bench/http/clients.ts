/**
 * The clients of the HTTP and large-message workloads, each over Streamable
 * HTTP or stdio, behind the stdio harness's `BenchClient` shape:
 *
 * - `ours`: StreamableHttpClientTransport on `NodeHttpClient.layerUndici`
 *   (or StdioClientTransport), `request` driven from fibers
 * - `ours-mcp`: McpClient over the same transport (results decoded with Schema)
 * - `sdk`: the official SDK's `Client` over its StreamableHTTPClientTransport
 *   (or StdioClientTransport); it validates results with zod
 * - `sdk2`: the official SDK 2.x `Client` (`@modelcontextprotocol/client`)
 *   over its StreamableHTTPClientTransport (HTTP only)
 * - `raw`: over HTTP, undici's `Pool.request` with a keep-alive pool, one
 *   JSON.parse per answer; over stdio, a bare requester on the child's pipes
 *
 * Over HTTP, `ours-mcp`, `sdk`, `sdk2` and `raw` also speak the stateless
 * revision when asked (`protocol: "2026-07-28"`; not the SDK 1.x client) and
 * call with a progress token (`callToolWithProgress`), counting the
 * notifications through the client's progress callback (raw: in the SSE body).
 *
 * Our transports and the SDK's stdio client get a 64 MiB message limit (both
 * default to 10 MiB, which a 10 MiB tool result in its envelope exceeds); the
 * SDK's HTTP client and the raw clients have none.
 */
import type { Effect, ManagedRuntime } from "effect"
import type { BenchClient, ClientOptions } from "../clients/types.ts"
import {
  loadClientTransport,
  loadMcpClient,
  loadNodeSpawner,
  loadStdioClientTransport,
  loadStreamableHttpClientTransport
} from "../our-modules.ts"
import { PROTOCOL_VERSION, TOOL_ARGS } from "./common.ts"

export type Target =
  | { readonly kind: "http"; readonly url: string }
  | { readonly kind: "stdio"; readonly command: string; readonly args: ReadonlyArray<string>; readonly env?: Record<string, string> }

export type ClientName = "ours" | "ours-mcp" | "sdk" | "sdk2" | "raw"

const LIMIT = 64 * 1024 * 1024
const clientInfo = (name: string) => ({ name, version: "1.0.0" })

// Each client loads only its own modules: a client's peak RSS (workload 4)
// should not include the other clients' libraries.
const transportLayer = async (target: Target) => {
  const Layer = await import("effect/Layer")
  if (target.kind === "http") {
    const NodeHttpClient = await import("@effect/platform-node/NodeHttpClient")
    const StreamableHttpClientTransport = await loadStreamableHttpClientTransport()
    return StreamableHttpClientTransport.layer({ url: target.url, maxMessageBytes: LIMIT }).pipe(
      Layer.provide(NodeHttpClient.layerUndici)
    )
  }
  const NodeSpawner = await loadNodeSpawner()
  const StdioClientTransport = await loadStdioClientTransport()
  return StdioClientTransport.layer({
    command: target.command,
    args: target.args,
    env: target.env,
    maxMessageBytes: LIMIT
  }).pipe(Layer.provide(NodeSpawner.layer))
}

const fromEffects = <E>(
  runtime: ManagedRuntime.ManagedRuntime<never, unknown>,
  callTool: Effect.Effect<unknown, E>,
  ping: Effect.Effect<unknown, E>,
  driveEffect: typeof import("../clients/effect-drive.ts").driveEffect
): BenchClient => ({
  callTool: () => runtime.runPromise(callTool),
  ping: () => runtime.runPromise(ping),
  drive: (op, total, concurrency) => runtime.runPromise(driveEffect(op === "ping" ? ping : callTool, total, concurrency)),
  close: () => runtime.dispose()
})

const ours = async (target: Target): Promise<BenchClient> => {
  const Effect = await import("effect/Effect")
  const ManagedRuntime = await import("effect/ManagedRuntime")
  const { ClientTransport } = await loadClientTransport()
  const { driveEffect } = await import("../clients/effect-drive.ts")
  const runtime = ManagedRuntime.make(await transportLayer(target))
  const transport = await runtime.runPromise(ClientTransport)
  await runtime.runPromise(Effect.gen(function*() {
    const init = (yield* transport.request("initialize", {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: clientInfo("bench-ours")
    })) as { protocolVersion: string }
    yield* transport.setProtocolVersion(init.protocolVersion)
    yield* transport.notify("notifications/initialized")
  }))
  return fromEffects(runtime as never, transport.request("tools/call", TOOL_ARGS), transport.request("ping"), driveEffect)
}

const oursMcp = async (target: Target, options: ClientOptions): Promise<BenchClient> => {
  const Effect = await import("effect/Effect")
  const Layer = await import("effect/Layer")
  const ManagedRuntime = await import("effect/ManagedRuntime")
  const McpClient = await loadMcpClient()
  const { driveEffect } = await import("../clients/effect-drive.ts")
  const runtime = ManagedRuntime.make(
    McpClient.layer({
      clientInfo: clientInfo("bench-ours-mcp"),
      ...(options.protocol === undefined ? {} : { protocol: options.protocol })
    }).pipe(Layer.provide(await transportLayer(target)))
  )
  const client = await runtime.runPromise(McpClient.McpClient)
  // The progress callback as a user writes it: one Effect per notification.
  let progressed = 0
  const withProgress = client.callTool(TOOL_ARGS, { onProgress: () => Effect.sync(() => void progressed++) })
  const plain = fromEffects(runtime as never, client.callTool(TOOL_ARGS), client.ping(), driveEffect)
  return {
    ...plain,
    callToolWithProgress: () => runtime.runPromise(withProgress),
    progressReceived: () => progressed,
    drive: (op, total, concurrency) =>
      op === "callToolWithProgress"
        ? runtime.runPromise(driveEffect(withProgress, total, concurrency))
        : plain.drive!(op, total, concurrency)
  }
}

const sdk = async (target: Target, options: ClientOptions): Promise<BenchClient> => {
  if (options.protocol === "2026-07-28") throw new Error("the SDK 1.x client does not speak 2026-07-28")
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js")
  const { StdioClientTransport: SdkStdio } = await import("@modelcontextprotocol/sdk/client/stdio.js")
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js")
  const client = new Client(clientInfo("bench-sdk"))
  await client.connect(
    target.kind === "http"
      ? new StreamableHTTPClientTransport(new URL(target.url))
      : new SdkStdio({
        command: target.command,
        args: [...target.args],
        stderr: "inherit",
        maxBufferSize: LIMIT,
        ...(target.env === undefined ? {} : { env: { ...process.env, ...target.env } as Record<string, string> })
      })
  )
  let progressed = 0
  const onprogress = () => void progressed++
  return {
    callTool: () => client.callTool(TOOL_ARGS),
    ping: () => client.ping(),
    callToolWithProgress: () => client.callTool(TOOL_ARGS, undefined, { onprogress }),
    progressReceived: () => progressed,
    close: async () => {
      // The HTTP transport's close does not end the session; ending it is the client's call.
      const transport = client.transport
      if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => {})
      await client.close()
    }
  }
}

const sdk2 = async (target: Target, options: ClientOptions): Promise<BenchClient> => {
  if (target.kind !== "http") throw new Error("sdk2 is measured over stdio by bench/clients/sdk2.ts")
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client")
  const client = new Client(
    clientInfo("bench-sdk2"),
    options.protocol === "2026-07-28" ? { versionNegotiation: { mode: { pin: options.protocol } } } : {}
  )
  const transport = new StreamableHTTPClientTransport(new URL(target.url))
  await client.connect(transport)
  let progressed = 0
  const onprogress = () => void progressed++
  return {
    callTool: () => client.callTool(TOOL_ARGS),
    ping: () => client.ping(),
    callToolWithProgress: () => client.callTool(TOOL_ARGS, { onprogress }),
    progressReceived: () => progressed,
    close: async () => {
      if (options.protocol !== "2026-07-28") await transport.terminateSession().catch(() => {})
      await client.close()
    }
  }
}

const lastData = (sse: string): string => {
  let end = sse.length
  while (end > 0) {
    const at = sse.lastIndexOf("data:", end - 1)
    if (at === -1) break
    const lineEnd = sse.indexOf("\n", at)
    const data = sse.slice(at + 5, lineEnd === -1 ? undefined : lineEnd).trim()
    if (data.length > 0) return data
    end = at
  }
  return ""
}

/** Occurrences of `needle` in `text`. */
const count = (text: string, needle: string): number => {
  let n = 0
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) n++
  return n
}

const rawHttp = async (url: string, options: ClientOptions): Promise<BenchClient> => {
  const { Pool } = await import("undici")
  const { origin, pathname } = new URL(url)
  const pool = new Pool(origin, { pipelining: 1 })
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream"
  }
  let nextId = 0
  let progressed = 0
  const post = async (message: object): Promise<unknown> => {
    const { statusCode, headers: got, body } = await pool.request({
      origin,
      path: pathname,
      method: "POST",
      headers,
      body: JSON.stringify(message)
    })
    const text = await body.text()
    if (statusCode === 202) return undefined
    const session = got["mcp-session-id"]
    if (typeof session === "string") headers["mcp-session-id"] = session
    // In an SSE answer the response is the last non-empty `data:` line (a
    // server may send a priming event with empty data first).
    const sse = String(got["content-type"]).startsWith("text/event-stream")
    // Progress notifications come on the call's own stream, before its result.
    if (sse) progressed += count(text, "notifications/progress")
    const json = sse ? lastData(text) : text
    return (JSON.parse(json) as { result: unknown }).result
  }
  const { INITIALIZE_PARAMS, MODERN_META } = await import("../clients/raw-core.ts")
  const request = (method: string, params?: unknown) => post({ jsonrpc: "2.0", id: ++nextId, method, params })
  const modern = options.protocol === "2026-07-28"
  if (modern) {
    // No handshake and no session: the revision goes with every request, in a header and in `_meta`.
    headers["mcp-protocol-version"] = "2026-07-28"
  } else {
    const init = (await request("initialize", INITIALIZE_PARAMS)) as { protocolVersion: string }
    headers["mcp-protocol-version"] = init.protocolVersion
    await post({ jsonrpc: "2.0", method: "notifications/initialized" })
  }
  const meta = modern ? MODERN_META : {}
  const toolArgs = modern ? { ...TOOL_ARGS, _meta: meta } : TOOL_ARGS
  let token = 0
  return {
    callTool: () => request("tools/call", toolArgs),
    ping: () => request("ping", modern ? { _meta: meta } : undefined),
    callToolWithProgress: () => request("tools/call", { ...TOOL_ARGS, _meta: { ...meta, progressToken: ++token } }),
    progressReceived: () => progressed,
    close: async () => {
      await pool.request({ origin, path: pathname, method: "DELETE", headers }).then((r) => r.body.dump()).catch(() => {})
      await pool.close()
    }
  }
}

/**
 * The raw stdio requester for large messages: the stdio harness's requester
 * rescans its whole pending text on every chunk, which is quadratic in the
 * size of one message (10 MiB arrive in ~160 pipe reads). This one keeps the
 * chunks of an unfinished line as Buffers and only looks for the newline in
 * the chunk that just arrived. Requests one at a time is all workload 4 needs.
 */
const rawStdio = async (target: Extract<Target, { kind: "stdio" }>): Promise<BenchClient> => {
  const { spawn } = await import("node:child_process")
  const { INITIALIZE_PARAMS } = await import("../clients/raw-core.ts")
  const child = spawn(target.command, [...target.args], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, ...target.env }
  })
  const waiting = new Map<number, (result: unknown) => void>()
  let parts: Array<Buffer> = []
  const onLine = (line: Buffer) => {
    const msg = JSON.parse(line.toString("utf8")) as { id?: number; result?: unknown }
    const resolve = msg.id === undefined ? undefined : waiting.get(msg.id)
    if (resolve !== undefined) {
      waiting.delete(msg.id!)
      resolve(msg.result)
    }
  }
  child.stdout.on("data", (chunk: Buffer) => {
    let from = 0
    let nl: number
    while ((nl = chunk.indexOf(10, from)) !== -1) {
      parts.push(chunk.subarray(from, nl))
      onLine(parts.length === 1 ? parts[0]! : Buffer.concat(parts))
      parts = []
      from = nl + 1
    }
    if (from < chunk.length) parts.push(chunk.subarray(from))
  })
  let nextId = 0
  const request = (method: string, params?: unknown) =>
    new Promise<unknown>((resolve) => {
      const id = ++nextId
      waiting.set(id, resolve)
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n")
    })
  await request("initialize", INITIALIZE_PARAMS)
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n")
  return {
    callTool: () => request("tools/call", TOOL_ARGS),
    ping: () => request("ping"),
    close: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve())
        child.stdin.end()
      })
  }
}

export const make = (name: ClientName, target: Target, options: ClientOptions = {}): Promise<BenchClient> => {
  switch (name) {
    case "ours":
      return ours(target)
    case "ours-mcp":
      return oursMcp(target, options)
    case "sdk":
      return sdk(target, options)
    case "sdk2":
      return sdk2(target, options)
    case "raw":
      return target.kind === "http" ? rawHttp(target.url, options) : rawStdio(target)
  }
}
