/** The official TypeScript SDK's client over its stdio transport. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import type { BenchClient, ClientOptions } from "./types.ts"

export const make = async (command: string, args: ReadonlyArray<string>, options: ClientOptions = {}): Promise<BenchClient> => {
  if (options.protocol === "2026-07-28") throw new Error("the SDK 1.x client does not speak 2026-07-28")
  const client = new Client({ name: "bench-sdk", version: "1.0.0" })
  await client.connect(new StdioClientTransport({ command, args: [...args], stderr: "inherit" }))
  let progressed = 0
  const onprogress = () => void progressed++
  return {
    callToolWithProgress: () => client.callTool({ name: "echo", arguments: { text: "hi" } }, undefined, { onprogress }),
    progressReceived: () => progressed,
    callTool: () => client.callTool({ name: "echo", arguments: { text: "hi" } }),
    ping: () => client.ping(),
    close: () => client.close()
  }
}
