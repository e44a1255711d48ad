/**
 * Our McpClient against the official SDK's McpServer (1.32.2), at the
 * protocol level, in each of the SDK's modes: stdio (a child process),
 * Streamable HTTP stateful with SSE answers, stateful with JSON answers,
 * stateless, and the legacy HTTP+SSE transport (directly and through
 * FromConfig's probe). Every mode runs the same scenario; where the SDK's mode
 * cannot carry something (progress in JSON mode, server requests and
 * standalone notifications in stateless mode) the test asserts what happens
 * instead. In `auto` every mode ends in the handshake era after one
 * `server/discover` probe.
 *
 * The peer is test/fixtures/sdk-mcp-server.ts; what it observes arrives as
 * events (in-process for HTTP, on stderr for stdio).
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Scope, Stream } from "effect"
import { fileURLToPath } from "node:url"
import type * as ClientTransport from "../../src/client/ClientTransport.ts"
import * as FromConfig from "../../src/client/FromConfig.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as SseClientTransport from "../../src/client/SseClientTransport.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import { INSTRUCTIONS, SERVER_INFO } from "../fixtures/sdk-mcp-server.ts"
import { isAlive } from "../fixtures/stdio-helpers.ts"
import { beforeHandshake, recorded } from "./RecordedTransport.ts"
import { type Events, makeEvents, serveHttp } from "./SdkPeer.ts"

const Env = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)

const stdioServer = fileURLToPath(new URL("../fixtures/sdk-stdio-server.ts", import.meta.url))

const CLIENT_INFO = { name: "sdk-interop-client", version: "1.0.0" }

const textOf = (result: { readonly content: ReadonlyArray<{ readonly type: string }> }) =>
  result.content.map((c) => ("text" in c ? (c as { text: string }).text : `<${c.type}>`)).join("")

/** Starts collecting now (subscribed when this returns). */
const collect = <A, E>(stream: Stream.Stream<A, E>, n: number) =>
  Stream.take(stream, n).pipe(Stream.runCollect, Effect.forkChild({ startImmediately: true }))

/** What the client side saw of the server's requests. */
const makeClientOptions = (saw: Array<string>, protocolVersion?: McpClient.McpClientOptions["protocolVersion"]) =>
  ({
    clientInfo: CLIENT_INFO,
    ...(protocolVersion === undefined ? {} : { protocolVersion }),
    handlers: {
      createMessage: (params) =>
        Effect.sync(() => {
          saw.push(`sampling:${params.maxTokens}`)
          return { role: "assistant" as const, model: "fake-llm", content: { type: "text" as const, text: "42" } }
        }),
      elicit: (params) =>
        Effect.sync(() => {
          saw.push(`elicit:${params.mode}:${params.message}`)
          return { action: "accept" as const, content: { name: "Ada" } }
        }),
      listRoots: () =>
        Effect.sync(() => {
          saw.push("roots")
          return [{ uri: "file:///interop", name: "interop" }]
        }),
      ping: () => Effect.sync(() => void saw.push("ping"))
    }
  }) satisfies McpClient.McpClientOptions

/** What the SDK's mode can carry, so one scenario fits all. */
interface Mode {
  readonly expectedVersion: string
  /** Progress sent on the request's stream reaches the client (the SDK drops it in JSON-answer mode). */
  readonly progress: boolean
  /** Where the server's own requests travel, or "unanswerable" (stateless: the answer reaches another server). */
  readonly serverRequests: "request" | "standalone" | "unanswerable"
  /** Notifications outside any request (logging, list_changed) reach the client. */
  readonly standalone: boolean
  /** The server learnt our client info and capabilities in `notifications/initialized`. */
  readonly seesInitialized: boolean
}

type Client = McpClient.McpClientShape

