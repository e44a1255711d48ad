/**
 * This project's protocol layer (`McpClient`: handshake, results decoded with
 * Schema) over its stdio transport: the like-for-like peer of the SDK's
 * `Client` and of `effect/ai`'s `McpClient`, which both decode results too.
 * BENCH_STDIO_UNTRACKED=1 turns the server's descendant tracking off
 * (`shutdown.descendantSampleInterval: false`), to weigh its share of teardown.
 * `makeWith` takes further transport options: `ours-mcp-inherit` (index.ts)
 * leaves the server's stderr to this process's own, as `effect-floor` and the
 * SDK's client do.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { runtimeClient } from "./effect-drive.ts"
import { loadMcpClient, loadNodeSpawner, loadStdioClientTransport } from "../our-modules.ts"
import type { BenchClient, ClientOptions } from "./types.ts"

const McpClient = await loadMcpClient()
const StdioClientTransport = await loadStdioClientTransport()
const NodeSpawner = await loadNodeSpawner()

type TransportOptions = Partial<Parameters<typeof StdioClientTransport.layer>[0]>

/** `McpClient` over the stdio transport in a runtime of its own; `name` is the client's in `initialize`. */
export const open = async (
  command: string,
  args: ReadonlyArray<string>,
  name: string,
  options: ClientOptions = {},
  transport: TransportOptions = {}
) => {
  const runtime = ManagedRuntime.make(
    McpClient.layer({
      clientInfo: { name, version: "1.0.0" },
      // Pinned when asked: a pinned revision neither probes nor falls back.
      ...(options.protocol === undefined ? {} : { protocol: options.protocol })
    }).pipe(
      Layer.provide(StdioClientTransport.layer({
        command,
        args,
        ...(process.env.BENCH_STDIO_UNTRACKED === "1" ? { shutdown: { descendantSampleInterval: false } } : {}),
        ...transport
      })),
      Layer.provide(NodeSpawner.layer)
    )
  )
  const client = await runtime.runPromise(McpClient.McpClient)
  return { runtime, client }
}

/** The bench client over a transport with `transport`'s options laid over the defaults. */
export const makeWith = (transport: TransportOptions) =>
async (
  command: string,
  args: ReadonlyArray<string>,
  options: ClientOptions = {}
): Promise<BenchClient> => {
  const { runtime, client } = await open(command, args, "bench-ours-mcp", options, transport)
  const callTool = client.callTool({ name: "echo", arguments: { text: "hi" } })
  const ping = client.ping()
  // The progress callback as a user writes it: one Effect per notification.
  let progressed = 0
  const withProgress = client.callTool({ name: "echo", arguments: { text: "hi" } }, {
    onProgress: () => Effect.sync(() => void progressed++)
  })
  return {
    ...runtimeClient(runtime, { callTool, ping, callToolWithProgress: withProgress }),
    progressReceived: () => progressed
  }
}

export const make = makeWith({})
