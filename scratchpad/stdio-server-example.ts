/**
 * A minimal stdio MCP server on StdioServerTransport.
 * Try: printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' | npx node scratchpad/stdio-server-example.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as Effect from "effect/Effect"
import * as JsonRpc from "../src/JsonRpc.ts"
import type { Handler } from "../src/server/Handler.ts"
import * as StdioServerTransport from "../src/server/StdioServerTransport.ts"

const handler: Handler = (message, context) =>
  Effect.gen(function*() {
    if (!("id" in message)) return null // notifications get no reply
    switch (message.method) {
      case "initialize":
        return JsonRpc.success(message.id, {
          protocolVersion: "2025-06-18",
          capabilities: { tools: {} },
          serverInfo: { name: "example", version: "1.0.0" }
        })
      case "tools/list":
        console.log("stray output: lands on stderr, never on stdout")
        yield* context.notify("notifications/message", { level: "info", data: "listing tools" })
        return JsonRpc.success(message.id, { tools: [] })
      default:
        return JsonRpc.methodNotFound(message.id, message.method)
    }
  })

StdioServerTransport.run(handler).pipe(
  Effect.provide([NodeStdio.layer, StdioServerTransport.layerLogger]),
  NodeRuntime.runMain
)
