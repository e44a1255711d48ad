/**
 * The bridge across protocol eras, with real child processes and loopback
 * HTTP: a stdio server of the handshake era only behind a stateless front
 * (our McpClient and the SDK v2 client, both pinned to 2026-07-28), a pool
 * of upstream processes (spread, crash, replacement, teardown), and the
 * reverse: a stateless-only stdio server behind a handshake front, driven by
 * the SDK 1.x client.
 */
import { fileURLToPath } from "node:url"
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Logger, Option, Scope, Stream } from "effect"
import * as Bridge from "../../src/bridge/Bridge.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import { peerPath } from "../fixtures/peers/launch.ts"
import { isAlive } from "../fixtures/stdio-helpers.ts"
import { bridgeOverHttp, eventually, routerServer, textOf } from "./helpers.ts"

const handshakeOnly = fileURLToPath(new URL("./fixtures/handshake-only-server.ts", import.meta.url))
const MODERN = "2026-07-28"

interface Fronted {
  readonly url: string
  readonly bridge: Bridge.BridgeShape
  readonly transport: HttpServerTransport.HttpServerTransportShape
  readonly pids: Array<number>
}

/** `node <script> <args>` behind an era front on 127.0.0.1:0, for the life of `scope`. */
const front = (
  script: string,
  args: ReadonlyArray<string>,
  options: Partial<Bridge.BridgeOptions<unknown, never>>,
  scope: Scope.Scope
): Effect.Effect<Fronted, unknown> =>
  Effect.gen(function*() {
    const pids: Array<number> = []
    const connect = StdioClientTransport.make({
      command: process.execPath,
      args: [script, ...args],
      shutdown: { gracePeriod: "300 millis", killAfter: "300 millis" },
      stderr: { log: false }
    }).pipe(Effect.tap((t) => Effect.sync(() => void pids.push(t.pid))))
    const services = yield* Layer.buildWithScope(
      Bridge.layerHttp({ connect, ...options }, { port: 0 }).pipe(Layer.provide(NodeServices.layer)),
      scope
    )
    const transport = Context.get(services, HttpServerTransport.HttpServerTransport)
    return { url: Option.getOrThrow(transport.url), bridge: Context.get(services, Bridge.Bridge), transport, pids }
  })

const modernClient = (url: string, options: McpClient.McpClientOptions = {}) =>
  McpClient.connect(StreamableHttpClientTransport.make({ url }), {
    protocol: MODERN,
    clientInfo: { name: "era-test", version: "1.0.0" },
    ...options
  })

const askHandlers: McpClient.ServerRequestHandlers = {
  elicit: () => Effect.succeed({ action: "accept", content: { name: "Ada" } }),
  createMessage: () => Effect.succeed({ role: "assistant", content: { type: "text", text: "pong" }, model: "m" }),
  listRoots: () => Effect.succeed([{ uri: "file:///front" }])
}

