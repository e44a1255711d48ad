/**
 * What McpServer (lifecycle, Router, Schema-decoded params) costs per
 * request, without I/O: the bench server's `tools/call` handler called in a
 * loop from one fiber, against a bare handler returning the same reply.
 *
 *   npx node bench/profile/server-layer.ts [calls=200000] [rounds=3]
 */
import { Effect, Schema } from "effect"
import * as JsonRpc from "../../src/JsonRpc.ts"
import type { Handler, HandlerContext } from "../../src/server/Handler.ts"
import * as McpServer from "../../src/server/McpServer.ts"

const calls = Number(process.argv[2] ?? 200_000)
const rounds = Number(process.argv[3] ?? 3)
const ECHO_RESULT = { content: [{ type: "text", text: "ok" }] }
const CallParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})

const ctx: HandlerContext = {
  sessionId: undefined,
  requestId: undefined,
  notify: () => Effect.void,
  request: () => Effect.die("no client")
}
const bare: Handler = (message) =>
  Effect.succeed("id" in message ? JsonRpc.success(message.id, ECHO_RESULT) : null)

const program = Effect.gen(function*() {
  const server = McpServer.make({ serverInfo: { name: "layer", version: "1" } }).pipe(
    McpServer.method("tools/call", { params: CallParams }, () => Effect.succeed(ECHO_RESULT))
  )
  const { handler } = yield* McpServer.toHandler(server)
  yield* handler({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "c", version: "1" } } }, ctx)
  yield* handler({ jsonrpc: "2.0", method: "notifications/initialized" }, ctx)
  const measure = (h: Handler) =>
    Effect.gen(function*() {
      const t0 = process.cpuUsage()
      for (let i = 1; i <= calls; i++) {
        const reply = yield* h({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } }, ctx)
        if (reply === null) throw new Error("no reply")
      }
      const t = process.cpuUsage(t0)
      return (t.user + t.system) / calls
    })
  for (let r = 0; r < rounds; r++) {
    const b = yield* measure(bare)
    const m = yield* measure(handler)
    console.log(`bare ${b.toFixed(2)} µs/request, McpServer ${m.toFixed(2)} µs/request, layer +${(m - b).toFixed(2)} µs`)
  }
})
Effect.runPromise(Effect.scoped(program))
