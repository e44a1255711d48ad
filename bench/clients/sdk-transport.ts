/**
 * The official SDK's stdio transport on its own, with a Map of resolvers as
 * in the raw client: what the SDK's `Client` costs without its protocol layer
 * (result validation, per-request timers), to compare transport with transport.
 */
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import type { BenchClient } from "./types.ts"

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const transport = new StdioClientTransport({ command, args: [...args], stderr: "inherit" })
  const waiting = new Map<number, (v: unknown) => void>()
  let nextId = 0
  transport.onmessage = (message: JSONRPCMessage) => {
    if (!("id" in message) || "method" in message) return
    const resolve = waiting.get(message.id as number)
    if (resolve !== undefined) {
      waiting.delete(message.id as number)
      resolve("result" in message ? message.result : message.error)
    }
  }
  await transport.start()
  const request = (method: string, params?: Record<string, unknown>) =>
    new Promise<unknown>((resolve, reject) => {
      const id = ++nextId
      waiting.set(id, resolve)
      transport.send(params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params })
        .catch(reject)
    })
  await request("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "sdk-transport", version: "1" } })
  await transport.send({ jsonrpc: "2.0", method: "notifications/initialized" })
  return {
    callTool: () => request("tools/call", { name: "echo", arguments: { text: "hi" } }),
    ping: () => request("ping"),
    close: () => transport.close()
  }
}
