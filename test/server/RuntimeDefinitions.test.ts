/**
 * Tools, resources and prompts changed while the server serves
 * (`McpServer.toHandler`'s `definitions`; `Definitions.toHandler`): lists follow each change, changes are
 * announced in both eras, disabled entries answer as unknown, and calls
 * already running are not affected.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { SdkHandlerTransport } from "../fixtures/sdk-handler-transport.ts"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { Context, Deferred, Effect, Fiber, Layer, Option, Schema, Stream, SubscriptionRef } from "effect"
import { flow } from "effect/Function"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import type { RpcError } from "../../src/McpError.ts"
import { DefinitionError } from "../../src/server/DefinitionError.ts"
import * as Definitions from "../../src/server/Definitions.ts"
import type { Handler } from "../../src/server/Handler.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as Prompt from "../../src/server/Prompt.ts"
import * as Resource from "../../src/server/Resource.ts"
import * as Tool from "../../src/server/Tool.ts"

const echo = (name: string) => Tool.add(name, { parameters: { text: Schema.String } }, ({ text }) => Effect.succeed(`${name}: ${text}`))

const base = (options: Partial<McpServer.McpServerOptions> = {}) =>
  McpServer.make({ serverInfo: { name: "live", version: "1.0.0" }, stateless: true, ...options }).pipe(
    echo("echo"),
    Resource.add("docs://readme", { mimeType: "text/plain" }, () => Effect.succeed("read me")),
    Prompt.add("greet", { arguments: { name: Schema.String } }, ({ name }) => Effect.succeed(`Hello ${name}`))
  )

type McpClientShape = McpClient.McpClientShape

const connect = <R>(server: McpServer.McpServer<R>, protocol: "2025-11-25" | "2026-07-28") =>
  Effect.gen(function*() {
    const handle = yield* Definitions.toHandler(server)
    const pair = yield* InMemoryTransport.makePair(handle.handler)
    const client = yield* McpClient.fromTransport(pair.client, { protocol })
    // The handshake era announces changes to initialized sessions: a first request is served only after
    // the client's notifications/initialized was.
    yield* client.ping()
    return { client, handle, definitions: handle.definitions }
  })

/** Runs `change` and returns the list-changed notification it caused (the first one the client sees). */
const announced = <E>(client: McpClientShape, change: Effect.Effect<void, E>) =>
  Effect.gen(function*() {
    const seen = yield* Stream.take(client.listChanged, 1).pipe(Stream.runCollect, Effect.forkChild({ startImmediately: true }))
    yield* change
    const got = yield* Fiber.join(seen)
    return got[0]!._tag
  })

const toolNames = (client: McpClientShape) => Effect.map(client.listTools(), (r) => r.tools.map((t) => t.name))
/** The JSON-RPC code a client call failed with (its error is an `McpServerError` holding the `RpcError`). */
const codeOf = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.flip(effect), (e) => (e as unknown as { readonly reason: RpcError }).reason.code)