describe("bridge: a handshake-only stdio server behind a stateless front", { timeout: 60_000 }, () => {
  it.live("our McpClient pinned to 2026-07-28: discover, tools, progress, logging on request, asks as input_required rounds, listen", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { bridge, transport, url } = yield* front(handshakeOnly, [], { front: "stateless" }, scope)
      const client = yield* modernClient(url, { handlers: askHandlers, listen: true }).pipe(Scope.provide(scope))

      // The front describes itself with the upstream's initialize result.
      expect(client.era).toBe("modern")
      expect(client.serverInfo.name).toBe("handshake-only")
      expect(client.instructions).toBe("A server that knows only initialize.")
      expect(client.discoverResult?.supportedVersions).toEqual([MODERN])
      expect(client.serverCapabilities.tools).toEqual({ listChanged: true })
      // A shared upstream session cannot hold one client's resource subscriptions.
      expect(client.serverCapabilities.resources?.subscribe).toBeUndefined()

      expect(textOf(yield* client.callTool({ name: "echo", arguments: { text: "hi" } }))).toBe("echo: hi")
      const raw = yield* client.request("tools/call", { name: "echo", arguments: { text: "raw" } })
      expect(raw).toMatchObject({ resultType: "complete", _meta: { "io.modelcontextprotocol/serverInfo": { name: "handshake-only" } } })
      expect((yield* client.readResource("test://hello")).contents[0]).toMatchObject({ text: "Hello from the handshake era." })
      expect((yield* client.getPrompt({ name: "greet", arguments: { name: "Ada" } })).messages).toHaveLength(1)
      // Served without a session, and by one upstream.
      expect(yield* transport.sessionIds).toEqual([])
      expect(yield* bridge.upstreams).toBe(1)

      const events = yield* Stream.runCollect(client.callToolStream({ name: "progress", arguments: { steps: 3 } }))
      expect(events.filter((e) => e._tag === "Progress").map((e) => e._tag === "Progress" && e.progress.progress)).toEqual([1, 2, 3])

      // Log messages only when the request asked for them.
      const logs = yield* client.logging.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild({ startImmediately: true }))
      yield* client.callTool({ name: "log", arguments: { level: "warning", text: "unasked" } })
      yield* client.setLoggingLevel("info")
      yield* client.callTool({ name: "log", arguments: { level: "warning", text: "asked" } })
      expect((yield* Fiber.join(logs)).map((m) => m.data)).toEqual(["asked"])

      // The upstream's asks become input_required rounds, answered by the client's handlers.
      expect(textOf(yield* client.callTool({ name: "ask" }))).toBe("hello Ada")
      expect(textOf(yield* client.callTool({ name: "sample" }))).toBe("m: pong")
      expect(textOf(yield* client.callTool({ name: "roots" }))).toBe("file:///front")

      // The upstream's list change reaches the listen stream.
      const changed = yield* client.listChanged.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild({ startImmediately: true }))
      yield* client.callTool({ name: "changed" })
      expect((yield* Fiber.join(changed)).map((n) => n._tag)).toEqual(["ToolListChanged"])

      // A client that cannot answer an ask is told which capability it lacks.
      const plain = yield* modernClient(url).pipe(Scope.provide(scope))
      const refused = yield* Effect.flip(plain.callTool({ name: "ask" }))
      expect(refused).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "MissingClientCapability", requiredCapabilities: { elicitation: {} } } })
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("the official SDK v2 client pinned to 2026-07-28: tools and an elicitation answered by its handler", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { transport, url } = yield* front(handshakeOnly, [], { front: "stateless" }, scope)
      const { Client: Sdk2Client, StreamableHTTPClientTransport: Sdk2Transport } = yield* Effect.promise(() =>
        import("@modelcontextprotocol/client")
      )
      const client = new Sdk2Client({ name: "sdk2", version: "1.0.0" }, {
        capabilities: { elicitation: { form: {} } },
        versionNegotiation: { mode: { pin: MODERN } }
      } as never)
      client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { name: "Grace" } }))
      yield* Effect.promise(() => client.connect(new Sdk2Transport(new URL(url))))
      expect(client.getServerVersion()).toMatchObject({ name: "handshake-only" })
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((t) => t.name)).toContain("echo")
      const echo = yield* Effect.promise(() => client.callTool({ name: "echo", arguments: { text: "v2" } }))
      expect(echo.content).toEqual([{ type: "text", text: "echo: v2" }])
      const asked = yield* Effect.promise(() => client.callTool({ name: "ask", arguments: {} }))
      expect(asked.content).toEqual([{ type: "text", text: "hello Grace" }])
      expect(yield* transport.sessionIds).toEqual([])
      yield* Effect.promise(() => client.close())
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("a pool: concurrent requests spread over the processes, a crash mid-request is a clear error and is replaced, none survives", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { bridge, pids, url } = yield* front(handshakeOnly, [], { front: "stateless", upstreamPool: 3 }, scope)
      const client = yield* modernClient(url).pipe(Scope.provide(scope))
      expect(yield* bridge.upstreams).toBe(3)
      expect(pids).toHaveLength(3)

      // Three calls held open at once: each reports the pid of the process serving it.
      const serving = new Set<string>()
      const allThree = yield* Deferred.make<void>()
      const holds = yield* Effect.forEach([1, 2, 3], () =>
        client.callTool({ name: "hold" }, {
          timeout: "1 minute",
          onProgress: (p) =>
            Effect.suspend(() => {
              serving.add(p.message ?? "")
              return serving.size === 3 ? Deferred.succeed(allThree, undefined) : Effect.void
            })
        }).pipe(Effect.forkChild({ startImmediately: true })))
      yield* Deferred.await(allThree)
      expect([...serving].map(Number).sort()).toEqual([...pids].sort())
      yield* Effect.forEach(holds, Fiber.interrupt)

      // The upstream dies mid-request: the client gets an error naming it, not a hang.
      const crashed = yield* client.callTool({ name: "crash" }).pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
      expect(crashed).toMatchObject({ _tag: "RpcError", code: Bridge.ErrorCode.UpstreamClosed })
      expect((crashed as { rpcMessage: string }).rpcMessage).toMatch(/^Upstream server unavailable/)
      yield* eventually(bridge.upstreams, (n) => n === 2)
      expect(yield* bridge.upstreams).toBe(2)

      // The next request replaces it; every request is still served.
      const served = yield* Effect.forEach([1, 2, 3, 4], () => client.callTool({ name: "pid" }), { concurrency: 4 })
      expect(served).toHaveLength(4)
      // The replacement is a new process, which may take seconds to start on a loaded machine.
      const live = yield* eventually(bridge.upstreams, (n) => n === 3, 6000)
      expect(live).toBe(3)
      expect(pids).toHaveLength(4)

      yield* Scope.close(scope, Exit.void)
      const left = yield* eventually(Effect.sync(() => pids.filter(isAlive)), (alive) => alive.length === 0)
      expect(left).toEqual([])
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
})

