/**
 * `ours-tool` with telemetry on (`bench/telemetry.ts`): spans made for every
 * request and the runtime's metrics recorded.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as Effect from "effect/Effect"
import { loadMcpServer, loadStdioServerTransport } from "../our-modules.ts"
import { telemetryOn } from "../telemetry.ts"
import { echoServer } from "./echo-apis.ts"

const McpServer = await loadMcpServer()
const StdioServerTransport = await loadStdioServerTransport()
const server = await echoServer("tool", "bench-ours-tool", undefined)

Effect.gen(function*() {
  const handle = yield* McpServer.toHandler(server)
  return yield* StdioServerTransport.run(handle.handler)
}).pipe(Effect.scoped, Effect.provide([NodeStdio.layer, StdioServerTransport.layerLogger, telemetryOn]), NodeRuntime.runMain)
