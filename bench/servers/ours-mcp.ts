/**
 * Benchmark server on our runtime: `McpServer` (lifecycle, Schema-decoded
 * params) mounted on `StdioServerTransport`, with the tools of `tools.ts`.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { loadMcpServer, loadStdioServerTransport } from "../our-modules.ts"
import { ECHO_RESULT, holdCount, memoryResult, type MemorySample, sampleMemory } from "./tools.ts"

const McpServer = await loadMcpServer()
const StdioServerTransport = await loadStdioServerTransport()

const CallParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})

const hold = holdCount()
let arrived = 0
const peak = Deferred.makeUnsafe<MemorySample>()

const held = Effect.suspend(() => {
  if (++arrived === hold) Deferred.doneUnsafe(peak, Effect.succeed(sampleMemory()))
  return Effect.map(Deferred.await(peak), memoryResult)
})

const server = McpServer.make({ serverInfo: { name: "bench-ours-mcp", version: "1.0.0" } }).pipe(
  McpServer.method("tools/list", {}, () =>
    Effect.succeed({ tools: [{ name: "echo", inputSchema: { type: "object" } }] })),
  McpServer.method("tools/call", { params: CallParams }, ({ name }) =>
    name === "held" ? held : name === "mem" ? Effect.sync(() => memoryResult(sampleMemory())) : Effect.succeed(ECHO_RESULT))
)

Effect.gen(function*() {
  const handle = yield* McpServer.toHandler(server)
  return yield* StdioServerTransport.run(handle.handler)
}).pipe(Effect.scoped, Effect.provide([NodeStdio.layer, StdioServerTransport.layerLogger]), NodeRuntime.runMain)