describe("bridge: the pool's log", { timeout: 60_000 }, () => {
  it.live("says when a connection crashes, and nothing when the bridge closes its connections", () => {
    const lines: Array<string> = []
    const capture = Logger.make((options) => void lines.push(String(options.message)))
    return Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { url } = yield* front(handshakeOnly, [], { front: "stateless", upstreamPool: 2 }, scope)
      const client = yield* modernClient(url).pipe(Scope.provide(scope))
      yield* client.callTool({ name: "echo", arguments: { text: "hi" } })

      yield* Effect.flip(client.callTool({ name: "crash" }))
      yield* eventually(Effect.sync(() => lines.filter((line) => line.includes("upstream connection closed"))), (found) => found.length === 1)

      // A deliberate close is not news: the log is for connections that end on their own.
      yield* Scope.close(scope, Exit.void)
      expect(lines.filter((line) => line.includes("upstream connection closed"))).toHaveLength(1)
    }).pipe(Effect.provide([NodeHttpClient.layerUndici, Logger.layer([capture])]))
  })
})

describe("bridge: a stateless-only stdio server behind a handshake front", { timeout: 60_000 }, () => {
  it.live("the SDK 1.x client: initialize answered by the bridge, tools, elicitation through its session, progress, logging, list changes", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { bridge, pids, url } = yield* front(
        peerPath("sdk2-server.ts"),
        ["--stdio", "--mode", "modern"],
        { front: "handshake", upstreamProtocol: MODERN },
        scope
      )
      yield* Effect.promise(async () => {
        const client = new Client({ name: "sdk1", version: "1.0.0" }, { capabilities: { elicitation: {} } })
        client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Ada" } }))
        const logs: Array<unknown> = []
        client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void logs.push(n.params.level))
        let listChanged!: () => void
        const changed = new Promise<void>((resolve) => (listChanged = resolve))
        client.setNotificationHandler(ToolListChangedNotificationSchema, async () => listChanged())
        await client.connect(new StreamableHTTPClientTransport(new URL(url)))
        try {
          expect(client.getServerVersion()?.name).toBeTypeOf("string")
          const { tools } = await client.listTools()
          expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["echo", "ask_name", "slow"]))
          const echo = await client.callTool({ name: "echo", arguments: { text: "hi" } })
          expect(echo.content).toEqual([{ type: "text", text: "echo: hi" }])
          // The stateless era's own fields do not reach a client of the handshake era.
          expect(echo).not.toHaveProperty("resultType")

          const asked = await client.callTool({ name: "ask_name", arguments: {} })
          expect(asked.content).toEqual([{ type: "text", text: "hello Ada" }])

          await client.setLoggingLevel("info")
          const seen: Array<number> = []
          await client.callTool({ name: "slow", arguments: { ms: 30 } }, undefined, {
            onprogress: (p) => void seen.push(p.progress)
          })
          expect(seen.length).toBeGreaterThan(0)
          expect(logs.length).toBeGreaterThan(0)

          await client.callTool({ name: "add_tool", arguments: { name: "fresh" } })
          await changed
        } finally {
          await client.close()
        }
      })
      expect(yield* bridge.upstreams).toBe(1)
      expect(pids).toHaveLength(1)
      yield* Scope.close(scope, Exit.void)
      const left = yield* eventually(Effect.sync(() => pids.filter(isAlive)), (alive) => alive.length === 0)
      expect(left).toEqual([])
    }))

  it.live("the upstream dies mid-request: the SDK 1.x client's call fails with the bridge's error", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { pids, url } = yield* front(
        peerPath("sdk2-server.ts"),
        ["--stdio", "--mode", "modern"],
        { front: "handshake", upstreamProtocol: MODERN },
        scope
      )
      const message = yield* Effect.promise(async () => {
        const client = new Client({ name: "sdk1", version: "1.0.0" })
        await client.connect(new StreamableHTTPClientTransport(new URL(url)))
        let started!: () => void
        const running = new Promise<void>((resolve) => (started = resolve))
        const call = client.callTool({ name: "slow", arguments: { ms: 6_000 } }, undefined, {
          onprogress: () => started(),
          timeout: 60_000
        }).then(() => "finished", (e: Error) => e.message)
        await running
        process.kill(pids[0]!, "SIGKILL")
        const outcome = await call
        await client.close()
        return outcome
      })
      expect(message).toMatch(/Upstream server unavailable/)
      yield* Scope.close(scope, Exit.void)
    }))
})

