import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as NodeSpawner from "../../src/client/NodeSpawner.ts"
import { UserDenied } from "../../src/AuthError.ts"
import * as McpErrorGroup from "../../src/McpErrorGroup.ts"
import { RequestTimeout, RpcError, TransportClosed } from "../../src/McpError.ts"
import * as McpServer from "../../src/server/McpServer.ts"

/** A server whose `tools/call` never answers and whose `prompts/get` answers -32602. */
const server = McpServer.make({ serverInfo: { name: "groups", version: "1" } }).pipe(
  McpServer.method("tools/call", {}, () => Effect.never),
  McpServer.method("prompts/get", {}, () => Effect.fail(new RpcError({ code: -32602, rpcMessage: "Unknown prompt" })))
)

const connect = Effect.gen(function*() {
  const handle = yield* McpServer.toHandler(server)
  return yield* McpClient.connect(InMemoryTransport.make(handle.handler), { protocol: "2025-11-25" })
})

// The timeouts run on the real clock (`it.live`): the calls they end never get an answer.
describe("error groups", () => {
  it.live("a timeout is an McpTransportError whose reason is the RequestTimeout; the message is the reason's", () =>
    Effect.gen(function*() {
      const client = yield* connect
      const error = yield* Effect.flip(client.callTool({ name: "slow" }, { timeout: "50 millis" }))
      expect(error).toBeInstanceOf(McpErrorGroup.McpTransportError)
      expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "RequestTimeout", method: "tools/call" } })
      expect(error.reason).toBeInstanceOf(RequestTimeout)
      expect(error.message).toBe(error.reason.message)
      expect(error.message).toMatch(/request timeout after 50ms \(tools\/call, id \d+\)$/)
    }).pipe(Effect.scoped))

  it.live("Effect.catchTag handles the whole group", () =>
    Effect.gen(function*() {
      const client = yield* connect
      const handled = yield* client.callTool({ name: "slow" }, { timeout: "50 millis" }).pipe(
        Effect.map(() => "result"),
        Effect.catchTag("McpTransportError", (e) => Effect.succeed(`transport: ${e.reason._tag}`))
      )
      expect(handled).toBe("transport: RequestTimeout")
    }).pipe(Effect.scoped))

  it.live("Effect.catchReason handles one reason of a group and leaves the others", () =>
    Effect.gen(function*() {
      const client = yield* connect
      const timedOut = yield* client.callTool({ name: "slow" }, { timeout: "50 millis" }).pipe(
        Effect.map(() => "result"),
        Effect.catchReason("McpTransportError", "RequestTimeout", (reason, group) =>
          Effect.succeed(`${group._tag}/${reason._tag} after ${reason.timeoutMs}ms`))
      )
      expect(timedOut).toBe("McpTransportError/RequestTimeout after 50ms")

      // A reason of another group passes by the handler untouched.
      const other = yield* client.getPrompt({ name: "nope" }).pipe(
        Effect.catchReason("McpTransportError", "RequestTimeout", () => Effect.die("not a timeout")),
        Effect.flip
      )
      expect(other).toMatchObject({ _tag: "McpServerError", reason: { _tag: "RpcError", code: -32602 } })
      expect(other.message).toBe("MCP error -32602: Unknown prompt")
    }).pipe(Effect.scoped))

  it.effect("Effect.unwrapReason puts a group's reasons back in the error channel", () =>
    Effect.gen(function*() {
      const client = yield* connect
      const error = yield* client.getPrompt({ name: "nope" }).pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
      expect(error).toBeInstanceOf(RpcError)
    }).pipe(Effect.scoped))

  it.effect("a capability the server did not declare is an McpProtocolError", () =>
    Effect.gen(function*() {
      const client = yield* connect
      const error = yield* Effect.flip(client.listResources())
      expect(error).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "CapabilityNotSupported", capability: "resources" } })
    }).pipe(Effect.scoped))

  it.effect("connect groups the transport's own failures too: a process that does not start", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(McpClient.connect(StdioClientTransport.make({ command: "/no/such/server" })))
      expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "SpawnError", command: "/no/such/server" } })
    }).pipe(Effect.scoped, Effect.provide(NodeSpawner.layer)))

  it("group puts each flat error in its group and leaves anything else as it is", () => {
    const closed = new TransportClosed({ reason: "scope closed" })
    expect(McpErrorGroup.group(closed)).toEqual(new McpErrorGroup.McpTransportError({ reason: closed }))
    const denied = new UserDenied({ issuer: "https://as.example" })
    expect(McpErrorGroup.group(denied)._tag).toBe("McpAuthError")
    const other = { _tag: "UnknownTool", message: "x" }
    expect(McpErrorGroup.group(other)).toBe(other)
    expect(McpErrorGroup.reasonOf(McpErrorGroup.group(closed))).toBe(closed)
    expect(McpErrorGroup.reasonOf(other)).toBe(other)
  })
})
