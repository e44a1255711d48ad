/** The official TypeScript SDK's client over its stdio transport. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import type { BenchClient } from "./types.ts"

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const client = new Client({ name: "bench-sdk", version: "1.0.0" })
  await client.connect(new StdioClientTransport({ command, args: [...args], stderr: "inherit" }))
  return {
    callTool: () => client.callTool({ name: "echo", arguments: { text: "hi" } }),
    ping: () => client.ping(),
    close: () => client.close()
  }
}
