/**
 * The HTTP server transport with a bare `Handler` (no `McpServer`): `echo`
 * answered at once in both eras, the same JSON work as server-ours.ts without
 * the method table, Schema params or lifecycle. The rung between one
 * `effect/http` route and `McpServer` when measuring the server's cost per
 * request (bench/profile/http-server-eras.ts).
 *
 *   node bench/stateless-server/server-bare.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Handler } from "../../src/server/Handler.ts"
import { loadHttpServerTransport, loadJsonRpc } from "../our-modules.ts"
import { announce, echoCallResult } from "./control.ts"

const HttpServerTransport = await loadHttpServerTransport()
const JsonRpc = await loadJsonRpc()
const INIT = { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "bench-bare", version: "1.0.0" } }

const answer: Handler = (message) => {
  if (!("id" in message)) return Effect.succeed(null)
  switch (message.method) {
    case "initialize":
      return Effect.succeed(JsonRpc.success(message.id, INIT))
    case "tools/call":
      return Effect.succeed(JsonRpc.success(message.id, echoCallResult(message.params)))
    default:
      return Effect.succeed(JsonRpc.methodNotFound(message.id, message.method))
  }
}
// Serves 2026-07-28 requests on their own, as McpServer's handler does.
const handler: Handler = Object.assign(answer, { stateless: true })

const served = HttpServerTransport.layer(handler, { port: 0, eras: "both" })
const announced = Layer.effectDiscard(Effect.gen(function*() {
  const transport = yield* HttpServerTransport.HttpServerTransport
  yield* Effect.sync(() => announce(Option.getOrElse(transport.url, () => "unknown")))
}))
NodeRuntime.runMain(Layer.launch(Layer.provideMerge(announced, served)))
