import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Stream, SubscriptionRef } from "effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as JsonRpc from "../../src/JsonRpc.ts"
import * as Negotiation from "../../src/client/Negotiation.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import { makeModern, type ModernOptions } from "../fixtures/modern-handler.ts"
import { makeServer } from "../fixtures/router-stdio-server.ts"

const connect = (script = makeModern(), options: McpClient.McpClientOptions = {}) =>
  Effect.gen(function*() {
    const pair = yield* InMemoryTransport.makePair(script.handler)
    const client = yield* McpClient.fromTransport(pair.client, options)
    return { client, pair, script }
  })

const modern = (o: ModernOptions = {}) => makeModern(o)

const textOf = (result: { readonly content: ReadonlyArray<unknown> }) =>
  result.content.map((c) => (c as { text?: string }).text ?? "").join("")

const META_VERSION = "io.modelcontextprotocol/protocolVersion"

describe("McpClient in the stateless era", () => {
  describe("discovery and metadata", () => {
    it.effect("auto picks the stateless era from server/discover; nothing like initialize is sent", () =>
      Effect.gen(function*() {
        const { client, script } = yield* connect()
        expect(client.era).toBe("modern")
        expect(client.protocolVersion).toBe("2026-07-28")
        expect(client.serverInfo.name).toBe("modern-fixture")
        expect(client.instructions).toBe("modern fixture")
        expect(client.discoverResult?.ttlMs).toBe(60_000)
        expect(client.serverCapabilities.tools).toBeDefined()
        expect(script.seen.map((s) => s.method)).not.toContain("initialize")
        expect(script.seen[0]!.method).toBe("server/discover")
      }))

    it.effect("every request carries _meta with version, capabilities and client info; logLevel only when asked", () =>
      Effect.gen(function*() {
        const { client, script } = yield* connect(modern(), {
          clientInfo: { name: "tester", version: "9" },
          handlers: { listRoots: () => Effect.succeed([]) }
        })
        yield* client.callTool({ name: "echo", arguments: { text: "a" } })
        const call = script.seen.find((s) => s.method === "tools/call")!
        const meta = call.params._meta as Record<string, unknown>
        expect(meta[META_VERSION]).toBe("2026-07-28")
        expect(meta["io.modelcontextprotocol/clientCapabilities"]).toEqual({
          roots: { listChanged: true },
          extensions: { "io.modelcontextprotocol/tasks": {} }
        })
        expect(meta["io.modelcontextprotocol/clientInfo"]).toEqual({ name: "tester", version: "9" })
        expect(meta["io.modelcontextprotocol/logLevel"]).toBeUndefined()
        // The client's progress tokens are integers (the spec allows a string or an integer).
        expect(Number.isSafeInteger(meta.progressToken)).toBe(true)
        yield* client.setLoggingLevel("debug")
        yield* client.callTool({ name: "echo", arguments: { text: "b" } })
        const second = script.seen.filter((s) => s.method === "tools/call")[1]!
        expect((second.params._meta as Record<string, unknown>)["io.modelcontextprotocol/logLevel"]).toBe("debug")
        // setLoggingLevel sent nothing: the level travels with each request.
        expect(script.seen.map((s) => s.method)).not.toContain("logging/setLevel")
      }))

    it.effect("a result without resultType is complete; an unknown resultType is a typed error", () =>
      Effect.gen(function*() {
        const { client } = yield* connect(modern(), { listen: false })
        const old = yield* client.callTool({ name: "no_result_type" })
        expect(textOf(old)).toBe("old style")
        const error = yield* Effect.flip(client.callTool({ name: "weird_result_type" }))
        expect(error).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "InvalidPayload" } })
        expect(error.message).toContain("partial")
        expect(yield* client.connection.pendingCount).toBe(0)
      }))

    it.effect("discover() reuses the discovery for its ttlMs; cache: false asks again", () =>
      Effect.gen(function*() {
        const { client, script } = yield* connect(modern(), { listen: false })
        const d = yield* client.discover()
        expect(d.supportedVersions).toEqual(["2026-07-28"])
        expect(script.seen.filter((s) => s.method === "server/discover")).toHaveLength(1)
        const off = modern()
        const { client: uncached } = yield* connect(off, { listen: false, cache: false })
        yield* uncached.discover()
        expect(off.seen.filter((s) => s.method === "server/discover")).toHaveLength(2)
      }))

    it.effect("ping is a discovery in the stateless era", () =>
      Effect.gen(function*() {
        const { client, script } = yield* connect()
        yield* client.ping()
        expect(script.seen.filter((s) => s.method === "server/discover")).toHaveLength(2)
        expect(script.seen.map((s) => s.method)).not.toContain("ping")
      }))

    it.live("a stateless server too slow for the probe refuses the handshake, and is then probed with the whole request timeout", () =>
      Effect.gen(function*() {
        const script = modern()
        let discovers = 0
        const pair = yield* InMemoryTransport.makePair((m, ctx) =>
          m.method === "server/discover" && discovers++ === 0
            ? Effect.andThen(Effect.sleep("300 millis"), script.handler(m, ctx))
            : script.handler(m, ctx)
        )
        const client = yield* McpClient.fromTransport(pair.client, { probeTimeout: "50 millis", listen: false })
        expect(client.era).toBe("modern")
        expect(discovers).toBe(2)
        // Between the two probes: the handshake, which the stateless server refused.
        expect(script.seen.map((s) => s.method).slice(0, 2)).toEqual(["initialize", "server/discover"])
      }))

    it.effect("a pinned handshake revision is the one initialize asks for", () =>
      Effect.gen(function*() {
        const handle = yield* McpServer.toHandler(makeServer())
        const asked: Array<unknown> = []
        const pair = yield* InMemoryTransport.makePair((m, ctx) => {
          if (m.method === "initialize") asked.push((m.params as { protocolVersion?: unknown }).protocolVersion)
          return handle.handler(m, ctx)
        })
        const client = yield* McpClient.fromTransport(pair.client, { protocol: "2025-06-18" })
        expect(asked).toEqual(["2025-06-18"])
        expect(client.protocolVersion).toBe("2025-06-18")
      }))

    it.effect("a pinned handshake revision never probes", () =>
      Effect.gen(function*() {
        const handle = yield* McpServer.toHandler(makeServer())
        const seen: Array<string> = []
        const pair = yield* InMemoryTransport.makePair((m, ctx) => {
          seen.push(m.method)
          return handle.handler(m, ctx)
        })
        const client = yield* McpClient.fromTransport(pair.client, { protocol: "2025-11-25" })
        expect(client.era).toBe("legacy")
        expect(seen[0]).toBe("initialize")
      }))

    it.effect("auto falls back to the handshake with a server of the handshake era, and the verdict is cached", () =>
      Effect.gen(function*() {
        const handle = yield* McpServer.toHandler(makeServer({ stateless: false }))
        const seen: Array<string> = []
        const pair = yield* InMemoryTransport.makePair((m, ctx) => {
          seen.push(m.method)
          return handle.handler(m, ctx)
        })
        const eraCache = Negotiation.make()
        const client = yield* McpClient.fromTransport(pair.client, { eraKey: "fixture", eraCache })
        expect(client.era).toBe("legacy")
        expect(client.protocolVersion).toBe("2025-11-25")
        yield* client.listTools()
        expect(seen.slice(0, 3)).toEqual(["server/discover", "initialize", "notifications/initialized"])
        // Nothing but the probe went out before initialize (no cancellation of it either).
        expect(seen.filter((m) => m === "notifications/cancelled")).toEqual([])
        expect(Negotiation.get(eraCache, "fixture")?.era).toBe("legacy")
        // A second client of the same server skips the probe.
        const handle2 = yield* McpServer.toHandler(makeServer())
        const seen2: Array<string> = []
        const pair2 = yield* InMemoryTransport.makePair((m, ctx) => {
          seen2.push(m.method)
          return handle2.handler(m, ctx)
        })
        yield* McpClient.fromTransport(pair2.client, { eraKey: "fixture", eraCache })
        expect(seen2[0]).toBe("initialize")
      }))

    it.effect("the era cache of clients without eraCache is the CurrentEraCache reference: a provided one starts empty and global is left alone", () =>
      Effect.gen(function*() {
        const key = `reference-${Math.random()}`
        const connectLegacy = Effect.gen(function*() {
          const handle = yield* McpServer.toHandler(makeServer({ stateless: false }))
          const seen: Array<string> = []
          const pair = yield* InMemoryTransport.makePair((m, ctx) => {
            seen.push(m.method)
            return handle.handler(m, ctx)
          })
          yield* McpClient.fromTransport(pair.client, { eraKey: key })
          return seen
        })
        // The default (global) learns the era; a provided cache does not see it and probes again.
        expect((yield* connectLegacy)[0]).toBe("server/discover")
        expect(Negotiation.get(Negotiation.global, key)?.era).toBe("legacy")
        const provided = Negotiation.make()
        const isolated = yield* Effect.provideService(connectLegacy, Negotiation.CurrentEraCache, provided)
        expect(isolated[0]).toBe("server/discover")
        expect(Negotiation.get(provided, key)?.era).toBe("legacy")
        // Clients given the same cache share it: the next skips the probe.
        expect((yield* Effect.provideService(connectLegacy, Negotiation.CurrentEraCache, provided))[0]).toBe("initialize")
        // And the default still holds what it learnt.
        expect((yield* connectLegacy)[0]).toBe("initialize")
        Negotiation.invalidate(Negotiation.global, key)
      }))

    it.effect("a cached handshake verdict that no longer holds is forgotten and the server probed again", () =>
      Effect.gen(function*() {
        const eraCache = Negotiation.make()
        Negotiation.set(eraCache, "upgraded", { era: "legacy", version: "2025-11-25" })
        const script = modern()
        const pair = yield* InMemoryTransport.makePair(script.handler)
        const client = yield* McpClient.fromTransport(pair.client, { eraKey: "upgraded", eraCache, listen: false })
        expect(client.era).toBe("modern")
        expect(script.seen.map((s) => s.method).slice(0, 2)).toEqual(["initialize", "server/discover"])
        expect(Negotiation.get(eraCache, "upgraded")?.era).toBe("modern")
      }))

    /** A server that refuses its first `count` requests with -32022 although it lists the version asked for. */
    const refusingFirst = (count: number) => {
      const script = modern()
      let refused = 0
      const handler: typeof script.handler = (message, ctx) => {
        if (!("id" in message) || refused >= count) return script.handler(message, ctx)
        refused++
        script.seen.push({ method: message.method, params: (message.params ?? {}) as Record<string, unknown> })
        const requested = ((message.params as { _meta?: Record<string, unknown> } | undefined)?._meta ?? {})[META_VERSION]
        return Effect.succeed(
          JsonRpc.failure(message.id, -32022, "Unsupported protocol version", { supported: ["2026-07-28"], requested })
        )
      }
      return { ...script, handler }
    }

    for (const protocol of ["auto", "2026-07-28"] as const) {
      it.effect(`(${protocol}) a -32022 listing the version asked for is retried once with it, under a new id`, () =>
        Effect.gen(function*() {
          const script = refusingFirst(1)
          const ids: Array<unknown> = []
          const pair = yield* InMemoryTransport.makePair((message, ctx) => {
            if ("id" in message) ids.push(message.id)
            return script.handler(message, ctx)
          })
          const client = yield* McpClient.fromTransport(pair.client, { protocol, listen: false })
          expect(client.era).toBe("modern")
          expect(client.protocolVersion).toBe("2026-07-28")
          yield* client.listTools()
          expect(script.seen.map((s) => s.method)).toEqual(["server/discover", "server/discover", "tools/list"])
          expect(script.seen.map((s) => (s.params._meta as Record<string, unknown>)[META_VERSION])).toEqual([
            "2026-07-28",
            "2026-07-28",
            "2026-07-28"
          ])
          expect(ids[1]).not.toEqual(ids[0])
        }))
    }

    it.effect("a server that refuses the version it lists twice fails with UnsupportedProtocolVersion after one retry", () =>
      Effect.gen(function*() {
        const script = refusingFirst(10)
        const pair = yield* InMemoryTransport.makePair(script.handler)
        const error = yield* Effect.flip(McpClient.fromTransport(pair.client, { protocol: "2026-07-28" }))
        expect(error).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "UnsupportedProtocolVersion", supported: ["2026-07-28"] } })
        expect(script.seen.map((s) => s.method)).toEqual(["server/discover", "server/discover"])
      }))

    it.effect("-32022 naming only versions we do not speak is UnsupportedProtocolVersion with what the server supports", () =>
      Effect.gen(function*() {
        const script = modern({ versions: ["2099-01-01"] })
        const pair = yield* InMemoryTransport.makePair(script.handler)
        const error = yield* McpClient.fromTransport(pair.client, { protocol: "2026-07-28" }).pipe(
          Effect.unwrapReason("McpProtocolError"),
          Effect.flip
        )
        expect(error._tag).toBe("UnsupportedProtocolVersion")
        if (error._tag === "UnsupportedProtocolVersion") expect(error.supported).toContain("2099-01-01")
      }))
  })

  describe("input rounds", () => {
    it.effect("input_required runs the client's handlers and re-issues with a new id, echoing requestState", () =>
      Effect.gen(function*() {
        const asked: Array<string> = []
        const { client, script } = yield* connect(modern(), {
          listen: false,
          handlers: {
            elicit: (params) =>
              Effect.sync(() => {
                asked.push(params.message)
                return { action: "accept", content: { name: "Ada" } } as const
              })
          }
        })
        const result = yield* client.callTool({ name: "ask_name" })
        expect(textOf(result)).toBe("hello Ada (state state-for-round1)")
        expect(asked).toEqual(["Your name?"])
        const calls = script.seen.filter((s) => s.method === "tools/call")
        expect(calls).toHaveLength(2)
        expect(calls[1]!.params.inputResponses).toEqual({ name: { action: "accept", content: { name: "Ada" } } })
        expect(calls[1]!.params.requestState).toBe("state-for-round1")
        expect(yield* client.connection.pendingCount).toBe(0)
      }))

    it.effect("a server that never stops asking ends in TooManyInputRounds", () =>
      Effect.gen(function*() {
        const { client, script } = yield* connect(modern(), {
          maxInputRounds: 3,
          listen: false,
          handlers: { listRoots: () => Effect.succeed([]) }
        })
        const error = yield* Effect.flip(client.callTool({ name: "loop_forever" }))
        expect(error).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "TooManyInputRounds" } })
        expect(script.seen.filter((s) => s.method === "tools/call")).toHaveLength(4)
        expect(yield* client.connection.pendingCount).toBe(0)
      }))

    it.effect("a 1 MiB requestState is echoed untouched", () =>
      Effect.gen(function*() {
        const { client } = yield* connect(modern(), { handlers: { listRoots: () => Effect.succeed([]) } })
        const result = yield* client.callTool({ name: "big_state" })
        expect(textOf(result)).toBe(`state length ${1024 * 1024}`)
      }))

    it.effect("interrupting a call between rounds leaves nothing pending", () =>
      Effect.gen(function*() {
        const { client } = yield* connect(modern(), { listen: false, handlers: { elicit: () => Effect.never } })
        const fiber = yield* client.callTool({ name: "ask_name" }).pipe(Effect.forkChild({ startImmediately: true }))
        for (let i = 0; i < 50; i++) yield* Effect.yieldNow
        yield* Fiber.interrupt(fiber)
        expect(yield* client.connection.pendingCount).toBe(0)
      }))
  })

  describe("typed errors", () => {
    it.effect("-32021 is MissingClientCapability with the required capabilities; -32020 is HeaderMismatch", () =>
      Effect.gen(function*() {
        const { client } = yield* connect()
        const missing = yield* client.callTool({ name: "needs_sampling" }).pipe(
          Effect.unwrapReason("McpProtocolError"),
          Effect.flip
        )
        expect(missing._tag).toBe("MissingClientCapability")
        if (missing._tag === "MissingClientCapability") expect(missing.requiredCapabilities).toEqual({ sampling: {} })
        const mismatch = yield* Effect.flip(client.callTool({ name: "header_mismatch" }))
        expect(mismatch).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "HeaderMismatch" } })
      }))
  })

  describe("cache hints", () => {
    it.effect("a list result is reused for its ttlMs, and not at all with cache: false", () =>
      Effect.gen(function*() {
        const script = modern({ toolsTtlMs: 60_000 })
        const { client } = yield* connect(script)
        yield* client.listTools()
        yield* client.listTools()
        expect(script.seen.filter((s) => s.method === "tools/list")).toHaveLength(1)
        const off = modern({ toolsTtlMs: 60_000 })
        const { client: uncached } = yield* connect(off, { cache: false })
        yield* uncached.listTools()
        yield* uncached.listTools()
        expect(off.seen.filter((s) => s.method === "tools/list")).toHaveLength(2)
      }))

    it.effect("each page is kept under the cursor that asked for it", () =>
      Effect.gen(function*() {
        const script = modern({ toolsTtlMs: 60_000, pagedTools: true })
        const { client } = yield* connect(script, { listen: false })
        const first = (yield* client.listAllTools()).map((t) => t.name)
        const second = (yield* client.listAllTools()).map((t) => t.name)
        expect(new Set(first).size).toBe(first.length)
        expect(second).toEqual(first)
        expect(script.seen.filter((s) => s.method === "tools/list")).toHaveLength(2)
      }))

    it.effect("a list-changed notification drops the cached list: a tool added at run time is in the next listTools", () =>
      Effect.gen(function*() {
        const tools: Array<{ name: string; inputSchema: { type: "object" } }> = [{ name: "first", inputSchema: { type: "object" } }]
        const prompts: Array<{ name: string }> = [{ name: "p1" }]
        const server = McpServer.make({
          serverInfo: { name: "growing", version: "1" },
          stateless: true,
          capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } }
        }).pipe(
          McpServer.method("tools/list", {}, () => Effect.sync(() => ({ tools: [...tools], ttlMs: 60_000 }))),
          McpServer.method("prompts/list", {}, () => Effect.sync(() => ({ prompts: [...prompts], ttlMs: 60_000 })))
        )
        const handle = yield* McpServer.toHandler(server)
        const pair = yield* InMemoryTransport.makePair(handle.handler)
        const client = yield* McpClient.fromTransport(pair.client, { protocol: "2026-07-28" })
        yield* SubscriptionRef.changes(client.subscription).pipe(
          Stream.filter((state) => state._tag === "Listening"),
          Stream.take(1),
          Stream.runDrain
        )
        expect((yield* client.listTools()).tools.map((t) => t.name)).toEqual(["first"])
        expect((yield* client.listPrompts()).prompts.map((p) => p.name)).toEqual(["p1"])

        const heard = yield* Stream.take(client.listChanged, 2).pipe(Stream.runCollect, Effect.forkChild({ startImmediately: true }))
        tools.push({ name: "second", inputSchema: { type: "object" } })
        prompts.push({ name: "p2" })
        yield* handle.notifyAll("notifications/tools/list_changed")
        yield* handle.notifyAll("notifications/prompts/list_changed")
        yield* Fiber.join(heard)
        // Well inside the 60 s the lists were kept for.
        expect((yield* client.listTools()).tools.map((t) => t.name)).toEqual(["first", "second"])
        expect((yield* client.listPrompts()).prompts.map((p) => p.name)).toEqual(["p1", "p2"])
      }))

    it.effect("without ttlMs nothing is kept", () =>
      Effect.gen(function*() {
        const script = modern()
        const { client } = yield* connect(script)
        yield* client.listTools()
        yield* client.listTools()
        expect(script.seen.filter((s) => s.method === "tools/list")).toHaveLength(2)
      }))
  })

  describe("subscriptions/listen", () => {
    it.effect("over in-memory the client listens for what the server declares; notifications reach the typed streams", () =>
      Effect.gen(function*() {
        const script = modern()
        const { client } = yield* connect(script)
        const state = yield* SubscriptionRef.get(client.subscription)
        expect(state._tag).toBe("Listening")
        const listen = script.seen.find((s) => s.method === "subscriptions/listen")!
        expect(listen.params.notifications).toEqual({ toolsListChanged: true, resourcesListChanged: true })
        const changed = yield* Stream.take(client.listChanged, 1).pipe(
          Stream.runCollect,
          Effect.forkChild({ startImmediately: true })
        )
        yield* script.announce("notifications/tools/list_changed")
        const got = yield* Fiber.join(changed)
        expect(got[0]!._tag).toBe("ToolListChanged")
      }))

    it.effect("a notification of another subscription is not ours", () =>
      Effect.gen(function*() {
        const script = modern()
        const { client } = yield* connect(script)
        const seen = yield* Stream.take(client.listChanged, 1).pipe(
          Stream.runCollect,
          Effect.forkChild({ startImmediately: true })
        )
        yield* script.announce("notifications/prompts/list_changed", {}, "someone-else")
        yield* script.announce("notifications/tools/list_changed")
        const got = yield* Fiber.join(seen)
        expect(got[0]!._tag).toBe("ToolListChanged")
      }))

    it.effect("subscribeResource widens the listen filter", () =>
      Effect.gen(function*() {
        const script = modern()
        const { client } = yield* connect(script)
        yield* client.subscribeResource("test://a")
        const listens = script.seen.filter((s) => s.method === "subscriptions/listen")
        expect(listens.at(-1)!.params.notifications).toMatchObject({ resourceSubscriptions: ["test://a"] })
        expect(script.seen.map((s) => s.method)).not.toContain("resources/subscribe")
      }))

    it.live("a listen that is never acknowledged is retried, and the state says why", () =>
      Effect.gen(function*() {
        const script = modern({ silentListen: true })
        const pair = yield* InMemoryTransport.makePair(script.handler)
        const client = yield* McpClient.fromTransport(pair.client, { requestTimeout: "100 millis" })
        const state = yield* SubscriptionRef.get(client.subscription)
        expect(state._tag).toBe("Retrying")
        if (state._tag === "Retrying") expect(String(state.error)).toContain("No acknowledgement")
        // The abandoned listen is not pending.
        expect(yield* client.connection.pendingCount).toBeLessThanOrEqual(1)
      }))
  })

  it.effect("closing the client's scope leaves nothing pending", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.scoped(Effect.gen(function*() {
        const { client } = yield* connect()
        return client.connection
      })).pipe(Effect.exit)
      expect(Exit.isSuccess(exit)).toBe(true)
    }))
})
