/**
 * Sessionless POSTs of the handshake era (`mode: "stateless"`) are served
 * each on its own: `McpServer` keeps no record for them (every such client
 * would share it), and a request to the client fails at once, since no
 * answer can come back without a session. Real loopback server, raw HTTP.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, type Scope } from "effect"
import { RpcError } from "../../../src/McpError.ts"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import type { Handler, HandlerContext } from "../../../src/server/Handler.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import { post } from "./helpers.ts"

const HEADERS = { "mcp-protocol-version": "2025-11-25" }

/** A failure the client can read: the error's tag and message travel as a JSON-RPC error. */
const asRpcError = (e: { readonly _tag: string; readonly message: string }) =>
  new RpcError({ code: -32000, rpcMessage: e.message, data: { tag: e._tag } })

const server = McpServer.make({
  serverInfo: { name: "sessionless", version: "1.0.0" },
  capabilities: { tools: {} },
  // Would fire if an ask were sent and waited for.
  clientRequestTimeout: "200 millis"
}).pipe(
  McpServer.method("tools/call", {}, (params, ctx) => {
    const p = params as { name: string }
    switch (p.name) {
      case "whoami":
        return Effect.succeed({
          content: [{ type: "text", text: JSON.stringify({ clientInfo: ctx.session.clientInfo, capabilities: ctx.session.clientCapabilities }) }]
        })
      case "ask":
        return ctx.elicit({ message: "name?", requestedSchema: { type: "object", properties: {} } }).pipe(
          Effect.mapError(asRpcError),
          Effect.as({ content: [] })
        )
      case "ask-raw":
        return ctx.request("roots/list", {}).pipe(Effect.mapError(asRpcError), Effect.as({ content: [] }))
      default:
        return Effect.succeed({ content: [] })
    }
  })
)

const serveMcp = (
  options: HttpServerTransport.Options = {}
): Effect.Effect<{ url: string; handle: McpServer.ServerHandle<never> }, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(server)
    const context = yield* Layer.build(
      HttpServerTransport.layer(handle.handler, { port: 0, mode: "stateless", ...options })
    )
    return { url: Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url), handle }
  })

const initialize = (name: string, capabilities: Record<string, unknown>) => ({
  jsonrpc: "2.0",
  id: `init-${name}`,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities, clientInfo: { name, version: "1.0.0" } }
})

const postJson = async (url: string, body: unknown): Promise<any> => {
  const res = await post(url, body, HEADERS)
  const text = await res.text()
  return text === "" ? undefined : JSON.parse(text)
}

const callTool = (url: string, id: string, name: string) =>
  postJson(url, { jsonrpc: "2.0", id, method: "tools/call", params: { name } })

describe("HTTP sessionless POSTs keep no client record", () => {
  it.live("two sessionless clients never see each other's initialize", () =>
    Effect.scoped(Effect.gen(function*() {
      const { url, handle } = yield* serveMcp()
      const seen = yield* Effect.promise(async () => {
        // Interleaved as two clients racing on one endpoint would be.
        await Promise.all([
          postJson(url, initialize("client-a", { roots: {} })),
          postJson(url, initialize("client-b", { elicitation: {} }))
        ])
        await postJson(url, { jsonrpc: "2.0", method: "notifications/initialized" })
        await postJson(url, { jsonrpc: "2.0", method: "notifications/initialized" })
        const [a, b] = await Promise.all([callTool(url, "a", "whoami"), callTool(url, "b", "whoami")])
        return [a, b].map((reply) => JSON.parse(reply.result.content[0].text))
      })
      // Neither knows which client it serves: no record was kept for either.
      for (const s of seen) {
        expect(s.clientInfo.name).not.toBe("client-a")
        expect(s.clientInfo.name).not.toBe("client-b")
        expect(s.capabilities).toEqual({})
      }
      expect(yield* handle.sessions).toEqual([])
    })))

  it.live("initialize is answered as before, and a later request needs no handshake", () =>
    Effect.scoped(Effect.gen(function*() {
      const { url } = yield* serveMcp()
      const [init, call] = yield* Effect.promise(async () => [
        await postJson(url, initialize("client-a", {})),
        // No notifications/initialized: there is no session to finish.
        await callTool(url, "c", "whoami")
      ])
      expect(init.result.serverInfo).toEqual({ name: "sessionless", version: "1.0.0" })
      expect(init.result.protocolVersion).toBe("2025-11-25")
      expect(JSON.parse(call.result.content[0].text).clientInfo.name).toBe("unknown")
    })))

  it.live("ctx.elicit fails at once with ClientRequestUnavailable, even for a client that declared elicitation", () =>
    Effect.scoped(Effect.gen(function*() {
      const { url } = yield* serveMcp()
      const reply = yield* Effect.promise(async () => {
        await postJson(url, initialize("asker", { elicitation: {} }))
        await postJson(url, { jsonrpc: "2.0", method: "notifications/initialized" })
        return callTool(url, "e", "ask")
      })
      expect(reply.error.data.tag).toBe("ClientRequestUnavailable")
      expect(reply.error.message).toContain("elicitation/create")
      expect(reply.error.message).toContain("without a session")
    })))

  it.live("ctx.request fails at once with ClientRequestUnavailable", () =>
    Effect.scoped(Effect.gen(function*() {
      const { url } = yield* serveMcp()
      const reply = yield* Effect.promise(() => callTool(url, "r", "ask-raw"))
      expect(reply.error.data.tag).toBe("ClientRequestUnavailable")
      expect(reply.error.message).toContain("roots/list")
    })))

  it.live("a plain handler's context is marked ephemeral and its request to the client fails at once", () =>
    Effect.scoped(Effect.gen(function*() {
      const seen: Array<HandlerContext> = []
      const handler: Handler = (message, hctx) => {
        if (!("id" in message)) return Effect.succeed(null)
        seen.push(hctx)
        if (message.method === "initialize") {
          return Effect.succeed(JsonRpc.success(message.id, {
            protocolVersion: "2025-11-25",
            capabilities: {},
            serverInfo: { name: "plain", version: "1.0.0" }
          }))
        }
        return hctx.request("roots/list", {}, { timeout: 200 }).pipe(
          Effect.match({
            onFailure: (e) => JsonRpc.success(message.id, { tag: e._tag }),
            onSuccess: () => JsonRpc.success(message.id, { tag: "answered" })
          })
        )
      }
      const stateless = yield* Layer.build(HttpServerTransport.layer(handler, { port: 0, mode: "stateless" }))
      const sessionlessUrl = Option.getOrThrow(Context.get(stateless, HttpServerTransport.HttpServerTransport).url)
      const reply = yield* Effect.promise(() => postJson(sessionlessUrl, { jsonrpc: "2.0", id: 1, method: "x" }))
      expect(reply.result.tag).toBe("ClientRequestUnavailable")
      expect(seen[0].ephemeral).toBe(true)

      // A stateful session is a connection: its context is not marked.
      const stateful = yield* Layer.build(HttpServerTransport.layer(handler, { port: 0 }))
      const statefulUrl = Option.getOrThrow(Context.get(stateful, HttpServerTransport.HttpServerTransport).url)
      yield* Effect.promise(() => post(statefulUrl, initialize("s", {}), HEADERS).then((r) => r.text()))
      expect(seen[1].ephemeral).toBeUndefined()
    })))
})
