/**
 * Benchmark server on the official SDK: its `McpServer` over its
 * `StdioServerTransport`, with the tools of `tools.ts`. The tools declare no
 * input schema, so no argument validation runs on either side of the
 * comparison; the SDK still validates each request's envelope.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { ECHO_RESULT, holdCount, memoryResult, type MemorySample, sampleMemory } from "./tools.ts"

const server = new McpServer({ name: "bench-sdk", version: "1.0.0" })
server.registerTool("echo", { description: "small fixed result" }, () => ECHO_RESULT)
server.registerTool("mem", {}, () => memoryResult(sampleMemory()))

const hold = holdCount()
let arrived = 0
let release: (sample: MemorySample) => void = () => {}
const peak = new Promise<MemorySample>((resolve) => release = resolve)
server.registerTool("held", {}, async () => {
  if (++arrived === hold) release(sampleMemory())
  return memoryResult(await peak) as never
})

await server.connect(new StdioServerTransport())
