/**
 * This project's server for the HTTP and large-message workloads: McpServer
 * with one tool, on HttpServerTransport (stateful sessions; `--mode json` is
 * the transport's `auto` response mode, which answers with JSON when the
 * handler sends nothing on the way; `--mode sse` always streams) or on
 * StdioServerTransport. `--api` picks how the tool is defined (see
 * `bench/servers/echo-apis.ts`; default `generic`). With `--progress n` (or
 * BENCH_PROGRESS), the generic `tools/call` reports n steps of progress
 * through its request context before it answers (sent when the call carries
 * a progress token). It serves both protocol eras.
 *
 *   node bench/http/server-ours.ts --transport http|stdio [--mode json|sse] [--bytes N] [--api generic|typed|tool] [--progress N]
 *
 * Over HTTP it prints `listening <url>` and serves until SIGTERM/SIGINT.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { loadHttpServerTransport, loadMcpServer, loadStdioServerTransport } from "../our-modules.ts"
import { apiFlag, echoServer } from "../servers/echo-apis.ts"
import { announce, flag, modeFlag, progressPerCall, reportPeakRssOnExit, toolResult } from "./common.ts"

// Each transport's modules load only when it is the one served, as in a user's server.
const McpServer = await loadMcpServer()

reportPeakRssOnExit()
const result = toolResult(Number(flag("bytes", "0")))
const LIMIT = 64 * 1024 * 1024

const progress = progressPerCall()
const definition = progress > 0 && apiFlag() === "generic"
  ? McpServer.make({ serverInfo: { name: "bench-ours", version: "1.0.0" } }).pipe(
    McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [{ name: "echo", inputSchema: { type: "object" } }] })),
    McpServer.method("tools/call", {}, (_params, context) =>
      Effect.andThen(
        Effect.forEach(Array.from({ length: progress }, (_, i) => i + 1), (step) => context.progress(step, { total: progress }), {
          discard: true
        }),
        Effect.succeed(result)
      ))
  )
  : await echoServer(apiFlag(), "bench-ours", result)

if (flag("transport", "http") === "stdio") {
  const StdioServerTransport = await loadStdioServerTransport()
  Effect.scoped(Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(definition)
    const server = yield* StdioServerTransport.make(handle.handler, { maxMessageBytes: LIMIT })
    return yield* server.awaitDone
  })).pipe(Effect.provide([NodeStdio.layer, StdioServerTransport.layerLogger]), NodeRuntime.runMain)
} else {
  const HttpServerTransport = await loadHttpServerTransport()
  const served = Layer.unwrap(Effect.map(McpServer.toHandler(definition), (handle) =>
    HttpServerTransport.layer(handle.handler, {
      port: 0,
      responseMode: modeFlag() === "sse" ? "sse" : "auto"
    })))
  const announced = Layer.effectDiscard(Effect.gen(function*() {
    const transport = yield* HttpServerTransport.HttpServerTransport
    yield* Effect.sync(() => announce(Option.getOrElse(transport.url, () => "unknown")))
  }))
  NodeRuntime.runMain(Layer.launch(Layer.provideMerge(announced, served)))
}
