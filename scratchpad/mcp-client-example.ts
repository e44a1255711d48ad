/**
 * McpClient quick start: the reference "everything" server over stdio.
 * Run: npx node scratchpad/mcp-client-example.ts
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Effect, Stream } from "effect"
import * as McpClient from "../src/client/McpClient.ts"
import * as StdioClientTransport from "../src/client/StdioClientTransport.ts"

const program = Effect.gen(function*() {
  // Spawns the server, runs the handshake; the process dies with the scope.
  const client = yield* McpClient.connect(
    StdioClientTransport.make({
      command: process.execPath,
      args: ["node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"],
      stderr: { log: false }
    }),
    {
      clientInfo: { name: "quick-start", version: "1.0.0" },
      // Answering sampling requests advertises the sampling capability.
      handlers: {
        createMessage: () =>
          Effect.succeed({ role: "assistant", model: "none", content: { type: "text", text: "no LLM here" } })
      }
    }
  )
  yield* Console.log(`${client.serverInfo.name} speaks ${client.protocolVersion}`)

  const tools = yield* client.listAllTools()
  yield* Console.log(`${tools.length} tools`)

  const echo = yield* client.callTool({ name: "echo", arguments: { message: "hello" } })
  yield* Console.log(echo.content)

  // Progress as a stream: each notification restarts the idle timeout.
  yield* client.callToolStream(
    { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 4 } },
    { timeout: "5 seconds", maxTotalTimeout: "1 minute" }
  ).pipe(
    Stream.runForEach((event) =>
      event._tag === "Progress"
        ? Console.log(`progress ${event.progress.progress}/${event.progress.total}`)
        : Console.log("done", event.result.content)
    )
  )
})

program.pipe(Effect.scoped, Effect.provide(NodeServices.layer), NodeRuntime.runMain)
