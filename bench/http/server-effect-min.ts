/**
 * The floor of `effect/http` on the server side: the raw server's behaviour
 * (see server-raw.ts) written as one effect/http route on NodeHttpServer,
 * with no MCP logic. What our HTTP server transport costs above this is ours.
 *
 *   node bench/http/server-effect-min.ts [--mode json|sse] [--bytes N]
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { flag, modeFlag, PROTOCOL_VERSION, reportPeakRssOnExit, toolResult } from "./common.ts"
import { runRoutes } from "./effect-route.ts"

reportPeakRssOnExit()
const sse = modeFlag() === "sse"
const TOOL_RESULT = toolResult(Number(flag("bytes", "0")))
const INIT_RESULT = { protocolVersion: PROTOCOL_VERSION, capabilities: { tools: {} }, serverInfo: { name: "effect-min", version: "1.0.0" } }
const encoder = new TextEncoder()
let sessions = 0

const handle = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (request.method === "DELETE") return HttpServerResponse.empty({ status: 204 })
  const body = yield* Effect.orDie(request.text)
  const msg = JSON.parse(body) as { id?: number | string; method?: string }
  if (msg.id === undefined || msg.method === undefined) return HttpServerResponse.empty({ status: 202 })
  const result = msg.method === "tools/call" ? TOOL_RESULT : msg.method === "initialize" ? INIT_RESULT : {}
  const json = JSON.stringify({ jsonrpc: "2.0", id: msg.id, result })
  const headers: Record<string, string> = msg.method === "initialize" ? { "mcp-session-id": `min-${++sessions}` } : {}
  return sse
    ? HttpServerResponse.stream(Stream.make(encoder.encode(`event: message\ndata: ${json}\n\n`)), {
      contentType: "text/event-stream",
      headers
    })
    : HttpServerResponse.text(json, { contentType: "application/json", headers })
})

const routes = HttpRouter.addAll([
  HttpRouter.route("POST", "/mcp", handle),
  HttpRouter.route("DELETE", "/mcp", handle)
])
runRoutes(routes)
