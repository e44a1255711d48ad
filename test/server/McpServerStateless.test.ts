import { fileURLToPath } from "node:url"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeServices } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport as SdkStdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Effect, Fiber, Stream } from "effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import type * as JsonRpc from "../../src/JsonRpc.ts"
import * as RequestMeta from "../../src/RequestMeta.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import { awaitEvent, readEvents } from "../cli/runCli.ts"
import { hasSpecSchema, specValidator } from "../fixtures/spec-schema.ts"

const SERVER_INFO = { name: "dual", version: "1.0.0" }

/** One object answered to every call of `own_meta`: the server's additions must not land in it. */
const OWN_META_RESULT = { content: [{ type: "text", text: "traced" }], _meta: { "example.com/trace": "t1" } }

const server = McpServer.make({
  serverInfo: SERVER_INFO,
  instructions: "serves both eras",
  capabilities: { tools: { listChanged: true }, resources: { subscribe: true } },
  discovery: { ttlMs: 5_000 },
  stateless: true
}).pipe(
  McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [{ name: "caps", inputSchema: { type: "object" } }] })),
  McpServer.method("resources/read", {}, () => Effect.succeed({ contents: [] })),
  McpServer.method("completion/complete", {}, (_, ctx) =>
    Effect.match(ctx.sample({ messages: [], maxTokens: 1 }), {
      onFailure: (e) => ({ completion: { values: [e._tag] } }),
      onSuccess: () => ({ completion: { values: ["answered"] } })
    })),
  McpServer.method("tools/call", {}, (params, ctx) =>
    Effect.gen(function*() {
      const text = (t: string) => ({ content: [{ type: "text", text: t }] })
      switch ((params as { name: string }).name) {
        case "caps":
          return text(JSON.stringify({ era: ctx.session.era, caps: ctx.session.clientCapabilities }))
        case "chatty":
          yield* ctx.log("debug", "quiet")
          yield* ctx.log("error", "loud")
          yield* ctx.progress(1, { total: 1 })
          return text("done")
        case "ask":
          return text(yield* Effect.match(ctx.sample({ messages: [], maxTokens: 1 }), {
            onFailure: (e) => e._tag,
            onSuccess: () => "answered"
          }))
        case "own_meta":
          return OWN_META_RESULT
        case "ask_uncaught":
          yield* ctx.elicit({ message: "?", requestedSchema: { type: "object", properties: {} } })
          return text("unreachable")
        default:
          return text("?")
      }
    }))
)

const meta = (overrides: Record<string, unknown> = {}) => ({
  ...RequestMeta.requestMeta({ protocolVersion: "2026-07-28", clientCapabilities: {} }),
  ...overrides
})

/** A pair whose server-to-client frames are recorded as parsed JSON. */
const pairOf = Effect.gen(function*() {
  const handle = yield* McpServer.toHandler(server)
  const wire: Array<Record<string, unknown>> = []
  const pair = yield* InMemoryTransport.makePair(handle.handler, {
    interceptor: {
      transmit: (direction, text, deliver) => {
        if (direction === "server-to-client") wire.push(JSON.parse(text))
        return deliver(text)
      }
    }
  })
  return { handle, pair, wire }
})

const checkSpec = (definition: string, value: unknown) => {
  if (!hasSpecSchema("2026-07-28")) return
  expect(specValidator("2026-07-28", definition)(value)).toBeUndefined()
}

const rpcErrorOf = (e: unknown) => e as { _tag: string; code: number; data?: unknown }

