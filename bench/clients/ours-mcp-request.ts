/**
 * Ladder step: `McpClient`'s untyped `request("tools/call", …)` over the same
 * transport as `ours-mcp`: the client's call (progress token, idle timeout,
 * error group) without the result's decoding or the tasks check that
 * `callTool` adds. Between `ours-call-options` and `ours-mcp`.
 */
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { runtimeClient } from "./effect-drive.ts"
import { loadMcpClient, loadNodeSpawner, loadStdioClientTransport } from "../our-modules.ts"
import type { BenchClient } from "./types.ts"

const McpClient = await loadMcpClient()
const StdioClientTransport = await loadStdioClientTransport()
const NodeSpawner = await loadNodeSpawner()

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const runtime = ManagedRuntime.make(
    McpClient.layer({ clientInfo: { name: "bench-ours-mcp-request", version: "1.0.0" }, protocol: "2025-11-25" }).pipe(
      Layer.provide(StdioClientTransport.layer({ command, args })),
      Layer.provide(NodeSpawner.layer)
    )
  )
  const client = await runtime.runPromise(McpClient.McpClient)
  return runtimeClient(runtime, {
    callTool: client.request("tools/call", { name: "echo", arguments: { text: "hi" } }),
    ping: client.ping()
  })
}
