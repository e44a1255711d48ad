/** `ours-mcp` with telemetry on (`bench/telemetry.ts`): a client span per request and the client's metrics. */
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { runtimeClient } from "./effect-drive.ts"
import { loadMcpClient, loadNodeSpawner, loadStdioClientTransport } from "../our-modules.ts"
import { telemetryOn } from "../telemetry.ts"
import type { BenchClient } from "./types.ts"

const McpClient = await loadMcpClient()
const StdioClientTransport = await loadStdioClientTransport()
const NodeSpawner = await loadNodeSpawner()

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const runtime = ManagedRuntime.make(
    McpClient.layer({ clientInfo: { name: "bench-ours-mcp", version: "1.0.0" } }).pipe(
      Layer.provide(StdioClientTransport.layer({ command, args })),
      Layer.provide(NodeSpawner.layer),
      Layer.provideMerge(telemetryOn)
    )
  )
  const client = await runtime.runPromise(McpClient.McpClient)
  return runtimeClient(runtime, {
    callTool: client.callTool({ name: "echo", arguments: { text: "hi" } }),
    ping: client.ping()
  })
}
