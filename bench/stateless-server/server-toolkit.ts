/**
 * `McpServer` with `stateless: true` on `HttpServerTransport` (eras `both`)
 * serving `echo {text}` from an `effect/ai` `Toolkit` (`Tool.fromToolkit`),
 * its handler given by the toolkit's own layer: what a toolkit-served tool
 * call costs beside server-ours.ts's hand-written method
 * (bench/profile/http-server-era-drive.ts, era `toolkit`).
 *
 *   node bench/stateless-server/server-toolkit.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as AiTool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import { loadHttpServerTransport, loadMcpServer, loadTool } from "../our-modules.ts"
import { announce, echoText } from "./control.ts"

const McpServer = await loadMcpServer()
const Tool = await loadTool()
const HttpServerTransport = await loadHttpServerTransport()

const tools = Toolkit.make(
  AiTool.make("echo", {
    parameters: Schema.Struct({ text: Schema.String }),
    success: Schema.String
  })
)
const handlers = tools.toLayer({ echo: ({ text }) => Effect.succeed(echoText(text)) })

const definition = McpServer.make({
  serverInfo: { name: "bench-toolkit", version: "1.0.0" },
  stateless: true
}).pipe(Tool.fromToolkit(tools))

const served = Layer.unwrap(Effect.map(McpServer.toHandler(definition), (handle) =>
  HttpServerTransport.layer(handle.handler, {
    port: 0,
    eras: "both"
  }))).pipe(Layer.provide(handlers))
const announced = Layer.effectDiscard(Effect.gen(function*() {
  const transport = yield* HttpServerTransport.HttpServerTransport
  yield* Effect.sync(() => announce(Option.getOrElse(transport.url, () => "unknown")))
}))
NodeRuntime.runMain(Layer.launch(Layer.provideMerge(announced, served)))
