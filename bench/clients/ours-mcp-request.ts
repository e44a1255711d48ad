/**
 * Ladder step: `McpClient`'s untyped `request("tools/call", …)` over the same
 * transport as `ours-mcp`: the client's call (progress token, idle timeout,
 * error group) without the result's decoding or the tasks check that
 * `callTool` adds. Between `ours-call-options` and `ours-mcp`.
 */
import { runtimeClient } from "./effect-drive.ts"
import { open } from "./ours-mcp.ts"
import type { BenchClient } from "./types.ts"

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const { runtime, client } = await open(command, args, "bench-ours-mcp-request", { protocol: "2025-11-25" })
  return runtimeClient(runtime, {
    callTool: client.request("tools/call", { name: "echo", arguments: { text: "hi" } }),
    ping: client.ping()
  })
}
