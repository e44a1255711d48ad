/**
 * effect/ai's McpServer (effect 4.1, `McpProtocol.v2026_07_28`) for the
 * stateless-server workload: `McpServer.layerHttp` at `/mcp` on
 * `NodeHttpServer`, tools `echo {text}` and `held` registered through
 * `McpServer.addTool` with the same JSON input schemas as the other servers.
 *
 *   node --expose-gc bench/stateless-server/server-effect-ai.ts
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import * as McpProtocol from "effect/ai/McpProtocol"
import * as McpSchema from "effect/ai/McpSchema"
import * as McpServer from "effect/ai/McpServer"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import { createServer } from "node:http"
import { announce, ECHO_SCHEMA, echoText, HELD_SCHEMA, HELD_TEXT, hold, installControl } from "./control.ts"

installControl()

const text = (value: string) => new McpSchema.CallToolResult({ content: [{ type: "text", text: value }] })
type Handle = (payload: Readonly<Record<string, unknown>>) => Effect.Effect<McpSchema.CallToolResult>

const Tools = Layer.effectDiscard(Effect.gen(function*() {
  const server = yield* McpServer.McpServer
  const add = (name: string, inputSchema: object, handle: Handle) =>
    server.addTool({
      tool: new McpSchema.Tool({ name, inputSchema: inputSchema as McpSchema.Tool["inputSchema"] }),
      annotations: Context.empty(),
      handle: handle as never
    })
  yield* add("echo", ECHO_SCHEMA, (p) => Effect.succeed(text(echoText(String(p.text)))))
  yield* add("held", HELD_SCHEMA, () => Effect.as(Effect.promise(hold), text(HELD_TEXT)))
}))

const Announce = Layer.effectDiscard(Effect.gen(function*() {
  const address = (yield* HttpServer.HttpServer).address
  if ("port" in address) yield* Effect.sync(() => announce(`http://127.0.0.1:${address.port}/mcp`))
}))

const app = HttpRouter.serve(
  McpServer.layerHttp({
    name: "bench-effect-ai",
    version: "4.1.0",
    path: "/mcp",
    protocols: [McpProtocol.v2026_07_28],
    registrations: Tools
  }),
  { disableLogger: true, disableListenLog: true }
).pipe(
  Layer.merge(Announce),
  Layer.provide(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 }))
)
NodeRuntime.runMain(Layer.launch(app as Layer.Layer<unknown, unknown>))
