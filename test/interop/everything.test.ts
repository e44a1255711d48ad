/**
 * Our McpClient against `@modelcontextprotocol/server-everything` over HTTP,
 * filling in what test/client/McpClient.test.ts (stdio, and streamableHttp
 * basics) and test/client/http/Everything.test.ts (raw transports) leave out:
 * - its `sse` mode (legacy HTTP+SSE) through McpClient, directly and through
 *   FromConfig's probe;
 * - the era: in `auto` the client probes once with `server/discover`, then
 *   runs the handshake (server-everything predates the stateless revision);
 * - over Streamable HTTP: resource subscriptions and their updates on the
 *   standalone GET stream, roots with `roots/list_changed`, cancellation, and
 *   the session's DELETE; FromConfig `type: "sse"` keeping Streamable HTTP.
 * (This version of server-everything does not paginate, so `listAll*` here
 * reads one page; multi-page listing is covered against our own server.)
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Scope, Stream } from "effect"
import type * as ClientTransport from "../../src/client/ClientTransport.ts"
import * as FromConfig from "../../src/client/FromConfig.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as SseClientTransport from "../../src/client/SseClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import * as Everything from "../client/http/EverythingServer.ts"
import { beforeHandshake, recorded } from "./RecordedTransport.ts"

const Env = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)

const live = (name: string, body: () => Effect.Effect<void, unknown, Scope.Scope | Layer.Success<typeof Env>>) =>
  it.live(name, () => body().pipe(Effect.scoped, Effect.provide(Env)), 40_000)

const textOf = (result: { readonly content: ReadonlyArray<{ readonly type: string }> }) =>
  result.content.map((c) => ("text" in c ? (c as { text: string }).text : `<${c.type}>`)).join("")

const collect = <A, E>(stream: Stream.Stream<A, E>, n: number) =>
  Stream.take(stream, n).pipe(Stream.runCollect, Effect.forkChild({ startImmediately: true }))

/** Client handlers with a root list the test can change. */
const makeOptions = (roots: Array<McpClient.Root>): McpClient.McpClientOptions => ({
  clientInfo: { name: "everything-interop", version: "1.0.0" },
  handlers: {
    createMessage: (params) =>
      Effect.succeed({
        role: "assistant" as const,
        model: "fake-llm",
        content: { type: "text" as const, text: `answer to ${JSON.stringify(params.messages[0]?.content)}` }
      }),
    elicit: (params) =>
      Effect.succeed(
        params.mode === "form"
          ? { action: "accept" as const, content: { name: "Ada", check: true, email: "ada@example.com" } }
          : { action: "decline" as const }
      ),
    listRoots: () => Effect.sync(() => [...roots])
  }
})

/**
 * McpClient in `auto`, in its own scope. server-everything speaks only the
 * handshake era: the client must settle on it after exactly one probe.
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

type Client = McpClient.McpClientShape

const LONG = "trigger-long-running-operation"

/** Progress 1..3 in order, then the result (`duration: 0`: the last progress and the result leave together). */
const longRunning = (client: Client, duration = 0.3) =>
  Effect.gen(function*() {
    const events = yield* Stream.runCollect(client.callToolStream({ name: LONG, arguments: { duration, steps: 3 } }))
    expect(events.map((e) => (e._tag === "Progress" ? e.progress.progress : "result"))).toEqual([1, 2, 3, "result"])
    const last = events[events.length - 1]!
    expect(last._tag === "Result" && textOf(last.result)).toContain("Long running operation completed")
  })

/** A long call interrupted on our side: nothing pending, the session carries on. */
const cancelLong = (client: Client) =>
  Effect.gen(function*() {
    const firstProgress = yield* collect(client.progress, 1)
    const fiber = yield* client.callTool({ name: LONG, arguments: { duration: 30, steps: 30 } }).pipe(
      Effect.forkChild({ startImmediately: true })
    )
    // The server is running it once it reports progress.
    yield* Fiber.join(firstProgress)
    yield* Fiber.interrupt(fiber)
    expect(yield* client.connection.pendingCount).toBe(0)
    expect(textOf(yield* client.callTool({ name: "echo", arguments: { message: "after" } }))).toBe("Echo: after")
  })

const serverRequests = (client: Client) =>
  Effect.gen(function*() {
    const sampled = yield* client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "6x7?" } })
    expect(textOf(sampled)).toContain("fake-llm")
    expect(textOf(sampled)).toContain("6x7?")
    const elicited = yield* client.callTool({ name: "trigger-elicitation-request" })
    expect(textOf(elicited)).toContain("Ada")
  })

const catalogue = (client: Client) =>
  Effect.gen(function*() {
    const names = (yield* client.listAllTools()).map((t) => t.name)
    expect(names).toEqual(
      expect.arrayContaining(["echo", LONG, "trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"])
    )
    expect((yield* client.listAllResources()).length).toBeGreaterThan(0)
    expect((yield* client.listAllResourceTemplates()).map((t) => t.uriTemplate)).toContain(
      "demo://resource/dynamic/text/{resourceId}"
    )
    const read = yield* client.readResource("demo://resource/dynamic/text/3")
    expect(read.contents[0]).toMatchObject({ uri: "demo://resource/dynamic/text/3" })
    expect((yield* client.listAllPrompts()).map((p) => p.name)).toContain("args-prompt")
    const completion = yield* client.complete({
      ref: { type: "ref/prompt", name: "completable-prompt" },
      argument: { name: "department", value: "S" }
    })
    expect(completion.completion.values).toEqual(["Sales", "Support"])
  })