const handshake = (client: Client, events: Events, mode: Mode) =>
  Effect.gen(function*() {
    expect(client.protocolVersion).toBe(mode.expectedVersion)
    expect(client.serverInfo).toMatchObject(SERVER_INFO)
    expect(client.instructions).toBe(INSTRUCTIONS)
    expect(client.serverCapabilities).toMatchObject({
      tools: { listChanged: true },
      resources: { listChanged: true },
      prompts: { listChanged: true },
      completions: {},
      logging: {}
    })
    if (mode.seesInitialized) {
      const seen = yield* events.waitFor((e) => e.startsWith("client:"))
      expect(JSON.parse(seen.slice("client:".length))).toEqual({
        info: CLIENT_INFO,
        capabilities: {
          roots: { listChanged: true },
          sampling: {},
          elicitation: { form: {} },
          extensions: { "io.modelcontextprotocol/tasks": {} }
        }
      })
    }
    yield* client.ping()
  })

const toolsResourcesPrompts = (client: Client, mode: Mode) =>
  Effect.gen(function*() {
    const tools = yield* client.listAllTools()
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(["echo", "progress", "slow", "sample", "elicit", "roots", "ping-client", "log", "add-tool"])
    )
    expect(tools.find((t) => t.name === "echo")?.inputSchema).toMatchObject({
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"]
    })
    expect(textOf(yield* client.callTool({ name: "echo", arguments: { text: "hello SDK" } }))).toBe("hello SDK")

    // The SDK reports tool failures (unknown tool, invalid arguments) as results, not JSON-RPC errors.
    const unknown = yield* client.callTool({ name: "no-such-tool" })
    expect(unknown.isError).toBe(true)
    expect(textOf(unknown)).toContain("not found")
    const invalid = yield* client.callTool({ name: "echo", arguments: { text: 7 } })
    expect(invalid.isError).toBe(true)

    const events = yield* Stream.runCollect(client.callToolStream({ name: "progress", arguments: { steps: 3 } }))
    const shape = events.map((e) => (e._tag === "Progress" ? e.progress.progress : textOf(e.result)))
    expect(shape).toEqual(mode.progress ? [1, 2, 3, "done 3 (token present)"] : ["done 3 (token present)"])
    if (mode.progress) {
      const first = events[0]
      expect(first?._tag === "Progress" ? first.progress : undefined).toMatchObject({ total: 3, message: "step 1" })
    }

    expect((yield* client.listAllResources()).map((r) => r.uri)).toEqual(["sdk://readme"])
    expect((yield* client.listAllResourceTemplates()).map((t) => t.uriTemplate)).toEqual(["sdk://items/{id}"])
    const readme = yield* client.readResource("sdk://readme")
    expect(readme.contents).toEqual([{ uri: "sdk://readme", mimeType: "text/plain", text: "hello from the SDK" }])
    const item = yield* client.readResource("sdk://items/beta")
    expect(item.contents[0]).toMatchObject({ uri: "sdk://items/beta", text: "{\"id\":\"beta\"}" })
    // The SDK's McpServer does not offer subscriptions; the client refuses before sending.
    const subscribe = yield* Effect.flip(client.subscribeResource("sdk://readme"))
    expect(subscribe).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "CapabilityNotSupported", capability: "resources.subscribe" } })

    const prompts = yield* client.listAllPrompts()
    expect(prompts.map((p) => p.name)).toEqual(["greet"])
    expect(prompts[0]?.arguments?.map((a) => a.name)).toEqual(["name"])
    const greet = yield* client.getPrompt({ name: "greet", arguments: { name: "Ada" } })
    expect(greet.messages).toEqual([{ role: "user", content: { type: "text", text: "Hello, Ada!" } }])

    const names = yield* client.complete({ ref: { type: "ref/prompt", name: "greet" }, argument: { name: "name", value: "A" } })
    expect(names.completion.values).toEqual(["Ada", "Alan"])
    const ids = yield* client.complete({
      ref: { type: "ref/resource", uri: "sdk://items/{id}" },
      argument: { name: "id", value: "b" }
    })
    expect(ids.completion.values).toEqual(["beta", "bravo"])
  })

