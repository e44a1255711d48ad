/**
 * Spawns the reference "everything" MCP server over stdio, runs the handshake
 * (initialize → notifications/initialized), then ping and tools/list, prints
 * the results and exits; closing the scope ends the server process.
 *
 * Run: npx node scratchpad/stdio-example.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { fileURLToPath } from "node:url"
import * as NodeSpawner from "../src/client/NodeSpawner.ts"
import * as StdioClientTransport from "../src/client/StdioClientTransport.ts"

const everything = fileURLToPath(
  new URL("../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url)
)

const program = Effect.gen(function*() {
  const transport = yield* StdioClientTransport.make({
    command: process.execPath,
    args: [everything, "stdio"],
    timeout: "10 seconds"
  })
  yield* Console.log(`spawned server-everything, pid ${transport.pid}`)

  const init = (yield* transport.request("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "effect-mcp-transport example", version: "0.1.0" }
  })) as { protocolVersion: string; serverInfo: { name: string; version: string } }
  yield* Console.log(`initialize → ${init.serverInfo.name} ${init.serverInfo.version}, protocol ${init.protocolVersion}`)
  yield* transport.notify("notifications/initialized")

  const pong = yield* transport.request("ping")
  yield* Console.log(`ping → ${JSON.stringify(pong)}`)

  const { tools } = (yield* transport.request("tools/list")) as { tools: Array<{ name: string }> }
  yield* Console.log(`tools/list → ${tools.length} tools: ${tools.map((t) => t.name).join(", ")}`)

  const tail = yield* transport.stderrTail
  yield* Console.log(`server stderr so far: ${tail.length === 0 ? "(nothing)" : tail.join(" | ")}`)
}).pipe(
  Effect.scoped, // ends stdin, waits for the server to exit, then SIGTERM/SIGKILL to its process group
  Effect.provide(NodeSpawner.layer)
)

NodeRuntime.runMain(program)
