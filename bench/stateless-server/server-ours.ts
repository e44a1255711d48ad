/**
 * This project's server for the stateless-server workload: `McpServer` with
 * `stateless: true` on `HttpServerTransport` (eras `both`, the default), tools
 * `echo {text}` and `held` (waits on the driver's latch, see control.ts).
 *
 *   node --expose-gc bench/stateless-server/server-ours.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { loadHttpServerTransport, loadMcpServer } from "../our-modules.ts"
import { announce, ECHO_SCHEMA, echoText, HELD_SCHEMA, HELD_TEXT, hold, installControl } from "./control.ts"

const McpServer = await loadMcpServer()
const HttpServerTransport = await loadHttpServerTransport()
installControl()

const CallParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})
const TOOLS = {
  tools: [{ name: "echo", inputSchema: ECHO_SCHEMA }, { name: "held", inputSchema: HELD_SCHEMA }]
}
const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] })
const heldCall = Effect.as(Effect.promise(hold), text(HELD_TEXT))

const definition = McpServer.make({
  serverInfo: { name: "bench-ours", version: "1.0.0" },
  capabilities: { tools: {} },
  stateless: true
}).pipe(
  McpServer.method("tools/list", {}, () => Effect.succeed(TOOLS)),
  McpServer.method("tools/call", { params: CallParams }, ({ arguments: args, name }) => {
    if (name === "held") return heldCall
    const value = args?.text
    return name === "echo" && typeof value === "string"
      ? Effect.succeed(text(echoText(value)))
      : Effect.succeed({ ...text(`unknown tool or arguments: ${name}`), isError: true })
  })
)

const served = Layer.unwrap(Effect.map(McpServer.toHandler(definition), (handle) =>
  HttpServerTransport.layer(handle.handler, {
    port: 0,
    eras: "both"
  })))
const announced = Layer.effectDiscard(Effect.gen(function*() {
  const transport = yield* HttpServerTransport.HttpServerTransport
  yield* Effect.sync(() => announce(Option.getOrElse(transport.url, () => "unknown")))
}))
NodeRuntime.runMain(Layer.launch(Layer.provideMerge(announced, served)))