describe("McpServer in the stateless era (2026-07-28)", () => {
  it.effect("list results and resources/read carry the cache hints the revision requires; a handler's own win", () =>
    Effect.gen(function*() {
      const { pair, wire } = yield* pairOf
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "2026-07-28", listen: false })
      yield* client.listTools()
      yield* client.readResource("test://x")
      const results = wire.filter((m) => "result" in m).map((m) => m.result as Record<string, unknown>)
      const listed = results.find((r) => "tools" in r)!
      expect(listed).toMatchObject({ ttlMs: 0, cacheScope: "private", resultType: "complete" })
      checkSpec("ListToolsResult", listed)
      const read = results.find((r) => "contents" in r)!
      expect(read).toMatchObject({ ttlMs: 0, cacheScope: "private" })
      checkSpec("ReadResourceResult", read)

      const cached = McpServer.make({
        serverInfo: SERVER_INFO,
        capabilities: { tools: {} },
        stateless: true,
        resultCache: { ttlMs: 30_000, cacheScope: "public" }
      }).pipe(
        McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [], ttlMs: 5 }))
      )
      const handle = yield* McpServer.toHandler(cached)
      const seen: Array<unknown> = []
      const pair2 = yield* InMemoryTransport.makePair(handle.handler, {
        interceptor: {
          transmit: (direction, text, deliver) => {
            if (direction === "server-to-client") seen.push(JSON.parse(text))
            return deliver(text)
          }
        }
      })
      const client2 = yield* McpClient.fromTransport(pair2.client, { protocol: "2026-07-28", listen: false })
      yield* client2.listTools()
      const own = (seen as Array<Record<string, unknown>>).map((m) => m.result as Record<string, unknown> | undefined)
        .find((r) => r !== undefined && "tools" in r)!
      // The handler's ttlMs wins; the server's cacheScope fills what it left out.
      expect(own).toMatchObject({ ttlMs: 5, cacheScope: "public" })
    }))

  it.effect("our client in auto and pinned modes gets the stateless era; discover and results are as the schema says; no session kept", () =>
    Effect.gen(function*() {
      for (const protocol of ["auto", "2026-07-28"] as const) {
        const { handle, pair, wire } = yield* pairOf
        const client = yield* McpClient.fromTransport(pair.client, { protocol, listen: false })
        expect(client.era).toBe("modern")
        expect(client.serverInfo).toEqual(SERVER_INFO)
        expect(client.instructions).toBe("serves both eras")
        const discovered = yield* client.discover()
        expect(discovered).toMatchObject({ supportedVersions: ["2026-07-28"], ttlMs: 5_000, cacheScope: "private", resultType: "complete" })
        expect(discovered.capabilities).toEqual(McpServer.capabilities(server))
        const called = yield* client.callTool({ name: "caps" })
        expect((called.content[0] as { text: string }).text).toContain(`"era":"modern"`)
        expect(yield* handle.sessions).toEqual([])
        const results = wire.filter((m) => "result" in m).map((m) => m.result as Record<string, unknown>)
        checkSpec("DiscoverResult", results[0])
        const call = results.find((r) => "content" in r)!
        expect(call.resultType).toBe("complete")
        expect(call._meta).toEqual({ [RequestMeta.MetaKey.serverInfo]: SERVER_INFO })
        checkSpec("CallToolResult", call)
      }
    }))

  it.effect("a result's own _meta is kept beside the server's identity, in a copy: the handler's object is left as it was", () =>
    Effect.gen(function*() {
      const { pair, wire } = yield* pairOf
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "2026-07-28", listen: false })
      yield* client.callTool({ name: "own_meta" })
      yield* client.callTool({ name: "caps" })
      const calls = wire.filter((m) => "result" in m).map((m) => m.result as Record<string, unknown>)
        .filter((r) => "content" in r)
      expect(calls[0]!._meta).toEqual({ [RequestMeta.MetaKey.serverInfo]: SERVER_INFO, "example.com/trace": "t1" })
      expect(calls[1]!._meta).toEqual({ [RequestMeta.MetaKey.serverInfo]: SERVER_INFO })
      expect(calls.map((r) => r.resultType)).toEqual(["complete", "complete"])
      expect(OWN_META_RESULT).toEqual({ content: [{ type: "text", text: "traced" }], _meta: { "example.com/trace": "t1" } })
    }))

  it.effect("the same server still runs the handshake for a client pinned to 2025-11-25", () =>
    Effect.gen(function*() {
      const { handle, pair } = yield* pairOf
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "2025-11-25" })
      expect(client.era).toBe("legacy")
      const called = yield* client.callTool({ name: "caps" })
      expect((called.content[0] as { text: string }).text).toContain(`"era":"legacy"`)
      expect((called as Record<string, unknown>).resultType).toBeUndefined()
      expect((yield* handle.sessions).map((s) => s.era)).toEqual(["legacy"])
    }))

  it.effect("bad metadata: missing fields -32602, an unknown version -32022 with supported and requested, removed methods -32601", () =>
    Effect.gen(function*() {
      const { pair } = yield* pairOf
      const ask = (method: string, params: Record<string, unknown>) =>
        Effect.flip(pair.client.request(method, params)).pipe(Effect.map(rpcErrorOf))
      const missing = yield* ask("tools/list", { _meta: { [RequestMeta.MetaKey.protocolVersion]: "2026-07-28" } })
      expect(missing).toMatchObject({ code: -32602, data: { missing: [RequestMeta.MetaKey.clientCapabilities] } })
      const badLevel = yield* ask("tools/list", { _meta: meta({ [RequestMeta.MetaKey.logLevel]: "loudest" }) })
      expect(badLevel.code).toBe(-32602)
      const version = yield* ask("tools/list", { _meta: meta({ [RequestMeta.MetaKey.protocolVersion]: "2099-01-01" }) })
      expect(version).toMatchObject({ code: -32022, data: { supported: ["2026-07-28"], requested: "2099-01-01" } })
      for (const method of ["ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"]) {
        expect((yield* ask(method, { uri: "a://x", level: "info", _meta: meta() })).code).toBe(-32601)
      }
      // No handshake happened, and none is needed.
      const listed = yield* pair.client.request("tools/list", { _meta: meta() })
      expect(listed).toMatchObject({ resultType: "complete", tools: [{ name: "caps" }] })
    }))

  it.effect("capabilities come from each request's _meta, never from an earlier request", () =>
    Effect.gen(function*() {
      const { pair } = yield* pairOf
      const capsOf = (clientCapabilities: Record<string, unknown>) =>
        pair.client.request("tools/call", {
          name: "caps",
          _meta: meta({ [RequestMeta.MetaKey.clientCapabilities]: clientCapabilities })
        }).pipe(Effect.map((r) => JSON.parse((r as { content: Array<{ text: string }> }).content[0]!.text).caps))
      expect(yield* capsOf({ sampling: {} })).toEqual({ sampling: {} })
      expect(yield* capsOf({})).toEqual({})
    }))

  it.effect("log messages only when the request set a level, from that level up; progress only for its own token", () =>
    Effect.gen(function*() {
      const { pair, wire } = yield* pairOf
      const notes = () => wire.filter((m) => "method" in m) as Array<{ method: string; params: Record<string, unknown> }>
      yield* pair.client.request("tools/call", { name: "chatty", _meta: meta() })
      expect(notes().filter((n) => n.method === "notifications/message")).toEqual([])
      yield* pair.client.request("tools/call", { name: "chatty", _meta: meta({ [RequestMeta.MetaKey.logLevel]: "error", progressToken: "p1" }) })
      const logs = notes().filter((n) => n.method === "notifications/message")
      expect(logs.map((n) => n.params.data)).toEqual(["loud"])
      const progress = notes().filter((n) => n.method === "notifications/progress")
      expect(progress.map((n) => n.params.progressToken)).toEqual(["p1"])
      checkSpec("LoggingMessageNotification", logs[0])
    }))

  it.effect("asking the client during a stateless request: input_required on tools/call, ClientRequestUnavailable at once elsewhere, -32021 without the capability", () =>
    Effect.gen(function*() {
      const { pair } = yield* pairOf
      const sampling = meta({ [RequestMeta.MetaKey.clientCapabilities]: { sampling: {} } })
      const asked = yield* pair.client.request("tools/call", { name: "ask", _meta: sampling })
      expect(asked).toMatchObject({
        resultType: "input_required",
        inputRequests: { "ask-0": { method: "sampling/createMessage", params: { messages: [], maxTokens: 1 } } }
      })
      checkSpec("InputRequiredResult", asked)
      const completed = yield* pair.client.request("completion/complete", {
        ref: { type: "ref/prompt", name: "p" },
        argument: { name: "a", value: "" },
        _meta: sampling
      })
      expect((completed as { completion: { values: Array<string> } }).completion.values).toEqual(["ClientRequestUnavailable"])
      const refused = rpcErrorOf(yield* Effect.flip(pair.client.request("tools/call", { name: "ask_uncaught", _meta: meta() })))
      expect(refused).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: {} } } })
    }))

  it.effect("a stateless connection carries no server-to-client requests", () =>
    Effect.gen(function*() {
      const { pair } = yield* pairOf
      yield* pair.client.request("server/discover", { _meta: meta() })
      const error = yield* Effect.flip(pair.server.context.request("roots/list", {}))
      expect(error._tag).toBe("ClientRequestUnavailable")
    }))

  it.effect("subscriptions/listen: acknowledgement first with the agreed filter, only asked-for changes with the id, cancel ends it silently, shutdown answers complete", () =>
    Effect.gen(function*() {
      const { handle, pair, wire } = yield* pairOf
      let listenId: JsonRpc.RequestId | undefined
      const acked = yield* pair.client.notifications.pipe(
        Stream.filter((n) => n.method === "notifications/subscriptions/acknowledged"),
        Stream.take(1),
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      const listen = yield* pair.client.request("subscriptions/listen", {
        notifications: { toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ["a://x"] },
        _meta: meta()
      }, { timeout: "1 hour", onId: (id) => void (listenId = id) }).pipe(Effect.forkChild({ startImmediately: true }))
      const [ack] = yield* Fiber.join(acked)
      expect(ack!.params).toEqual({
        notifications: { toolsListChanged: true, resourceSubscriptions: ["a://x"] },
        _meta: { [RequestMeta.MetaKey.subscriptionId]: listenId }
      })
      checkSpec("SubscriptionsAcknowledgedNotification", ack)
      const changes = yield* pair.client.notifications.pipe(
        Stream.filter((n) => n.method !== "notifications/subscriptions/acknowledged"),
        Stream.take(2),
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      yield* handle.notifyAll("notifications/prompts/list_changed")
      yield* handle.notifyAll("notifications/resources/updated", { uri: "a://y" })
      yield* handle.notifyAll("notifications/message", { level: "info", data: "not for listens" })
      yield* handle.notifyAll("notifications/tools/list_changed")
      yield* handle.notifyAll("notifications/resources/updated", { uri: "a://x" })
      const got = yield* Fiber.join(changes)
      expect(got.map((n) => [n.method, (n.params as { _meta: Record<string, unknown> })._meta[RequestMeta.MetaKey.subscriptionId]]))
        .toEqual([["notifications/tools/list_changed", listenId], ["notifications/resources/updated", listenId]])

      // The client cancels: the server stops, and nothing answers the listen.
      yield* Fiber.interrupt(listen)
      while ((yield* pair.server.inFlight) > 0) yield* Effect.yieldNow
      yield* handle.notifyAll("notifications/tools/list_changed")
      yield* Effect.yieldNow
      const afterCancel = wire.filter((m) => m.id === listenId || (m.method === "notifications/tools/list_changed"))
      expect(afterCancel).toHaveLength(1)

      // A graceful shutdown answers an open listen with its final result.
      const second = yield* pair.client.request("subscriptions/listen", { notifications: { toolsListChanged: true }, _meta: meta() }, {
        timeout: "1 hour",
        onId: (id) => void (listenId = id)
      }).pipe(Effect.forkChild({ startImmediately: true }))
      while (!wire.some((m) => (m.params as { _meta?: Record<string, unknown> } | undefined)?._meta?.[RequestMeta.MetaKey.subscriptionId] === listenId)) {
        yield* Effect.yieldNow
      }
      yield* handle.shutdown
      const final = yield* Fiber.join(second)
      expect(final).toEqual({
        resultType: "complete",
        _meta: { [RequestMeta.MetaKey.serverInfo]: SERVER_INFO, [RequestMeta.MetaKey.subscriptionId]: listenId }
      })
      checkSpec("SubscriptionsListenResult", final)
      const late = yield* Effect.flip(pair.client.request("subscriptions/listen", { notifications: {}, _meta: meta() }))
      expect(rpcErrorOf(late).code).toBe(-32603)
    }))
})

