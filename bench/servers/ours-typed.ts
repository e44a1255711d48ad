/**
 * Benchmark server on our runtime: `McpServer` on `StdioServerTransport`
 * with `echo` defined the `typed` way (see `echo-apis.ts`).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as Effect from "effect/Effect"
import { loadMcpServer, loadStdioServerTransport } from "../our-modules.ts"
import { echoServer } from "./echo-apis.ts"

const McpServer = await loadMcpServer()
const StdioServerTransport = await loadStdioServerTransport()
const server = await echoServer("typed", "bench-ours-typed", undefined)

Effect.gen(function*() {
  const handle = yield* McpServer.toHandler(server)
  return yield* StdioServerTransport.run(handle.handler)
}).pipe(Effect.scoped, Effect.provide([NodeStdio.layer, StdioServerTransport.layerLogger]), NodeRuntime.runMain)
