/**
 * McpServer quick start: a stdio MCP server with one tool, built on the
 * server-side lifecycle (initialize, ping, the initialized gate, logging).
 * Run: npx node scratchpad/mcp-server-example.ts   (then speak JSON-RPC on stdin)
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect, Schema } from "effect"
import { RpcError } from "../src/McpError.ts"
import * as McpServer from "../src/server/McpServer.ts"
import * as StdioServerTransport from "../src/server/StdioServerTransport.ts"

const AddParams = Schema.Struct({
  name: Schema.Literal("add"),
  arguments: Schema.Struct({ a: Schema.Number, b: Schema.Number })
})

const server = McpServer.make({
  serverInfo: { name: "adder", version: "1.0.0" },
  instructions: "Adds numbers."
}).pipe(
  McpServer.method("tools/list", {}, () =>
    Effect.succeed({
      tools: [{
        name: "add",
        description: "a + b",
        inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] }
      }]
    })),
  // Params that do not decode are answered -32602 with the decoder's message.
  McpServer.method("tools/call", { params: AddParams }, ({ arguments: { a, b } }, ctx) =>
    Effect.gen(function*() {
      yield* ctx.log("info", `adding ${a} and ${b}`)
      yield* ctx.progress(1, { total: 1 }) // sent only if the request carried a progress token
      if (!Number.isFinite(a + b)) return yield* new RpcError({ code: -32602, rpcMessage: "not finite" })
      return { content: [{ type: "text", text: String(a + b) }], structuredContent: { sum: a + b } }
    }))
)

Effect.gen(function*() {
  const handle = yield* McpServer.toHandler(server)
  return yield* StdioServerTransport.run(handle.handler)
}).pipe(Effect.scoped, Effect.provide([NodeServices.layer, StdioServerTransport.layerLogger]), NodeRuntime.runMain)