/** Interrupting a call makes the SDK handler's `extra.signal` fire. */
const cancellation = (client: Client, events: Events) =>
  Effect.gen(function*() {
    const before = events.all().filter((e) => e.startsWith("aborted:")).length
    const fiber = yield* client.callTool({ name: "slow" }).pipe(Effect.forkChild({ startImmediately: true }))
    const started = yield* events.waitFor((e) => e.startsWith("started:"))
    yield* Fiber.interrupt(fiber)
    const id = started.slice("started:".length)
    yield* events.waitFor((e) => e === `aborted:${id}`)
    expect(events.all().filter((e) => e.startsWith("aborted:")).length).toBe(before + 1)
    expect(yield* client.connection.pendingCount).toBe(0)
    // The session carries on.
    expect(textOf(yield* client.callTool({ name: "echo", arguments: { text: "still here" } }))).toBe("still here")
  })

const serverRequests = (client: Client, saw: Array<string>, mode: Mode) =>
  Effect.gen(function*() {
    if (mode.serverRequests === "unanswerable") {
      // The request reaches our handler, but our answer is POSTed to a fresh server that never asked.
      const sampled = yield* client.callTool({ name: "sample", arguments: { timeoutMs: 500 } })
      expect(saw).toContain("sampling:16")
      expect(sampled.isError).toBe(true)
      expect(textOf(sampled)).toMatch(/timed out/i)
      // That fresh server also never saw our capabilities, so the SDK refuses to elicit at all.
      const elicited = yield* client.callTool({ name: "elicit" })
      expect(textOf(elicited)).toContain("does not support form elicitation")
      return
    }
    const via = { via: mode.serverRequests }
    expect(textOf(yield* client.callTool({ name: "sample", arguments: via }))).toBe("sampled fake-llm: 42")
    expect(textOf(yield* client.callTool({ name: "elicit", arguments: via }))).toBe(
      "elicited {\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}"
    )
    expect(textOf(yield* client.callTool({ name: "roots", arguments: via }))).toBe("file:///interop")
    expect(saw).toEqual(expect.arrayContaining(["sampling:16", "elicit:form:Who are you?", "roots"]))
    if (mode.serverRequests === "request") {
      expect(textOf(yield* client.callTool({ name: "ping-client" }))).toBe("pong")
      expect(saw).toContain("ping")
    }
  })

const notifications = (client: Client, mode: Mode) =>
  Effect.gen(function*() {
    if (!mode.standalone) {
      expect(textOf(yield* client.callTool({ name: "log" }))).toBe("logged")
      return
    }
    // The SDK filters by the level we set: debug and info never leave the server.
    yield* client.setLoggingLevel("warning")
    const logs = yield* collect(client.logging, 2)
    expect(textOf(yield* client.callTool({ name: "log" }))).toBe("logged")
    expect((yield* Fiber.join(logs)).map((l) => [l.level, l.logger, l.data])).toEqual([
      ["warning", "sdk", "warning message"],
      ["error", "sdk", "error message"]
    ])

    const changed = yield* collect(client.listChanged, 1)
    expect(textOf(yield* client.callTool({ name: "add-tool" }))).toBe("added")
    expect((yield* Fiber.join(changed)).map((n) => n._tag)).toEqual(["ToolListChanged"])
    expect((yield* client.listAllTools()).map((t) => t.name)).toContain("added")
    expect(textOf(yield* client.callTool({ name: "added" }))).toBe("I was added")
  })

const scenario = (client: Client, events: Events, saw: Array<string>, mode: Mode) =>
  Effect.gen(function*() {
    yield* handshake(client, events, mode)
    yield* toolsResourcesPrompts(client, mode)
    yield* cancellation(client, events)
    yield* serverRequests(client, saw, mode)
    yield* notifications(client, mode)
  })

/**
 * McpClient in `auto`, in its own scope, so the test can close it and then
 * look at the server. The SDK 1.x server speaks only the handshake era: the
 * client must settle on it after exactly one probe.
 */
const connect = <E, R>(
  transport: Effect.Effect<ClientTransport.ClientTransportShape, E, R | Scope.Scope>,
  options: McpClient.McpClientOptions,
  /** `false` for the HTTP+SSE transport itself: it is of the handshake era, nothing to probe. */
  probes = true
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const sent: Array<string> = []
    const client = yield* McpClient.connect(recorded(transport, sent), options).pipe(Scope.provide(scope))
    expect(client.era).toBe("legacy")
    expect(beforeHandshake(sent)).toEqual(probes ? ["server/discover", "initialize"] : ["initialize"])
    return { client, close: Scope.close(scope, Exit.void) }
  })

