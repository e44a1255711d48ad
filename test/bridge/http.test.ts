/**
 * A stdio server (a real child process) exposed over Streamable HTTP by the
 * bridge, driven over loopback HTTP by our McpClient and by the official
 * SDK's Client: the handshake passes through, tools, progress, logging,
 * server→client requests, cancellation reaching the child, one child per
 * session, the child's death turning into clean errors, and no child left
 * once its session or the bridge ends.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
import { Deferred, Effect, Exit, Fiber, Scope, Stream } from "effect"
import * as Bridge from "../../src/bridge/Bridge.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import { isAlive } from "../fixtures/stdio-helpers.ts"
import { bridgeOverHttp, eventually, rawServer, routerServer, textOf } from "./helpers.ts"

const BOUND = "10 seconds"

const handlers: McpClient.ServerRequestHandlers = {
  createMessage: () =>
    Effect.succeed({ role: "assistant", content: { type: "text", text: "pong" }, model: "test-model" }),
  elicit: () => Effect.succeed({ action: "accept", content: { name: "Ada" } }),
  listRoots: () => Effect.succeed([{ uri: "file:///bridged", name: "bridged" }])
}

/**
 * Our client over Streamable HTTP, in a scope of its own so a test can end
 * the session. Pinned to the handshake era: these tests are about sessions
 * (a dual-era client would be served in the stateless era; see matrix.test.ts).
 */
const connect = (url: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const client = yield* McpClient.connect(
      StreamableHttpClientTransport.make({ url, listen: true }),
      { clientInfo: { name: "bridge-test", version: "1.0.0" }, handlers, protocol: "2025-11-25" }
    ).pipe(Scope.provide(scope))
    return { client, close: Scope.close(scope, Exit.void) }
  })

const cancelledIds = (client: McpClient.McpClientShape) =>
  Effect.map(
    client.callTool({ name: "cancelled" }),
    (r) => (r.structuredContent as { ids: ReadonlyArray<string | number> }).ids
  )

