/**
 * `HandlerContext.observed`: the HTTP server transport runs a stateless
 * request's handler, and a session's, with its own services alone, so it
 * tells the handler whether metrics or spans can record the request. False
 * without either; true with the transport's metrics or a tracer in its
 * services; and an `McpServer` behind it still records spans when it is true.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Tracer } from "effect"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import { recordingTracer } from "../../fixtures/RecordingTracer.ts"
import { jsonHeaders, openSession, post, serve } from "./helpers.ts"

const STATELESS_META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {}
}
const STATELESS_HEADERS = { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "echo" }

/** A stateless `tools/call`, then one in a 2025-11-25 session opened for it. */
const callBothEras = async (url: string) => {
  await post(url, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", _meta: STATELESS_META } }, STATELESS_HEADERS)
  const session = await openSession(url)
  await post(url, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo" } }, {
    ...jsonHeaders,
    "mcp-protocol-version": "2025-11-25",
    "mcp-session-id": session
  })
}

/** A bare handler that keeps what each request's context said. */
const recording = (seen: Array<boolean | undefined>): Handler =>
  Object.assign((message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification, context: Parameters<Handler>[1]) => {
    if (!("id" in message)) return Effect.succeed(null)
    if (message.method === "initialize") {
      return Effect.succeed(JsonRpc.success(message.id, {
        protocolVersion: "2025-11-25",
        capabilities: { tools: {} },
        serverInfo: { name: "observed", version: "1" }
      }))
    }
    seen.push(context.observed)
    return Effect.succeed(JsonRpc.success(message.id, { content: [] }))
  }, { stateless: true })

/** A stateless request and a session's request to a transport built with `options`, under `provide`. */
const observedFor = (
  options: HttpServerTransport.Options,
  provide: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> = (effect) => effect
) =>
  Effect.gen(function*() {
    const seen: Array<boolean | undefined> = []
    const server = yield* provide(serve(options, () => recording(seen)))
    yield* Effect.promise(() => callBothEras(server.url))
    return seen
  }).pipe(Effect.scoped)

describe("HandlerContext.observed on the HTTP server transport", () => {
  it.live("false with neither metrics nor a tracer, for a stateless request and a session's", () =>
    Effect.gen(function*() {
      expect(yield* observedFor({})).toEqual([false, false])
    }))

  it.live("true with the transport's metrics on", () =>
    Effect.gen(function*() {
      expect(yield* observedFor({ metrics: true })).toEqual([true, true])
    }))

  it.live("true with a tracer in the transport's services", () =>
    Effect.gen(function*() {
      const { tracer } = recordingTracer()
      expect(yield* observedFor({}, Effect.provideService(Tracer.Tracer, tracer))).toEqual([true, true])
    }))

  it.live("an McpServer behind a transport with a tracer still serves every request in a span, with its revision", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      const definition = McpServer.make({ serverInfo: { name: "traced", version: "1" }, capabilities: { tools: {} } }).pipe(
        McpServer.method("tools/call", {}, () => Effect.succeed({ content: [] }))
      )
      const handle = yield* McpServer.toHandler(definition)
      const server = yield* serve({}, () => handle.handler).pipe(Effect.provideService(Tracer.Tracer, tracer))
      yield* Effect.promise(() => callBothEras(server.url))
      const calls = spans.filter((span) => span.name === "tools/call echo")
      expect(calls.map((span) => span.attributes.get("mcp.protocol.version"))).toEqual(["2026-07-28", "2025-11-25"])
    }).pipe(Effect.scoped))
})

