// One tool call as a whole process, on subpath imports: spawn the server over stdio, connect, call `add`, close.
//   node one-call-ours.js <auto|2025-11-25|2026-07-28> <command> [args...]
// Prints the result, then `teardown-ms <ms>` on stderr: the scope's close, from its start until it returned.
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as McpClient from "effect-mcp-transport/client/McpClient"
import * as NodeSpawner from "effect-mcp-transport/client/NodeSpawner"
import * as StdioClientTransport from "effect-mcp-transport/client/StdioClientTransport"

const [protocol = "auto", command = "npx", ...args] = process.argv.slice(2)

const program = Effect.gen(function*() {
  const scope = yield* Scope.make()
  const client = yield* McpClient.connect(StdioClientTransport.make({ command, args }), {
    clientInfo: { name: "one-call", version: "1.0.0" },
    protocol
  }).pipe(Scope.provide(scope))
  const result = yield* client.callTool({ name: "add", arguments: { a: 2, b: 3 } })
  console.log(JSON.stringify(result.structuredContent))
  const t0 = performance.now()
  yield* Scope.close(scope, Exit.void)
  process.stderr.write(`teardown-ms ${performance.now() - t0}\n`)
})

program.pipe(Effect.provide(NodeSpawner.layer), NodeRuntime.runMain)