describe("bridge: a stdio server over Streamable HTTP", { timeout: 60_000 }, () => {
  it.live("our McpClient: handshake, tools, progress, logging, list_changed, sampling, elicitation, roots, cancellation", () =>
    Effect.gen(function*() {
      const { bridge, pids, transport, url } = yield* bridgeOverHttp()
      expect(yield* bridge.upstreams).toBe(0)
      const { client, close } = yield* connect(url)

      // initialize went through untouched: the child's identity, the client's capabilities.
      expect(client.serverInfo.name).toBe("router-fixture")
      expect(client.instructions).toBe("A fixture server for tests.")
      expect(client.serverCapabilities.tools).toEqual({ listChanged: true })
      expect(client.protocolVersion).toBe("2025-11-25")
      expect(yield* bridge.upstreams).toBe(1)
      expect(pids.length).toBe(1)
      expect(isAlive(pids[0]!)).toBe(true)

      expect((yield* client.listAllTools()).map((t) => t.name)).toEqual(
        expect.arrayContaining(["echo", "progress", "slow", "sample", "elicit", "roots"])
      )
      expect(textOf(yield* client.callTool({ name: "echo", arguments: { text: "through the bridge" } }))).toBe(
        "through the bridge"
      )
      // A JSON-RPC error from the child comes back unchanged.
      const unknown = yield* Effect.flip(client.callTool({ name: "no-such-tool" }))
      expect(unknown).toMatchObject({ _tag: "McpServerError", reason: { _tag: "RpcError", code: -32602, rpcMessage: "Unknown tool: no-such-tool" } })

      // Progress travels back with the request's own token, all of it, before the result.
      const events = yield* Stream.runCollect(
        client.callToolStream({ name: "progress", arguments: { steps: 3, delayMs: 10 } })
      )
      expect(events.map((e) => (e._tag === "Progress" ? e.progress.progress : textOf(e.result)))).toEqual([
        1,
        2,
        3,
        "done 3"
      ])

      // Notifications that belong to no request reach the session.
      const logged = yield* Stream.take(client.logging, 1).pipe(
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      const changed = yield* Stream.take(client.listChanged, 1).pipe(
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      yield* client.callTool({ name: "log", arguments: { level: "warning", text: "careful" } })
      yield* client.callTool({ name: "list-changed" })
      expect((yield* Fiber.join(logged).pipe(Effect.timeout(BOUND)))[0]).toMatchObject({
        level: "warning",
        data: "careful"
      })
      expect((yield* Fiber.join(changed).pipe(Effect.timeout(BOUND)))[0]!._tag).toBe("ToolListChanged")

      // The child's requests to the client round-trip through the bridge.
      expect(textOf(yield* client.callTool({ name: "sample", arguments: { prompt: "ping" } }))).toBe("test-model: pong")
      const elicited = yield* client.callTool({ name: "elicit" })
      expect(elicited.structuredContent).toEqual({ action: "accept", content: { name: "Ada" } })
      expect(textOf(yield* client.callTool({ name: "roots" }))).toBe("file:///bridged")

      // Cancelling the downstream call interrupts the child's handler.
      const started = yield* Deferred.make<void>()
      const slow = yield* client.callTool({ name: "slow" }, { onProgress: () => Deferred.succeed(started, undefined) }).pipe(
        Effect.forkChild({ startImmediately: true })
      )
      yield* Deferred.await(started).pipe(Effect.timeout(BOUND))
      yield* Fiber.interrupt(slow)
      const ids = yield* eventually(cancelledIds(client), (ids) => ids.length > 0)
      expect(ids.length).toBe(1)

      // Ending the session (DELETE) ends its child.
      yield* close
      expect(yield* eventually(bridge.upstreams, (n) => n === 0)).toBe(0)
      expect(yield* eventually(Effect.sync(() => isAlive(pids[0]!)), (alive) => !alive)).toBe(false)
      expect(yield* transport.sessionIds).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a cancel goes upstream once, under the upstream's id, and the forwarded request leaves nothing pending", () =>
    Effect.gen(function*() {
      const { bridge, url } = yield* bridgeOverHttp(rawServer)
      // The raw transport: no lifecycle, the bridge and the child speak plain JSON-RPC.
      const raw = yield* StreamableHttpClientTransport.make({ url })
      yield* raw.request("initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "raw", version: "1" }
      })
      yield* raw.notify("notifications/initialized")
      const upstream = yield* bridge.upstream((yield* raw.sessionId)!)
      const slow = yield* raw.request("slow", { ms: 60_000 }).pipe(Effect.forkChild({ startImmediately: true }))
      expect(yield* eventually(upstream.pendingCount, (n) => n === 1)).toBe(1)
      // The child reads lines in order: once this is answered, it has read `slow` too.
      expect(yield* raw.request("echo", { after: "slow" })).toEqual({ after: "slow" })
      yield* Fiber.interrupt(slow)
      expect(yield* eventually(upstream.pendingCount, (n) => n === 0)).toBe(0)
      const { cancellations } = (yield* eventually(
        raw.request("test/cancellations"),
        (r) => (r as { cancellations: Array<unknown> }).cancellations.length > 0
      )) as { cancellations: Array<{ requestId: unknown; reason: string }> }
      // One more round trip: a second (downstream-id) cancel would have arrived by now.
      yield* raw.request("ping")
      const again = (yield* raw.request("test/cancellations")) as { cancellations: Array<unknown> }
      expect(again.cancellations).toEqual(cancellations)
      expect(cancellations.length).toBe(1)
      expect(typeof cancellations[0]!.requestId).toBe("number")
      expect(cancellations[0]!.reason).toBe("Request cancelled by the caller")
      const seen = (yield* raw.request("test/notifications")) as { notifications: Array<string> }
      expect(seen.notifications).toEqual(["notifications/initialized", "notifications/cancelled"])
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("one child per session; a child that dies turns into -32000 errors for its session only", () =>
    Effect.gen(function*() {
      const { bridge, pids, url } = yield* bridgeOverHttp()
      const a = yield* connect(url)
      const b = yield* connect(url)
      expect(yield* bridge.upstreams).toBe(2)
      expect(new Set(pids).size).toBe(2)
      const pidOf = (client: McpClient.McpClientShape) =>
        Effect.map(client.callTool({ name: "pid" }), (r) => (r.structuredContent as { pid: number }).pid)
      const pidA = yield* pidOf(a.client)
      const pidB = yield* pidOf(b.client)
      expect(pidA).not.toBe(pidB)
      expect(pids).toEqual(expect.arrayContaining([pidA, pidB]))

      // A's child exits in the middle of a call.
      const died = yield* a.client.callTool({ name: "exit", arguments: { code: 3 } }).pipe(
        Effect.unwrapReason("McpServerError"),
        Effect.flip
      )
      expect(died).toMatchObject({ _tag: "RpcError", code: Bridge.ErrorCode.UpstreamClosed, data: { bridge: "TransportClosed" } })
      expect((died as { rpcMessage: string }).rpcMessage).toMatch(/^Upstream server unavailable: Transport closed/)
      expect(isAlive(pidA)).toBe(false)
      // Later requests on that session fail the same way, at once.
      const after = yield* Effect.flip(a.client.ping())
      expect(after).toMatchObject({ _tag: "McpServerError", reason: { _tag: "RpcError", code: Bridge.ErrorCode.UpstreamClosed } })
      // B is untouched.
      expect(textOf(yield* b.client.callTool({ name: "echo", arguments: { text: "still here" } }))).toBe("still here")

      yield* a.close
      expect(yield* eventually(bridge.upstreams, (n) => n === 1)).toBe(1)
      yield* b.close
      expect(yield* eventually(bridge.upstreams, (n) => n === 0)).toBe(0)
      expect(isAlive(pidB)).toBe(false)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("closing the bridge kills the children of sessions still open", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { pids, url } = yield* bridgeOverHttp().pipe(Scope.provide(scope))
      const clientScope = yield* Scope.make()
      const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: "2025-11-25" }).pipe(
        Scope.provide(clientScope)
      )
      yield* client.ping()
      expect(isAlive(pids[0]!)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(pids[0]!)).toBe(false)
      yield* Scope.close(clientScope, Exit.void)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("an upstream that dies at start: the initialize gets -32000, and no upstream is left open", () =>
    Effect.gen(function*() {
      const { bridge, url } = yield* bridgeOverHttp("/no/such/server.js")
      const failed = yield* Effect.flip(
        McpClient.connect(StreamableHttpClientTransport.make({ url }), {}).pipe(Effect.scoped)
      )
      expect(failed).toMatchObject({ _tag: "McpServerError", reason: { _tag: "RpcError", code: Bridge.ErrorCode.UpstreamClosed } })
      expect(yield* bridge.upstreams).toBe(0)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))
})

describe("bridge: stateless HTTP", { timeout: 60_000 }, () => {
  it.live("every client shares one upstream", () =>
    Effect.gen(function*() {
      const { bridge, pids, url } = yield* bridgeOverHttp(routerServer, [], { mode: "stateless" })
      const a = yield* connect(url)
      const b = yield* connect(url)
      expect(a.client.serverInfo.name).toBe("router-fixture")
      expect(textOf(yield* a.client.callTool({ name: "echo", arguments: { text: "a" } }))).toBe("a")
      expect(textOf(yield* b.client.callTool({ name: "echo", arguments: { text: "b" } }))).toBe("b")
      expect(yield* bridge.upstreams).toBe(1)
      expect(pids.length).toBe(1)
      yield* a.close
      yield* b.close
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))
})

describe("bridge: the official SDK client over Streamable HTTP", { timeout: 60_000 }, () => {
  it.live("tools, progress, logging, sampling, elicitation, roots, abort reaching the child; close() ends the child", () =>
    Effect.gen(function*() {
      const { bridge, pids, url } = yield* bridgeOverHttp()
      yield* Effect.promise(async () => {
        const client = new Client(
          { name: "sdk-through-bridge", version: "1.0.0" },
          { capabilities: { sampling: {}, elicitation: {}, roots: {} } }
        )
        client.setRequestHandler(CreateMessageRequestSchema, async () => ({
          role: "assistant",
          content: { type: "text", text: "from the sdk" },
          model: "sdk-model"
        }))
        client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Grace" } }))
        client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///sdk", name: "sdk" }] }))
        const logs: Array<unknown> = []
        client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void logs.push(n.params.data))
        const transport = new StreamableHTTPClientTransport(new URL(url))
        try {
          await client.connect(transport)
          expect(client.getServerVersion()).toMatchObject({ name: "router-fixture" })
          expect(client.getInstructions()).toBe("A fixture server for tests.")

          const { tools } = await client.listTools()
          expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["echo", "progress", "slow"]))
          const echo = await client.callTool({ name: "echo", arguments: { text: "sdk" } })
          expect(textOf(echo as never)).toBe("sdk")
          await expect(client.callTool({ name: "no-such-tool" })).rejects.toThrow(/Unknown tool/)

          const seen: Array<number> = []
          const progress = await client.callTool({ name: "progress", arguments: { steps: 3, delayMs: 30 } }, undefined, {
            onprogress: (p) => void seen.push(p.progress)
          })
          expect(progress.structuredContent).toEqual({ hadToken: true })
          // (The SDK drops progress it handles after the response; the spaced ones are in.)
          expect(seen.slice(0, 2)).toEqual([1, 2])

          await client.callTool({ name: "log", arguments: { level: "error", text: "sdk log" } })
          expect(logs).toContain("sdk log")

          expect(textOf(await client.callTool({ name: "sample" }) as never)).toBe("sdk-model: from the sdk")
          const elicited = await client.callTool({ name: "elicit" })
          expect(elicited.structuredContent).toEqual({ action: "accept", content: { name: "Grace" } })
          expect(textOf(await client.callTool({ name: "roots" }) as never)).toBe("file:///sdk")
          expect(await client.ping()).toEqual({})

          // An abort: the SDK sends notifications/cancelled, the bridge cancels upstream.
          const controller = new AbortController()
          let started!: () => void
          const running = new Promise<void>((resolve) => (started = resolve))
          const call = client.callTool({ name: "slow" }, undefined, {
            signal: controller.signal,
            onprogress: () => started()
          }).then(() => "finished", () => "aborted")
          await running
          controller.abort("enough")
          expect(await call).toBe("aborted")
          let ids: Array<unknown> = []
          for (let i = 0; i < 400 && ids.length === 0; i++) {
            const r = await client.callTool({ name: "cancelled" })
            ids = (r.structuredContent as { ids: Array<unknown> }).ids
            if (ids.length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
          }
          expect(ids.length).toBe(1)

          expect(isAlive(pids[0]!)).toBe(true)
          await transport.terminateSession()
        } finally {
          await client.close()
        }
      })
      expect(yield* eventually(bridge.upstreams, (n) => n === 0)).toBe(0)
      expect(yield* eventually(Effect.sync(() => isAlive(pids[0]!)), (alive) => !alive)).toBe(false)
    }).pipe(Effect.scoped))
})
