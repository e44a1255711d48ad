/**
 * Benchmark server on the official SDK v2 (`@modelcontextprotocol/server`
 * 2.4): its `McpServer` over its `StdioServerTransport`, wired for the
 * 2025-11-25 handshake the bench clients open with, with the tools of
 * `tools.ts` (no input schema, as in sdk.ts).
 */
import { McpServer } from "@modelcontextprotocol/server"
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio"
import { ECHO_RESULT, holdCount, memoryResult, type MemorySample, sampleMemory } from "./tools.ts"

const server = new McpServer({ name: "bench-sdk2", version: "1.0.0" })
server.registerTool("echo", { description: "small fixed result" }, () => ECHO_RESULT)
server.registerTool("mem", {}, () => memoryResult(sampleMemory()))

const hold = holdCount()
let arrived = 0
let release: (sample: MemorySample) => void = () => {}
const peak = new Promise<MemorySample>((resolve) => release = resolve)
server.registerTool("held", {}, async () => {
  if (++arrived === hold) release(sampleMemory())
  return memoryResult(await peak)
})

await server.connect(new StdioServerTransport())