describe("bridge: the stateless front's signing keys", () => {
  it.effect("a requestStateKey shorter than 32 bytes is refused before any upstream starts", () =>
    Effect.gen(function*() {
      let connects = 0
      const connect = Effect.suspend(() => {
        connects++
        return Effect.die("no upstream in this test")
      })
      const exit = yield* Effect.exit(Effect.scoped(Bridge.make({ connect, front: "stateless", requestStateKey: "a" })))
      expect(Exit.isFailure(exit) && Exit.hasDies(exit)).toBe(true)
      const defect = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Die") : undefined
      expect(defect?._tag === "Die" ? defect.defect : undefined).toMatchObject({ _tag: "DefinitionError", kind: "option" })
      expect(connects).toBe(0)
    }))
})

describe("bridge: a server of both eras behind the default front", { timeout: 60_000 }, () => {
  it.live("2026-07-28 clients share one upstream as it is: progress to each caller, logs on request, input_required unchanged, a crash replaced; a 2025 client gets a session", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { bridge, pids, transport, url } = yield* bridgeOverHttp(routerServer).pipe(Scope.provide(scope))
      const a = yield* modernClient(url, { handlers: askHandlers }).pipe(Scope.provide(scope))
      const b = yield* modernClient(url).pipe(Scope.provide(scope))

      expect(a.era).toBe("modern")
      expect(a.serverInfo.name).toBe("router-fixture")
      const pidOf = (client: McpClient.McpClientShape) =>
        Effect.map(client.callTool({ name: "pid" }), (r) => (r.structuredContent as { pid: number }).pid)
      const pid = yield* pidOf(a)
      expect(yield* pidOf(b)).toBe(pid)
      // One process, probed and kept: converting would have closed the probe's and started a pool's.
      expect(pids).toEqual([pid])
      expect(yield* transport.sessionIds).toEqual([])

      // Both clients number their progress tokens alike: each still gets its own progress.
      const progressOf = (client: McpClient.McpClientShape) =>
        Effect.map(
          Stream.runCollect(client.callToolStream({ name: "progress", arguments: { steps: 3, delayMs: 5 } })),
          (events) => events.flatMap((e) => e._tag === "Progress" ? [e.progress.progress] : [])
        )
      const [fromA, fromB] = yield* Effect.all([progressOf(a), progressOf(b)], { concurrency: 2 })
      expect(fromA).toEqual([1, 2, 3])
      expect(fromB).toEqual([1, 2, 3])

      // A log message reaches the request that asked for it.
      const logs = yield* a.logging.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild({ startImmediately: true }))
      yield* a.setLoggingLevel("info")
      yield* a.callTool({ name: "log", arguments: { level: "warning", text: "asked" } })
      expect((yield* Fiber.join(logs)).map((m) => m.data)).toEqual(["asked"])

      // The upstream's input_required round reaches the client, whose retry (the upstream's requestState) answers it.
      const elicited = yield* a.callTool({ name: "elicit", arguments: {} })
      expect(elicited.structuredContent).toMatchObject({ action: "accept", content: { name: "Ada" } })
      // The upstream's error for a client that cannot answer crosses unchanged.
      const refused = yield* b.callTool({ name: "elicit", arguments: {} }).pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
      expect(refused).toMatchObject({ _tag: "RpcError", code: -32000 })
      expect((refused as { rpcMessage: string }).rpcMessage).toMatch(/did not declare the elicitation capability/)

      // The upstream dies mid-request: -32000, and the next request starts a new one.
      const crashed = yield* Effect.flip(a.callTool({ name: "exit", arguments: { code: 3 } }))
      expect(crashed).toMatchObject({ _tag: "McpServerError", reason: { _tag: "RpcError", code: Bridge.ErrorCode.UpstreamClosed } })
      const replaced = yield* pidOf(b)
      expect(replaced).not.toBe(pid)
      expect(pids).toEqual([pid, replaced])

      // A client of the handshake era gets a session and a process of its own.
      const legacy = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: "2025-11-25" }).pipe(
        Scope.provide(scope)
      )
      expect(legacy.protocolVersion).toBe("2025-11-25")
      expect(yield* pidOf(legacy)).not.toBe(replaced)
      expect(yield* transport.sessionIds).toHaveLength(1)
      expect(yield* bridge.upstreams).toBe(2)

      yield* Scope.close(scope, Exit.void)
      const left = yield* eventually(Effect.sync(() => pids.filter(isAlive)), (alive) => alive.length === 0)
      expect(left).toEqual([])
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a malformed initialize is the client's own error: later clients of the handshake era are still forwarded as they are", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { url } = yield* bridgeOverHttp(routerServer).pipe(Scope.provide(scope))
      const answer = yield* Effect.promise(async () => {
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 7 } })
        })
        const text = await response.text()
        return JSON.parse(text.startsWith("{") ? text : text.split("\n").find((l) => l.startsWith("data:"))!.slice(5))
      })
      expect(answer.error).toMatchObject({ code: -32602 })
      const legacy = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: "2025-11-25" }).pipe(
        Scope.provide(scope)
      )
      // The upstream's own capabilities: a converting front would not offer resource subscriptions.
      expect(legacy.serverCapabilities.resources?.subscribe).toBe(true)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.live("a 2026-07-28 client of a handshake-only server through front passthrough: -32022 naming the handshake revisions", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { url } = yield* front(handshakeOnly, [], { front: "passthrough" }, scope)
      const refused = yield* Effect.flip(modernClient(url).pipe(Scope.provide(scope)))
      expect(refused).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "UnsupportedProtocolVersion", requested: MODERN } })
      // A client of both eras falls back to the handshake, served as it is.
      const dual = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), {}).pipe(Scope.provide(scope))
      expect(dual.era).toBe("legacy")
      expect(textOf(yield* dual.callTool({ name: "echo", arguments: { text: "as is" } }))).toBe("echo: as is")
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
})

describe("bridge: subscriptions of the stateless era through the default front", { timeout: 60_000 }, () => {
  it.live("effect/ai's McpServer of both eras: a client's subscriptions/listen gets the upstream's list change under its own id", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { url } = yield* front(peerPath("effect-ai-server.ts"), ["--stdio", "--mode", "dual"], {}, scope)
      const listener = yield* modernClient(url, { listen: true }).pipe(Scope.provide(scope))
      const other = yield* modernClient(url).pipe(Scope.provide(scope))
      const changed = yield* listener.listChanged.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild({ startImmediately: true }))
      yield* other.callTool({ name: "add_tool", arguments: { name: "fresh" } })
      expect((yield* Fiber.join(changed)).map((n) => n._tag)).toEqual(["ToolListChanged"])
      expect((yield* listener.listAllTools()).map((t) => t.name)).toContain("fresh")
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
})
