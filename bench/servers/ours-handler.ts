/**
 * Ladder step on our runtime: `StdioServerTransport` with a bare `Handler`
 * (no `McpServer`: no lifecycle checks, no Schema decoding). The gap to
 * `ours-mcp` is what the protocol layer costs; the gap to the raw responder
 * is what the transport costs.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as Effect from "effect/Effect"
import type { Handler } from "../../src/server/Handler.ts"
import { loadJsonRpc, loadStdioServerTransport } from "../our-modules.ts"
import { ECHO_RESULT } from "./tools.ts"

const JsonRpc = await loadJsonRpc()
const StdioServerTransport = await loadStdioServerTransport()

const INIT_RESULT = {
  protocolVersion: "2025-11-25",
  capabilities: { tools: {} },
  serverInfo: { name: "bench-ours-handler", version: "1.0.0" }
}
const EMPTY = {}

const handler: Handler = (message) => {
  if (!("id" in message)) return Effect.succeed(null)
  switch (message.method) {
    case "initialize":
      return Effect.succeed(JsonRpc.success(message.id, INIT_RESULT))
    case "tools/call":
      return Effect.succeed(JsonRpc.success(message.id, ECHO_RESULT))
    case "ping":
      return Effect.succeed(JsonRpc.success(message.id, EMPTY))
    default:
      return Effect.succeed(JsonRpc.methodNotFound(message.id, message.method))
  }
}

StdioServerTransport.run(handler).pipe(
  Effect.provide([NodeStdio.layer, StdioServerTransport.layerLogger]),
  NodeRuntime.runMain
)