/** Subscribe, have the server push an update, unsubscribe. */
const subscription = (client: Client) =>
  Effect.gen(function*() {
    const uri = "demo://resource/dynamic/text/1"
    const updated = yield* collect(client.resourceUpdated, 1)
    yield* client.subscribeResource(uri)
    yield* client.callTool({ name: "toggle-subscriber-updates" })
    expect((yield* Fiber.join(updated)).map((n) => n.uri)).toEqual([uri])
    yield* client.callTool({ name: "toggle-subscriber-updates" })
    yield* client.unsubscribeResource(uri)
  })

/** The server asks for roots at start; after `roots/list_changed` it asks again and sees the new list. */
const rootsRoundTrip = (client: Client, roots: Array<McpClient.Root>) =>
  Effect.gen(function*() {
    expect(textOf(yield* client.callTool({ name: "get-roots-list" }))).toContain("file:///first")
    const refreshed = yield* collect(
      Stream.filter(client.logging, (l) => String(l.data).includes("2 root(s)")),
      1
    )
    roots.push({ uri: "file:///second", name: "second" })
    yield* client.notifyRootsListChanged
    yield* Fiber.join(refreshed)
    const listed = textOf(yield* client.callTool({ name: "get-roots-list" }))
    expect(listed).toContain("file:///first")
    expect(listed).toContain("file:///second")
  })

describe("interop: McpClient against server-everything over HTTP", () => {
  live("sse mode (legacy HTTP+SSE) through SseClientTransport: the whole client surface; disconnect on close", () =>
    Effect.gen(function*() {
      const server = yield* Everything.start("sse")
      const roots = [{ uri: "file:///first", name: "first" }]
      const { client, close } = yield* connect(SseClientTransport.make({ url: `${server.origin}/sse` }), makeOptions(roots), false)
      expect(client.connection.kind).toBe("sse")
      expect(client.protocolVersion).toBe("2025-11-25")
      expect(client.serverInfo.name).toBe("mcp-servers/everything")
      yield* client.ping()
      yield* catalogue(client)
      yield* longRunning(client)
      yield* cancelLong(client)
      yield* serverRequests(client)
      yield* subscription(client)
      yield* rootsRoundTrip(client, roots)
      yield* close
      yield* server.waitForLine((line) => line.startsWith("Client Disconnected"))
    }))

  live("sse mode through FromConfig type sse: probe, fallback, progress and sampling", () =>
    Effect.gen(function*() {
      const server = yield* Everything.start("sse")
      let selected: Effect.Effect<FromConfig.Selected> | undefined
      const { client } = yield* connect(
        Effect.tap(FromConfig.make({ type: "sse", url: `${server.origin}/sse` }), (t) =>
          Effect.sync(() => void (selected = t.selected))),
        makeOptions([{ uri: "file:///first", name: "first" }])
      )
      expect(yield* selected!).toBe("sse")
      expect(client.connection.kind).toBe("sse")
      // Every progress before its result, even when they leave back to back (FromConfig must add no
      // hop in front of McpClient that a response could overtake).
      for (let i = 0; i < 5; i++) yield* longRunning(client, 0)
      yield* serverRequests(client)
    }))

  live("streamableHttp: subscriptions and roots over the GET stream, cancellation, DELETE on close", () =>
    Effect.gen(function*() {
      const server = yield* Everything.start("streamableHttp")
      const roots = [{ uri: "file:///first", name: "first" }]
      let http: StreamableHttpClientTransport.StreamableHttpClientTransport | undefined
      const { client, close } = yield* connect(
        Effect.tap(
          StreamableHttpClientTransport.make({ url: `${server.origin}/mcp`, listen: true }),
          (t) => Effect.sync(() => void (http = t))
        ),
        makeOptions(roots)
      )
      const sessionId = yield* http!.sessionId
      expect(sessionId).toBeDefined()
      yield* server.waitForLine((line) => line.includes("Received MCP GET request"))
      yield* subscription(client)
      yield* rootsRoundTrip(client, roots)
      yield* cancelLong(client)
      yield* close
      yield* server.waitForLine((line) => line.includes(`session termination request for session ${sessionId}`))
    }))

  live("streamableHttp through FromConfig type sse: kept, with progress before every result", () =>
    Effect.gen(function*() {
      const server = yield* Everything.start("streamableHttp")
      let selected: Effect.Effect<FromConfig.Selected> | undefined
      const { client } = yield* connect(
        Effect.tap(FromConfig.make({ type: "sse", url: `${server.origin}/mcp` }), (t) =>
          Effect.sync(() => void (selected = t.selected))),
        makeOptions([])
      )
      expect(yield* selected!).toBe("streamable-http")
      for (let i = 0; i < 5; i++) yield* longRunning(client, 0)
      yield* serverRequests(client)
    }))
})
