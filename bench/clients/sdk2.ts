/**
 * The official SDK 2.x client (`@modelcontextprotocol/client`) over its
 * stdio transport: the `initialize` handshake by default, or pinned to the
 * stateless revision (`versionNegotiation: { mode: { pin } }`).
 */
import { Client } from "@modelcontextprotocol/client"
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio"
import type { BenchClient, ClientOptions } from "./types.ts"

export const make = async (command: string, args: ReadonlyArray<string>, options: ClientOptions = {}): Promise<BenchClient> => {
  const client = new Client(
    { name: "bench-sdk2", version: "1.0.0" },
    options.protocol === "2026-07-28" ? { versionNegotiation: { mode: { pin: options.protocol } } } : {}
  )
  await client.connect(new StdioClientTransport({ command, args: [...args], stderr: "inherit" }))
  const params = { name: "echo", arguments: { text: "hi" } }
  let progressed = 0
  const onprogress = () => void progressed++
  return {
    callTool: () => client.callTool(params),
    ping: () => client.ping(),
    callToolWithProgress: () => client.callTool(params, { onprogress }),
    progressReceived: () => progressed,
    close: () => client.close()
  }
}
