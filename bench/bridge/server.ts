/**
 * The bridge under benchmark, in its own process as users run it: the raw
 * responder (a stdio server) exposed over Streamable HTTP on 127.0.0.1:0.
 * Prints `{"url":…}` once listening; runs until SIGTERM/SIGINT.
 *
 *   node bench/bridge/server.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Layer, Option } from "effect"
import * as Bridge from "../../src/bridge/Bridge.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"

const responder = new URL("../raw-responder.ts", import.meta.url).pathname

const announce = Layer.effectDiscard(Effect.gen(function*() {
  const transport = yield* HttpServerTransport.HttpServerTransport
  const url = Option.getOrThrow(transport.url)
  yield* Effect.sync(() => void process.stdout.write(JSON.stringify({ url }) + "\n"))
}))

const bridge = Bridge.layerHttp(
  { connect: StdioClientTransport.make({ command: process.execPath, args: [responder], stderr: { log: false } }) },
  { port: 0, seedSurface: false, legacySse: false }
)

NodeRuntime.runMain(Layer.launch(announce.pipe(Layer.provideMerge(bridge), Layer.provide(NodeServices.layer))))