describe("definitions changed while serving", () => {
  for (const protocol of ["2025-11-25", "2026-07-28"] as const) {
    describe(`McpClient in memory (${protocol})`, () => {
      it.effect("tools: add, disable, enable, remove; lists follow and tools/list_changed is announced", () =>
        Effect.gen(function*() {
          const { client, definitions } = yield* connect(base(), protocol)
          expect(client.serverCapabilities.tools?.listChanged).toBe(true)
          expect(client.serverCapabilities.resources?.listChanged).toBe(true)
          expect(client.serverCapabilities.prompts?.listChanged).toBe(true)

          expect(yield* announced(client, definitions.add(echo("shout")))).toBe("ToolListChanged")
          expect(yield* toolNames(client)).toEqual(["echo", "shout"])
          const called = yield* client.callTool({ name: "shout", arguments: { text: "hi" } })
          expect(called.content).toEqual([{ type: "text", text: "shout: hi" }])

          expect(yield* announced(client, definitions.disable("tool", "echo"))).toBe("ToolListChanged")
          expect(yield* toolNames(client)).toEqual(["shout"])
          expect(yield* codeOf(client.callTool({ name: "echo", arguments: { text: "hi" } }))).toBe(-32602)

          expect(yield* announced(client, definitions.enable("tool", "echo"))).toBe("ToolListChanged")
          expect(yield* toolNames(client)).toEqual(["echo", "shout"])
          expect((yield* client.callTool({ name: "echo", arguments: { text: "x" } })).content).toEqual([{ type: "text", text: "echo: x" }])

          expect(yield* announced(client, definitions.remove("tool", "shout"))).toBe("ToolListChanged")
          expect(yield* toolNames(client)).toEqual(["echo"])
          expect(yield* codeOf(client.callTool({ name: "shout", arguments: { text: "hi" } }))).toBe(-32602)
        }))

      it.effect("resources and templates: add, disable, remove; a disabled resource is not found", () =>
        Effect.gen(function*() {
          const { client, definitions } = yield* connect(base(), protocol)
          const notFound = protocol === "2025-11-25" ? -32002 : -32602

          const added = definitions.add(
            Resource.add("docs://changelog", {}, () => Effect.succeed("changes"))
          )
          expect(yield* announced(client, added)).toBe("ResourceListChanged")
          const listed = yield* client.listResources()
          expect(listed.resources.map((r) => r.uri)).toEqual(["docs://readme", "docs://changelog"])
          expect((yield* client.readResource("docs://changelog")).contents[0]).toMatchObject({ text: "changes" })

          expect(yield* announced(client, definitions.disable("resource", "docs://readme"))).toBe("ResourceListChanged")
          expect((yield* client.listResources()).resources.map((r) => r.uri)).toEqual(["docs://changelog"])
          expect(yield* codeOf(client.readResource("docs://readme"))).toBe(notFound)

          const template = definitions.add(Resource.template("notes://{id}", {}, ({ id }) => Effect.succeed(`note ${id}`)))
          expect(yield* announced(client, template)).toBe("ResourceListChanged")
          expect((yield* client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual(["notes://{id}"])
          expect((yield* client.readResource("notes://7")).contents[0]).toMatchObject({ text: "note 7" })

          expect(yield* announced(client, definitions.remove("resourceTemplate", "notes://{id}"))).toBe("ResourceListChanged")
          expect((yield* client.listResourceTemplates()).resourceTemplates).toEqual([])
          expect(yield* codeOf(client.readResource("notes://7"))).toBe(notFound)
        }))

      it.effect("prompts: add, disable, remove; a disabled prompt is unknown", () =>
        Effect.gen(function*() {
          const { client, definitions } = yield* connect(base(), protocol)
          const added = definitions.add(Prompt.add("bye", {}, () => Effect.succeed("Bye")))
          expect(yield* announced(client, added)).toBe("PromptListChanged")
          expect((yield* client.listPrompts()).prompts.map((p) => p.name)).toEqual(["greet", "bye"])

          expect(yield* announced(client, definitions.disable("prompt", "greet"))).toBe("PromptListChanged")
          expect((yield* client.listPrompts()).prompts.map((p) => p.name)).toEqual(["bye"])
          expect(yield* codeOf(client.getPrompt({ name: "greet", arguments: { name: "Ada" } }))).toBe(-32602)

          expect(yield* announced(client, definitions.remove("prompt", "bye"))).toBe("PromptListChanged")
          expect(yield* codeOf(client.getPrompt({ name: "bye" }))).toBe(-32602)
        }))

      it.effect("a removed tool's call already running completes", () =>
        Effect.gen(function*() {
          const started = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const server = base().pipe(
            Tool.add("slow", {}, () => Effect.andThen(Deferred.succeed(started, undefined), Effect.as(Deferred.await(release), "done")))
          )
          const { client, definitions } = yield* connect(server, protocol)
          const call = yield* Effect.forkChild(client.callTool({ name: "slow" }), { startImmediately: true })
          yield* Deferred.await(started)
          yield* definitions.remove("tool", "slow")
          yield* Deferred.succeed(release, undefined)
          expect((yield* Fiber.join(call)).content).toEqual([{ type: "text", text: "done" }])
          expect(yield* codeOf(client.callTool({ name: "slow" }))).toBe(-32602)
        }))
    })
  }

  it.effect("a name already defined, or one not defined, is a typed failure that changes nothing", () =>
    Effect.gen(function*() {
      const { client, definitions } = yield* connect(base(), "2025-11-25")
      const twice = yield* Effect.flip(definitions.add(flow(echo("fresh"), echo("echo"))))
      expect(twice).toBeInstanceOf(DefinitionError)
      expect(twice.message).toBe(`tool "echo" is already defined`)
      // The composed step is added whole or not at all.
      expect(yield* toolNames(client)).toEqual(["echo"])
      const missing = yield* Effect.flip(definitions.remove("prompt", "nope"))
      expect(missing).toMatchObject({ _tag: "DefinitionError", kind: "prompt", name: "nope", reason: "is not defined" })
      expect(yield* Effect.flip(definitions.disable("resource", "docs://nope"))).toBeInstanceOf(DefinitionError)
    }))

  it.effect("a kind the server was defined without is refused, unless it declared listChanged for it", () =>
    Effect.gen(function*() {
      const toolsOnly = McpServer.make({ serverInfo: { name: "t", version: "1" }, stateless: true }).pipe(echo("echo"))
      const { client, definitions } = yield* connect(toolsOnly, "2026-07-28")
      expect(client.serverCapabilities.prompts).toBeUndefined()
      const refused = yield* Effect.flip(definitions.add(Prompt.add("p", {}, () => Effect.succeed("p"))))
      expect(refused).toMatchObject({ kind: "method", name: "prompts/list" })

      const empty = McpServer.make({
        serverInfo: { name: "e", version: "1" },
        stateless: true,
        capabilities: { prompts: { listChanged: true } }
      })
      const second = yield* connect(empty, "2026-07-28")
      expect(second.client.serverCapabilities.prompts).toEqual({ listChanged: true })
      expect((yield* second.client.listPrompts()).prompts).toEqual([])
      expect(yield* announced(second.client, second.definitions.add(Prompt.add("p", {}, () => Effect.succeed("p"))))).toBe(
        "PromptListChanged"
      )
      expect((yield* second.client.listPrompts()).prompts.map((p) => p.name)).toEqual(["p"])
    }))

  it.effect("a change announces its own kind only, also on a server whose catalogue was emptied", () =>
    Effect.gen(function*() {
      const empty = McpServer.make({
        serverInfo: { name: "e", version: "1" },
        stateless: true,
        capabilities: { prompts: { listChanged: true }, tools: { listChanged: true } }
      })
      const { client, definitions } = yield* connect(empty, "2025-11-25")
      const seen = yield* Stream.take(client.listChanged, 4).pipe(Stream.runCollect, Effect.forkChild({ startImmediately: true }))
      yield* definitions.add(Prompt.add("p", {}, () => Effect.succeed("p")))
      // Emptied again: the next change still names its own kind only.
      yield* definitions.remove("prompt", "p")
      yield* definitions.add(echo("echo"))
      yield* definitions.remove("tool", "echo")
      expect(Array.from(yield* Fiber.join(seen), (n) => n._tag)).toEqual([
        "PromptListChanged",
        "PromptListChanged",
        "ToolListChanged",
        "ToolListChanged"
      ])
    }))

  it.effect("McpServer.toHandler: a server declaring tools.listChanged changes its tools through handle.definitions", () =>
    Effect.gen(function*() {
      const server = McpServer.make({
        serverInfo: { name: "declared", version: "1" },
        stateless: true,
        capabilities: { tools: { listChanged: true } }
      }).pipe(echo("echo"), Prompt.add("greet", {}, () => Effect.succeed("hi")))
      const handle = yield* McpServer.toHandler(server)
      const pair = yield* InMemoryTransport.makePair(handle.handler)
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "2025-11-25" })
      yield* client.ping()
      expect(yield* announced(client, handle.definitions.add(echo("shout")))).toBe("ToolListChanged")
      expect(yield* toolNames(client)).toEqual(["echo", "shout"])
      // Prompts did not declare listChanged: they are served as defined and refuse to change.
      expect(client.serverCapabilities.prompts).toEqual({})
      const refused = yield* Effect.flip(handle.definitions.disable("prompt", "greet"))
      expect(refused).toMatchObject({ _tag: "DefinitionError", kind: "method", name: "prompts/list" })
      expect(refused.reason).toContain("capabilities.prompts.listChanged")
      expect((yield* client.listPrompts()).prompts.map((p) => p.name)).toEqual(["greet"])
    }))

  it.effect("McpServer.toHandler: a server declaring no listChanged is served as defined, and its definitions refuse every change", () =>
    Effect.gen(function*() {
      const server = McpServer.make({ serverInfo: { name: "fixed", version: "1" }, stateless: true }).pipe(echo("echo"))
      const handle = yield* McpServer.toHandler(server)
      const added = yield* Effect.flip(handle.definitions.add(echo("shout")))
      expect(added).toMatchObject({ _tag: "DefinitionError", kind: "method", name: "tools/list" })
      expect(yield* Effect.flip(handle.definitions.remove("tool", "echo"))).toMatchObject({ name: "tools/list" })
      // A name it does not have is still named as such.
      expect(yield* Effect.flip(handle.definitions.remove("tool", "nope"))).toMatchObject({ kind: "tool", reason: "is not defined" })
      const pair = yield* InMemoryTransport.makePair(handle.handler)
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "2026-07-28" })
      expect(client.serverCapabilities.tools).toEqual({})
      expect(yield* toolNames(client)).toEqual(["echo"])
    }))

  it.effect("stateless era: a list kept for resultCache.ttlMs does not outlive a change", () =>
    Effect.gen(function*() {
      const { client, definitions } = yield* connect(base({ resultCache: { ttlMs: 60_000 } }), "2026-07-28")
      expect(yield* toolNames(client)).toEqual(["echo"])
      yield* definitions.add(echo("shout"))
      expect(yield* toolNames(client)).toEqual(["echo", "shout"])
    }))

  it.live("concurrent changes and calls never see a torn list", () =>
    Effect.gen(function*() {
      const { client, definitions } = yield* connect(base(), "2026-07-28")
      const pairs = 40
      const changes = Effect.forEach(
        Array.from({ length: pairs }, (_, i) => i),
        (i) =>
          Effect.andThen(
            definitions.add(flow(echo(`a${i}`), echo(`b${i}`))),
            i % 2 === 0 ? Effect.andThen(definitions.disable("tool", `a${i}`), definitions.disable("tool", `a${i}`)) : Effect.void
          ),
        { concurrency: 4, discard: true }
      )
      const listings = Effect.forEach(
        Array.from({ length: pairs }, () => 0),
        () => toolNames(client),
        { concurrency: 4 }
      )
      const calls = Effect.forEach(
        Array.from({ length: pairs }, () => 0),
        () => client.callTool({ name: "echo", arguments: { text: "x" } }),
        { concurrency: 4, discard: true }
      )
      const [, lists] = yield* Effect.all([changes, listings, calls], { concurrency: "unbounded" })
      for (const names of lists) {
        expect(names[0]).toBe("echo")
        for (let i = 0; i < pairs; i++) {
          // Each pair was added in one change: a listing has both or neither (an even pair's a, once disabled, neither).
          if (names.includes(`a${i}`)) expect(names).toContain(`b${i}`)
          if (i % 2 === 1) expect(names.includes(`a${i}`)).toBe(names.includes(`b${i}`))
        }
      }
      const final = yield* toolNames(client)
      expect(final).toHaveLength(1 + pairs + pairs / 2)
    }))

  it.live("over Streamable HTTP: a stateless-era listen and a handshake session both hear of a change", () =>
    Effect.gen(function*() {
      const handle = yield* Definitions.toHandler(base())
      const context = yield* Layer.build(
        HttpServerTransport.layer(handle.handler, { port: 0 })
      )
      const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
      const modern = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: "2026-07-28", listen: true })
      const legacy = yield* McpClient.connect(StreamableHttpClientTransport.make({ url, listen: true }), { protocol: "2025-11-25" })
      expect(modern.era).toBe("modern")
      expect(legacy.era).toBe("legacy")
      yield* legacy.ping()
      // Over HTTP the listen is a POST of its own: wait until the server acknowledged it.
      yield* SubscriptionRef.changes(modern.subscription).pipe(
        Stream.filter((state) => state._tag === "Listening"),
        Stream.take(1),
        Stream.runDrain
      )
      const heard = yield* Effect.all(
        [modern, legacy].map((c) => Stream.take(c.listChanged, 1).pipe(Stream.runCollect, Effect.forkChild({ startImmediately: true })))
      )
      yield* handle.definitions.add(echo("shout"))
      for (const fiber of heard) expect((yield* Fiber.join(fiber))[0]!._tag).toBe("ToolListChanged")
      expect(yield* toolNames(modern)).toEqual(["echo", "shout"])
      expect(yield* toolNames(legacy)).toEqual(["echo", "shout"])
      const sdk = new Client({ name: "sdk1", version: "1.0.0" })
      yield* Effect.promise(() => sdk.connect(new StreamableHTTPClientTransport(new URL(url))))
      const changed = new Promise<void>((resolve) => sdk.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()))
      // The SDK's standalone GET stream carries session notifications: wait until it is open.
      yield* Effect.promise(() => sdk.listTools())
      yield* handle.definitions.remove("tool", "shout")
      yield* Effect.promise(() => changed)
      expect((yield* Effect.promise(() => sdk.listTools())).tools.map((t) => t.name)).toEqual(["echo"])
      yield* Effect.promise(() => sdk.close())
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici))))
})

describe("with the official SDK 1.x client", () => {
  it.live("receives tools/list_changed and lists the change", () =>
    Effect.gen(function*() {
      const handle = yield* Definitions.toHandler(base())
      const client = new Client({ name: "sdk", version: "1.0.0" }, { capabilities: {} })
      yield* Effect.promise(() => client.connect(new SdkHandlerTransport(handle.handler as Handler, Effect.runPromise)))
      expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true })
      const changed = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()))
      yield* handle.definitions.add(echo("shout"))
      yield* Effect.promise(() => changed)
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((t) => t.name)).toEqual(["echo", "shout"])
      yield* Effect.promise(() => client.close())
    }))
})

