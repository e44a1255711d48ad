/**
 * The bridge under benchmark, in its own process as users run it: the raw
 * responder (a stdio server) exposed over Streamable HTTP on 127.0.0.1:0.
 * Prints `{"url":…}` once listening; runs until SIGTERM/SIGINT.
 *
 *   node bench/bridge/server.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { loadBridge, loadHttpServerTransport, loadNodeSpawner, loadStdioClientTransport } from "../our-modules.ts"

const Bridge = await loadBridge()
const StdioClientTransport = await loadStdioClientTransport()
const HttpServerTransport = await loadHttpServerTransport()
const NodeSpawner = await loadNodeSpawner()

const responder = new URL("../raw-responder.ts", import.meta.url).pathname

const announce = Layer.effectDiscard(Effect.gen(function*() {
  const transport = yield* HttpServerTransport.HttpServerTransport
  const url = Option.getOrThrow(transport.url)
  yield* Effect.sync(() => void process.stdout.write(JSON.stringify({ url }) + "\n"))
}))

const bridge = Bridge.layerHttp(
  { connect: StdioClientTransport.make({ command: process.execPath, args: [responder], stderr: { log: false } }) },
  { port: 0, eventsAndHealth: false, legacySse: false }
)

NodeRuntime.runMain(Layer.launch(announce.pipe(Layer.provideMerge(bridge), Layer.provide(NodeSpawner.layer))))
