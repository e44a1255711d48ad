/**
 * Error codes the stateless era (2026-07-28) retired: a handler written once
 * for both eras answers an unknown resource with -32002 (Resource not found,
 * the code of 2025-11-25 and before); a request of the stateless era must get
 * -32602 instead (the revision says -32002 MUST NOT be emitted), with the
 * handler's message and data kept. The handshake era keeps -32002.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import { RpcError } from "../../src/McpError.ts"
import * as RequestMeta from "../../src/RequestMeta.ts"
import * as McpServer from "../../src/server/McpServer.ts"

const server = McpServer.make({ serverInfo: { name: "codes", version: "1.0.0" }, stateless: true }).pipe(
  McpServer.method("resources/read", {}, (params) =>
    Effect.fail(
      new RpcError({
        code: -32002,
        rpcMessage: "Resource not found",
        data: { uri: (params as { uri: string }).uri }
      })
    )),
  McpServer.method("tools/call", {}, () => Effect.fail(new RpcError({ code: -32001, rpcMessage: "slow backend" })))
)

const meta = RequestMeta.requestMeta({ protocolVersion: "2026-07-28", clientCapabilities: {} })

/** The raw error a request gets, its code, message and data as sent. */
const errorOf = (request: Effect.Effect<unknown, unknown>) =>
  Effect.map(Effect.flip(request), (e) => {
    const { code, data, rpcMessage } = e as RpcError
    return { code, message: rpcMessage, data }
  })

describe("McpServer: error codes the stateless era retired", () => {
  it.effect("-32002 from a handler goes out as -32602 in 2026-07-28 (message and data kept), as -32002 in 2025-11-25", () =>
    Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(server)
      const modern = yield* InMemoryTransport.makePair(handle.handler)
      expect(yield* errorOf(modern.client.request("resources/read", { uri: "test://missing", _meta: meta }))).toEqual({
        code: -32602,
        message: "Resource not found",
        data: { uri: "test://missing" }
      })
      // Other codes pass unchanged.
      expect((yield* errorOf(modern.client.request("tools/call", { name: "x", _meta: meta }))).code).toBe(-32001)

      const legacyHandle = yield* McpServer.toHandler(server)
      const legacy = yield* InMemoryTransport.makePair(legacyHandle.handler)
      yield* legacy.client.request("initialize", {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "t", version: "1" }
      })
      yield* legacy.client.notify("notifications/initialized", {})
      expect(yield* errorOf(legacy.client.request("resources/read", { uri: "test://missing" }))).toEqual({
        code: -32002,
        message: "Resource not found",
        data: { uri: "test://missing" }
      })
    }))
})