describe("the example server over stdio, both eras", () => {
  const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
  const dir = mkdtempSync(join(tmpdir(), "stateless-stdio-"))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it.live("our client pinned to 2026-07-28 speaks the stateless era; cancelling a call interrupts its handler", () =>
    Effect.gen(function*() {
      const events = join(dir, "events.jsonl")
      const client = yield* McpClient.connect(
        StdioClientTransport.make({
          command: process.execPath,
          args: [main, "serve", "--stdio", "--eras", "both"],
          env: { ...process.env, EFFECT_MCP_EXAMPLE_EVENTS: events } as Record<string, string>
        }),
        { protocol: "2026-07-28" }
      )
      expect(client.era).toBe("modern")
      const echoed = yield* client.callTool({ name: "echo", arguments: { text: "hi" } })
      expect((echoed.content[0] as { text: string }).text).toBe("hi")
      const call = yield* client.callTool({ name: "countdown", arguments: { steps: 1000, intervalMs: 1000 } }).pipe(
        Effect.forkChild({ startImmediately: true })
      )
      yield* awaitEvent(events, (e) => e.event === "started" && e.tool === "countdown")
      yield* Fiber.interrupt(call)
      yield* awaitEvent(events, (e) => e.event === "cancelled" && e.tool === "countdown")
      expect(readEvents(events).some((e) => e.event === "completed" && e.tool === "countdown")).toBe(false)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)), 30_000)

  it.live("the SDK 1.x client still gets the handshake era from the same server", () =>
    Effect.promise(async () => {
      const transport = new SdkStdioClientTransport({
        command: process.execPath,
        args: [main, "serve", "--stdio", "--eras", "both"],
        env: { ...process.env } as Record<string, string>,
        stderr: "pipe"
      })
      const client = new Client({ name: "sdk-legacy", version: "1.0.0" }, { capabilities: {} })
      await client.connect(transport)
      try {
        expect(client.getServerVersion()?.name).toBe("effect-mcp-example")
        const result = await client.callTool({ name: "echo", arguments: { text: "legacy" } })
        expect((result.content as Array<{ text: string }>)[0]!.text).toBe("legacy")
        expect((result as Record<string, unknown>).resultType).toBeUndefined()
      } finally {
        await client.close()
      }
    }), 30_000)
})
