/**
 * The bare `Handler` the `ours-handler` and `ours-async` servers run on
 * `StdioServerTransport` (no `McpServer`: no lifecycle checks, no Schema
 * decoding), and how they run it.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as Effect from "effect/Effect"
import type { Handler } from "../../src/server/Handler.ts"
import { loadJsonRpc, loadStdioServerTransport } from "../our-modules.ts"
import { ECHO_RESULT } from "./tools.ts"

const JsonRpc = await loadJsonRpc()
const StdioServerTransport = await loadStdioServerTransport()
const EMPTY = {}

/**
 * `later`: `tools/call` answers one turn later (`Effect.yieldNow` first), as a
 * handler waiting on an Effect hand-off does; `"io"`: from a callback of its
 * own (`setImmediate`), as a handler waiting on I/O (a socket, a file) does.
 */
export const handler = (name: string, options: { readonly later: boolean | "io" }): Handler => {
  const initResult = { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name, version: "1.0.0" } }
  return (message) => {
    if (!("id" in message)) return Effect.succeed(null)
    switch (message.method) {
      case "initialize":
        return Effect.succeed(JsonRpc.success(message.id, initResult))
      case "tools/call": {
        const answer = Effect.succeed(JsonRpc.success(message.id, ECHO_RESULT))
        if (options.later === "io") return Effect.callback((resume) => void setImmediate(() => resume(answer)))
        return options.later ? Effect.andThen(Effect.yieldNow, answer) : answer
      }
      case "ping":
        return Effect.succeed(JsonRpc.success(message.id, EMPTY))
      default:
        return Effect.succeed(JsonRpc.methodNotFound(message.id, message.method))
    }
  }
}

export const serve = (h: Handler) =>
  StdioServerTransport.run(h).pipe(
    Effect.provide([NodeStdio.layer, StdioServerTransport.layerLogger]),
    NodeRuntime.runMain
  )
