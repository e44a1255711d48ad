/**
 * McpManager quick start: two stdio servers from an `mcpServers` document,
 * aggregated tools, routed calls, status streams, a disk tool cache.
 * Run: npx node scratchpad/mcp-manager-example.ts
 */
import { NodeHttpClient, NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Effect, Schedule, Stream } from "effect"
import * as McpManager from "../src/client/McpManager.ts"

const config = {
  mcpServers: {
    everything: {
      command: process.execPath,
      args: ["node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]
    },
    fixture: { command: process.execPath, args: ["test/fixtures/router-stdio-server.ts"] },
    broken: { command: "/no/such/server" }
  }
}

const program = Effect.gen(function*() {
  const manager = yield* McpManager.make({
    config,
    toolCache: yield* McpManager.ToolCache.file("/tmp/effect-mcp-example/tools.json"),
    reconnectSchedule: Schedule.exponential("500 millis").pipe(Schedule.upTo({ times: 3 }))
  })
  // Status changes of one server, in the background.
  yield* manager.status("broken").pipe(
    Stream.runForEach((s) => Console.log(`broken: ${s._tag}${"lastError" in s && s.lastError ? ` (${s.lastError._tag})` : ""}`)),
    Effect.forkScoped
  )
  const tools = yield* manager.tools
  yield* Console.log(tools.map((t) => t.name).slice(0, 5), `… ${tools.length} tools`)
  const result = yield* manager.callTool("everything__echo", { message: "routed" })
  yield* Console.log(result.content)
  yield* Console.log(yield* Effect.map(manager.statuses, (s) => Object.fromEntries(Object.entries(s).map(([k, v]) => [k, v._tag]))))
})

// The default transport factory (fromConfig) spawns processes and speaks HTTP.
program.pipe(Effect.scoped, Effect.provide([NodeServices.layer, NodeHttpClient.layerUndici]), NodeRuntime.runMain)
