/**
 * The floor of an `effect/http` client on the MCP exchange: one POST of a
 * JSON-RPC request through `HttpClient` (undici layer, the one the HTTP
 * benchmark gives our transport), its body read as text and parsed, nothing
 * else. Prints client CPU µs per call and calls/s, for comparison with
 * `run-client.ts` against the same server:
 *
 *   npx node bench/http/client-effect-min.ts <url> [concurrency=1] [total=3000] [warmup=300]
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Effect from "effect/Effect"
import * as HttpBody from "effect/http/HttpBody"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import { driveEffect } from "../clients/effect-drive.ts"

const [url = "", concurrencyText = "1", totalText = "3000", warmText = "300"] = process.argv.slice(2)
const encoder = new TextEncoder()
let nextId = 1
let session: string | undefined

const program = Effect.gen(function*() {
  const client = yield* HttpClient.HttpClient
  const post = (message: object) =>
    Effect.flatMap(
      client.execute(HttpClientRequest.post(url, {
        headers: {
          accept: "application/json, text/event-stream",
          ...(session === undefined ? {} : { "mcp-session-id": session })
        },
        body: HttpBody.uint8Array(encoder.encode(JSON.stringify(message)), "application/json")
      })),
      (response) => {
        session ??= response.headers["mcp-session-id"]
        return Effect.map(response.text, (text) => (text.length === 0 ? undefined : JSON.parse(text)))
      }
    )
  yield* post({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "min", version: "1" } } })
  yield* post({ jsonrpc: "2.0", method: "notifications/initialized" })
  const call = Effect.suspend(() =>
    post({ jsonrpc: "2.0", id: nextId++, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } })
  )
  yield* driveEffect(call, Number(warmText), Number(concurrencyText))
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const total = Number(totalText)
  yield* driveEffect(call, total, Number(concurrencyText))
  const ms = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  console.log(JSON.stringify({ rps: total / (ms / 1000), cpuUs: (cpu.user + cpu.system) / total }))
})
Effect.runPromise(Effect.provide(program, NodeHttpClient.layerUndici)).then(() => process.exit(0))