/** Real I/O: the live clock, Node services and undici. */
const live = (name: string, body: () => Effect.Effect<void, unknown, Scope.Scope | Layer.Success<typeof Env>>) =>
  it.live(name, () => body().pipe(Effect.scoped, Effect.provide(Env)))

const FULL: Mode = {
  expectedVersion: "2025-11-25",
  progress: true,
  serverRequests: "request",
  standalone: true,
  seesInitialized: true
}

describe("interop: McpClient against the official SDK's McpServer", () => {
  live("stdio: the SDK server as a child process; it ends on stdin EOF when we close", () =>
    Effect.gen(function*() {
      const events = makeEvents()
      const saw: Array<string> = []
      const outer = yield* Effect.scope
      let pid = 0
      const { client, close } = yield* connect(
        Effect.tap(
          StdioClientTransport.make({
            command: process.execPath,
            args: [stdioServer],
            shutdown: { gracePeriod: "5 seconds", killAfter: "1 second" },
            stderr: { log: false }
          }),
          (t) =>
            Effect.sync(() => void (pid = t.pid)).pipe(
              // In the test's scope, so the server's last words are still read after the client closed.
              Effect.andThen(
                t.stderr.pipe(
                  Stream.runForEach((line) => Effect.sync(() => line.startsWith("event ") && events.add(line.slice(6)))),
                  Effect.forkIn(outer, { startImmediately: true })
                )
              )
            )
        ),
        makeClientOptions(saw)
      )
      expect(client.connection.kind).toBe("stdio")
      yield* scenario(client, events, saw, FULL)

      yield* close
      // Closing stdin is how the session ends; the SDK server noticed and exited before any signal.
      yield* events.waitFor((e) => e === "stdin-ended")
      expect(isAlive(pid)).toBe(false)
    }))

  describe("Streamable HTTP", () => {
    const streamable = (
      serverMode: "stateful-sse" | "stateful-json",
      mode: Mode
    ) =>
      Effect.gen(function*() {
        const peer = yield* serveHttp(serverMode)
        const saw: Array<string> = []
        let http: StreamableHttpClientTransport.StreamableHttpClientTransport | undefined
        const { client, close } = yield* connect(
          Effect.tap(
            StreamableHttpClientTransport.make({ url: peer.url, listen: true }),
            (t) => Effect.sync(() => void (http = t))
          ),
          makeClientOptions(saw)
        )
        expect(client.connection.kind).toBe("streamable-http")
        const sessionId = (yield* http!.sessionId)!
        expect(sessionId).toMatch(/^[0-9a-f-]{36}$/)
        yield* peer.events.waitFor((e) => e === `session:${sessionId}`)
        // On the wire: the refused probe, then the initialize that opened the session.
        const all = peer.events.all()
        expect(all.slice(0, all.indexOf(`session:${sessionId}`))).toEqual(["POST /mcp", "POST /mcp"])
        // The standalone stream is open before anything depends on it.
        yield* peer.events.waitFor((e) => e === "GET /mcp")
        yield* scenario(client, peer.events, saw, mode)

        yield* close
        yield* peer.events.waitFor((e) => e === `closed:${sessionId}`)
        expect(peer.events.all()).toContain(`delete:${sessionId}`)
        expect(peer.sessionCount()).toBe(0)
      })

    live("stateful, SSE answers: full scenario; DELETE closes the SDK session", () => streamable("stateful-sse", FULL))

    live("stateful, SSE answers: server requests outside any request go over the standalone GET stream", () =>
      streamable("stateful-sse", { ...FULL, serverRequests: "standalone" }))

    live("stateful, JSON answers: progress is dropped by the SDK; server requests over the GET stream; DELETE", () =>
      streamable("stateful-json", { ...FULL, progress: false, serverRequests: "standalone" }))

    live("stateless: no session; a dropped connection aborts the handler; server requests cannot be answered", () =>
      Effect.gen(function*() {
        const peer = yield* serveHttp("stateless")
        const saw: Array<string> = []
        let http: StreamableHttpClientTransport.StreamableHttpClientTransport | undefined
        const { client, close } = yield* connect(
          Effect.tap(StreamableHttpClientTransport.make({ url: peer.url }), (t) => Effect.sync(() => void (http = t))),
          makeClientOptions(saw)
        )
        expect(yield* http!.sessionId).toBeUndefined()
        yield* scenario(client, peer.events, saw, {
          expectedVersion: "2025-11-25",
          progress: true,
          serverRequests: "unanswerable",
          standalone: false,
          seesInitialized: false
        })
        yield* close
        expect(peer.events.all().some((e) => e.startsWith("GET") || e.startsWith("DELETE"))).toBe(false)
      }))
  })

  describe("legacy HTTP+SSE (SSEServerTransport)", () => {
    live("SseClientTransport, asking for 2024-11-05: full scenario; the SSE stream closes with our scope", () =>
      Effect.gen(function*() {
        const peer = yield* serveHttp("legacy-sse")
        const saw: Array<string> = []
        const { client, close } = yield* connect(
          SseClientTransport.make({ url: peer.url }),
          makeClientOptions(saw, "2024-11-05"),
          false
        )
        expect(client.connection.kind).toBe("sse")
        const open = yield* peer.events.waitFor((e) => e.startsWith("sse-open:"))
        yield* scenario(client, peer.events, saw, { ...FULL, expectedVersion: "2024-11-05" })
        expect(peer.events.all().filter((e) => e.startsWith("POST /messages?sessionId=")).length).toBeGreaterThan(10)

        yield* close
        yield* peer.events.waitFor((e) => e === `sse-closed:${open.slice("sse-open:".length)}`)
        expect(peer.sessionCount()).toBe(0)
      }))

    live("FromConfig type sse: the POST probe is refused, it falls back to the SSE stream; full scenario", () =>
      Effect.gen(function*() {
        const peer = yield* serveHttp("legacy-sse")
        const saw: Array<string> = []
        let selected: Effect.Effect<FromConfig.Selected> | undefined
        const { client, close } = yield* connect(
          Effect.tap(FromConfig.make({ type: "sse", url: peer.url }), (t) => Effect.sync(() => void (selected = t.selected))),
          makeClientOptions(saw)
        )
        expect(yield* selected!).toBe("sse")
        expect(client.connection.kind).toBe("sse")
        // The era probe (server/discover) and the transport's probe (initialize) are both POSTed to the SSE URL
        // and refused; then the GET that opened the session, where initialize is sent again.
        expect(client.era).toBe("legacy")
        const http = peer.events.all().filter((e) => /^(GET|POST) \/sse/.test(e))
        expect(http.slice(0, 3)).toEqual(["POST /sse", "POST /sse", "GET /sse"])
        yield* scenario(client, peer.events, saw, FULL)

        yield* close
        yield* peer.events.waitFor((e) => e.startsWith("sse-closed:"))
        expect(peer.sessionCount()).toBe(0)
      }))

    live("FromConfig type sse against the SDK's Streamable HTTP server: no fallback", () =>
      Effect.gen(function*() {
        const peer = yield* serveHttp("stateful-sse")
        let selected: Effect.Effect<FromConfig.Selected> | undefined
        const client = yield* McpClient.connect(
          Effect.tap(FromConfig.make({ type: "sse", url: peer.url }), (t) => Effect.sync(() => void (selected = t.selected))),
          { clientInfo: CLIENT_INFO }
        )
        expect(yield* selected!).toBe("streamable-http")
        expect(client.era).toBe("legacy")
        expect(textOf(yield* client.callTool({ name: "echo", arguments: { text: "kept" } }))).toBe("kept")
        // Progress written just before the result still arrives before it (no extra hop in front of McpClient).
        for (let i = 0; i < 5; i++) {
          const events = yield* Stream.runCollect(client.callToolStream({ name: "progress", arguments: { steps: 3 } }))
          expect(events.map((e) => e._tag)).toEqual(["Progress", "Progress", "Progress", "Result"])
        }
      }))
  })
})
