/**
 * This project's server for the tasks workload: `McpServer` with
 * `stateless: true` on `HttpServerTransport`, the tools `work {ms}` (sleeps
 * `ms`, then answers) and `held` (waits on the driver's latch, see
 * ../stateless-server/control.ts), both `taskSupport: "optional"`: a call
 * that declares the tasks extension runs as a task, any other inline. Tasks
 * suggest polling every `BENCH_TASKS_POLL_MS` ms (set by the driver).
 *
 *   node --expose-gc bench/tasks/server-ours.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { loadHttpServerTransport, loadMcpServer, loadTool } from "../our-modules.ts"
import { announce, HELD_TEXT, hold, installControl } from "../stateless-server/control.ts"
import { POLL_MS, workText } from "./protocol.ts"

const McpServer = await loadMcpServer()
const HttpServerTransport = await loadHttpServerTransport()
const Tool = await loadTool()
installControl()

const definition = McpServer.make({
  serverInfo: { name: "bench-ours", version: "1.0.0" },
  stateless: true,
  tasks: { pollInterval: `${POLL_MS} millis` }
}).pipe(
  Tool.add("work", { taskSupport: "optional", parameters: { ms: Schema.Number } }, ({ ms }) =>
    Effect.as(ms > 0 ? Effect.sleep(ms) : Effect.void, workText(ms))),
  Tool.add("held", { taskSupport: "optional" }, () => Effect.as(Effect.promise(hold), HELD_TEXT))
)

const served = Layer.unwrap(Effect.map(McpServer.toHandler(definition), (handle) =>
  HttpServerTransport.layer(handle.handler, { port: 0 })))
const announced = Layer.effectDiscard(Effect.gen(function*() {
  const transport = yield* HttpServerTransport.HttpServerTransport
  yield* Effect.sync(() => announce(Option.getOrElse(transport.url, () => "unknown")))
}))
NodeRuntime.runMain(Layer.launch(Layer.provideMerge(announced, served)))
