import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, type Duration, Effect, Exit, Fiber, Layer, Queue, Ref, Scope, Stream, SubscriptionRef } from "effect"
import { TestClock } from "effect/testing"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import type { ClientTransportShape } from "../../src/client/ClientTransport.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import * as JsonRpc from "../../src/JsonRpc.ts"
import { RpcError } from "../../src/McpError.ts"
import type { Handler } from "../../src/server/Handler.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import { makeServer } from "../fixtures/router-stdio-server.ts"
import { isAlive } from "../fixtures/stdio-helpers.ts"
import * as EverythingServer from "./http/EverythingServer.ts"

const fixturePath = new URL("../fixtures/router-stdio-server.ts", import.meta.url).pathname
const everythingPath = new URL("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url)
  .pathname

const stdioFixture = (flags: ReadonlyArray<string> = []): StdioClientTransport.StdioClientConfig => ({
  command: process.execPath,
  args: [fixturePath, ...flags],
  shutdown: { gracePeriod: "300 millis", killAfter: "300 millis" }
})

/** Records every method the server receives, in order, before the real handler sees it. */
const recording = (handler: Handler) => {
  const seen: Array<string> = []
  const wrapped: Handler = (message, ctx) => {
    seen.push(message.method)
    return handler(message, ctx)
  }
  return { seen, handler: wrapped }
}

const inMemory = (
  server: McpServer.McpServer,
  options: McpClient.McpClientOptions = {},
  wrap: (h: Handler) => Handler = (h) => h
) =>
  Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(server)
    const rec = recording(wrap(handle.handler))
    const pair = yield* InMemoryTransport.makePair(rec.handler)
    // This file covers the handshake era (the server speaks both): ModernEra.test.ts covers the stateless one.
    const client = yield* McpClient.fromTransport(pair.client, { protocol: "2025-11-25", ...options })
    return { client, pair, handle, seen: rec.seen }
  })

/** Starts collecting a stream now (subscribed when this returns). */
const collect = <A, E>(stream: Stream.Stream<A, E>, n: number) =>
  Stream.take(stream, n).pipe(Stream.runCollect, Effect.forkChild({ startImmediately: true }))

const textOf = (result: { readonly content: ReadonlyArray<{ readonly type: string }> }) =>
  result.content.map((c) => ("text" in c ? (c as { text: string }).text : `<${c.type}>`)).join("")

describe("McpClient", () => {
  describe("handshake", () => {
    it.effect("initialize, then notifications/initialized; the result is on the client", () =>
      Effect.gen(function*() {
        const { client, handle, seen } = yield* inMemory(makeServer(), {
          clientInfo: { name: "tester", version: "9" },
          protocol: "2025-11-25"
        })
        expect(client.era).toBe("legacy")
        expect(client.protocolVersion).toBe("2025-11-25")
        expect(client.serverInfo.name).toBe("router-fixture")
        expect(client.instructions).toBe("A fixture server for tests.")
        expect(client.serverCapabilities.tools?.listChanged).toBe(true)
        expect(client.initializeResult.protocolVersion).toBe("2025-11-25")
        expect(seen[0]).toBe("initialize")
        // A gated method goes through: the server has seen notifications/initialized.
        yield* client.listTools()
        expect(seen.filter((m) => m !== "tools/list")).toEqual(["initialize", "notifications/initialized"])
        const [session] = yield* handle.sessions
        expect(session).toMatchObject({ phase: "ready", clientInfo: { name: "tester", version: "9" } })
        // No handlers: nothing advertised but the tasks extension, declared at initialize in this era.
        expect(session!.clientCapabilities).toEqual({ extensions: { "io.modelcontextprotocol/tasks": {} } })
      }))

    it.effect("advertises only the server-request handlers it was given", () =>
      Effect.gen(function*() {
        const { client, handle } = yield* inMemory(makeServer(), {
          handlers: {
            listRoots: () => Effect.succeed([]),
            createMessage: () => Effect.die("unused"),
            elicit: () => Effect.succeed({ action: "decline" as const })
          }
        })
        const [session] = yield* handle.sessions
        expect(session!.clientCapabilities).toEqual({
          roots: { listChanged: true },
          sampling: {},
          elicitation: { form: {} },
          extensions: { "io.modelcontextprotocol/tasks": {} }
        })
        expect(client.clientCapabilities).toEqual(session!.clientCapabilities)
      }))

    it.effect("tasks: false leaves the tasks extension out; other extensions are kept beside it", () =>
      Effect.gen(function*() {
        const off = yield* inMemory(makeServer(), { tasks: false })
        expect((yield* off.handle.sessions)[0]!.clientCapabilities).toEqual({})
        const both = yield* inMemory(makeServer(), { capabilities: { extensions: { "example.com/other": { v: 1 } } } })
        expect((yield* both.handle.sessions)[0]!.clientCapabilities).toEqual({
          extensions: { "example.com/other": { v: 1 }, "io.modelcontextprotocol/tasks": {} }
        })
      }))

    it.effect("accepts an older revision the server negotiates down to", () =>
      Effect.gen(function*() {
        const { client } = yield* inMemory(makeServer(), { protocolVersion: "2024-11-05" })
        expect(client.protocolVersion).toBe("2024-11-05")
        expect(yield* client.ping()).toBeUndefined()
      }))

    it.effect("an unsupported revision fails with UnsupportedProtocolVersion and closes the transport", () =>
      Effect.gen(function*() {
        const handle = yield* McpServer.toHandler(makeServer())
        const forced: Handler = (message, ctx) =>
          Effect.map(handle.handler(message, ctx), (reply) =>
            reply !== null && "result" in reply && message.method === "initialize"
              ? JsonRpc.success(reply.id, { ...(reply.result as object), protocolVersion: "1999-01-01" })
              : reply)
        const captured = yield* Ref.make<ClientTransportShape | undefined>(undefined)
        const error = yield* McpClient.connect(
          Effect.tap(InMemoryTransport.make(forced), (t) => Ref.set(captured, t)),
          { protocol: "2025-11-25" }
        ).pipe(Effect.unwrapReason("McpProtocolError"), Effect.flip)
        expect(error._tag).toBe("UnsupportedProtocolVersion")
        if (error._tag !== "UnsupportedProtocolVersion") return
        expect(error.received).toBe("1999-01-01")
        expect(error.requested).toBe("2025-11-25")
        expect(error.message).toContain("1999-01-01")
        expect(error.message).toContain("2025-11-25")
        const transport = (yield* Ref.get(captured))!
        const closed = yield* transport.awaitClosed
        expect(closed._tag).toBe("TransportClosed")
        expect((yield* SubscriptionRef.get(transport.state))._tag).toBe("Closed")
      }))

    it.effect("nothing but initialize goes out until the server answers it; then the initialize timeout applies", () =>
      Effect.gen(function*() {
        const rec = recording((message) => (message.method === "initialize" ? Effect.never : Effect.succeed(null)))
        const pair = yield* InMemoryTransport.makePair(rec.handler)
        const fiber = yield* McpClient.fromTransport(pair.client, { initializeTimeout: "5 seconds", protocol: "2025-11-25" }).pipe(
          Effect.forkChild({ startImmediately: true })
        )
        for (let i = 0; i < 1000 && rec.seen.length === 0; i++) yield* Effect.yieldNow
        yield* TestClock.adjust("4 seconds")
        expect(rec.seen).toEqual(["initialize"])
        expect(fiber.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust("2 seconds")
        const exit = yield* Fiber.await(fiber)
        expect(Exit.isFailure(exit)).toBe(true)
        const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
        expect(error?._tag === "Fail" && error.error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "RequestTimeout" } })
        expect(rec.seen).toEqual(["initialize"])
      }))

    it.effect("an initialize result that does not decode is a typed InvalidPayload", () =>
      Effect.gen(function*() {
        const broken: Handler = (message) =>
          Effect.succeed("id" in message ? JsonRpc.success(message.id, { protocolVersion: "2025-11-25" }) : null)
        const pair = yield* InMemoryTransport.makePair(broken)
        const error = yield* McpClient.fromTransport(pair.client).pipe(Effect.flip)
        expect(error).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "InvalidPayload" } })
      }))

    it.effect("layer(options) provides McpClient over a transport layer", () =>
      Effect.gen(function*() {
        const handle = yield* McpServer.toHandler(makeServer())
        const client = yield* Effect.provide(
          McpClient.McpClient,
          McpClient.layer().pipe(Layer.provide(InMemoryTransport.layer(handle.handler)))
        )
        expect(client.serverInfo.name).toBe("router-fixture")
      }))
  })

  describe("capabilities", () => {
    it.effect("a method the server did not declare fails fast, nothing sent", () =>
      Effect.gen(function*() {
        const toolsOnly = McpServer.make({ serverInfo: { name: "tools-only", version: "1" } }).pipe(
          McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [] }))
        )
        const { client, seen } = yield* inMemory(toolsOnly)
        const before = seen.length
        const errors = yield* Effect.all([
          Effect.flip(client.listPrompts()),
          Effect.flip(client.readResource("x://y")),
          Effect.flip(client.subscribeResource("x://y")),
          Effect.flip(client.complete({ ref: { type: "ref/prompt", name: "p" }, argument: { name: "a", value: "" } }))
        ])
        expect(errors.map((e) => [e._tag, e.reason._tag])).toEqual([
          ["McpProtocolError", "CapabilityNotSupported"],
          ["McpProtocolError", "CapabilityNotSupported"],
          ["McpProtocolError", "CapabilityNotSupported"],
          ["McpProtocolError", "CapabilityNotSupported"]
        ])
        expect(errors.map((e) => (e.reason._tag === "CapabilityNotSupported" ? e.reason.capability : ""))).toEqual([
          "prompts",
          "resources",
          "resources.subscribe",
          "completions"
        ])
        expect(seen.length).toBe(before)
        // logging is always declared by our servers, tools were declared: these go through.
        expect(yield* client.listAllTools()).toEqual([])
        yield* client.setLoggingLevel("error")
        expect(seen.slice(before).filter((m) => m !== "notifications/initialized")).toEqual([
          "tools/list",
          "logging/setLevel"
        ])
        expect(yield* Effect.flip(client.notifyRootsListChanged)).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "CapabilityNotSupported" } })
      }))
  })

  describe("typed methods against our server", () => {
    it.effect("tools: paginated stream, collected list and calls", () =>
      Effect.gen(function*() {
        const { client } = yield* inMemory(makeServer({ toolsPage: 5 }))
        const page = yield* client.listTools()
        expect(page.tools.length).toBe(5)
        expect(page.nextCursor).toBe("5")
        const all = yield* client.listAllTools()
        expect(all.length).toBe(13)
        expect(all.map((t) => t.name)).toContain("list-changed")
        const streamed = yield* Stream.runCollect(Stream.take(client.tools(), 7))
        expect(streamed.map((t) => t.name)).toEqual(all.slice(0, 7).map((t) => t.name))
        const echoed = yield* client.callTool({ name: "echo", arguments: { text: "hi" } })
        expect(textOf(echoed)).toBe("hi")
        const sum = yield* client.callTool({ name: "add", arguments: { a: 2, b: 3 } })
        expect(sum.structuredContent).toEqual({ sum: 5 })
        const unknown = yield* Effect.flip(client.callTool({ name: "nope" }))
        expect(unknown.reason).toBeInstanceOf(RpcError)
        expect(unknown).toMatchObject({ _tag: "McpServerError", reason: { code: -32602 } })
      }))

    it.effect("a server that repeats a cursor ends the stream with InvalidPayload instead of looping", () =>
      Effect.gen(function*() {
        const looping = McpServer.make({ serverInfo: { name: "loop", version: "1" } }).pipe(
          McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [], nextCursor: "again" }))
        )
        const { client } = yield* inMemory(looping)
        const error = yield* Effect.flip(client.listAllTools())
        expect(error).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "InvalidPayload", method: "tools/list" } })
      }))

    it.effect("resources, templates, read (text and blob), subscribe and unsubscribe", () =>
      Effect.gen(function*() {
        const { client } = yield* inMemory(makeServer())
        const resources = yield* client.listAllResources()
        expect(resources.map((r) => r.uri)).toEqual(["fixture://hello", "fixture://blob"])
        const templates = yield* client.listAllResourceTemplates()
        expect(templates.map((t) => t.uriTemplate)).toEqual(["fixture://item/{id}"])
        const text = yield* client.readResource("fixture://hello")
        expect(text.contents[0]).toMatchObject({ uri: "fixture://hello", text: "content of fixture://hello" })
        const blob = yield* client.readResource("fixture://blob")
        const first = blob.contents[0]!
        expect("blob" in first && Array.from(first.blob)).toEqual([1, 2, 3])
        const missing = yield* Effect.flip(client.readResource("other://x"))
        expect(missing).toMatchObject({ _tag: "McpServerError", reason: { _tag: "RpcError", code: -32002 } })
        yield* client.subscribeResource("fixture://hello")
        yield* client.subscribeResource("fixture://blob")
        yield* client.unsubscribeResource("fixture://blob")
        expect(textOf(yield* client.callTool({ name: "subscriptions" }))).toBe("fixture://hello")
      }))

    it.effect("prompts, completion and logging level", () =>
      Effect.gen(function*() {
        const { client, handle } = yield* inMemory(makeServer())
        const prompts = yield* client.listAllPrompts()
        expect(prompts.map((p) => p.name)).toEqual(["greet"])
        const prompt = yield* client.getPrompt({ name: "greet", arguments: { name: "Ada" } })
        expect(prompt.messages[0]?.content).toMatchObject({ type: "text", text: "Hello, Ada!" })
        const completion = yield* client.complete({
          ref: { type: "ref/prompt", name: "greet" },
          argument: { name: "name", value: "A" }
        })
        expect(completion.completion.values).toEqual(["Ada", "Alan"])
        yield* client.setLoggingLevel("warning")
        expect((yield* handle.sessions)[0]?.logLevel).toBe("warning")
      }))

    it.effect("request(): any other method, result undecoded", () =>
      Effect.gen(function*() {
        const custom = McpServer.make({ serverInfo: { name: "custom", version: "1" } }).pipe(
          McpServer.method("x/echo", {}, (params) => Effect.succeed({ got: params }))
        )
        const { client } = yield* inMemory(custom)
        const result = yield* client.request("x/echo", { a: 1 })
        expect(result).toMatchObject({ got: { a: 1 } })
      }))
  })

  describe("incoming notifications", () => {
    it.effect("logging messages arrive typed and respect the level; list changes too", () =>
      Effect.gen(function*() {
        const { client } = yield* inMemory(makeServer())
        const logs = yield* collect(client.logging, 2)
        const changes = yield* collect(client.listChanged, 1)
        yield* client.callTool({ name: "log", arguments: { level: "debug", text: "one" } })
        yield* client.setLoggingLevel("warning")
        yield* client.callTool({ name: "log", arguments: { level: "info", text: "dropped" } })
        yield* client.callTool({ name: "log", arguments: { level: "error", text: "two" } })
        yield* client.callTool({ name: "list-changed" })
        const received = yield* Fiber.join(logs)
        expect(received.map((l) => [l.level, l.data, l.logger])).toEqual([
          ["debug", "one", "fixture"],
          ["error", "two", "fixture"]
        ])
        expect((yield* Fiber.join(changes)).map((c) => c._tag)).toEqual(["ToolListChanged"])
      }))

    it.effect("unknown notification methods are delivered as Other", () =>
      Effect.gen(function*() {
        const { client, pair } = yield* inMemory(makeServer())
        const all = yield* collect(client.notifications, 2)
        yield* pair.server.context.notify("notifications/custom", { x: 1 })
        yield* pair.server.context.notify("notifications/resources/updated", { uri: "fixture://hello" })
        const received = yield* Fiber.join(all)
        expect(received[0]).toMatchObject({ _tag: "Other", method: "notifications/custom", params: { x: 1 } })
        expect(received[1]).toMatchObject({ _tag: "ResourceUpdated", uri: "fixture://hello" })
      }))
  })

  describe("progress", () => {
    it.effect("a progress token is always attached; onProgress and the progress stream see the steps", () =>
      Effect.gen(function*() {
        const { client } = yield* inMemory(makeServer())
        const plain = yield* client.callTool({ name: "progress", arguments: { steps: 2 } })
        expect(plain.structuredContent).toEqual({ hadToken: true })
        const seen: Array<number> = []
        const result = yield* client.callTool({ name: "progress", arguments: { steps: 3 } }, {
          onProgress: (p) => Effect.sync(() => void seen.push(p.progress))
        })
        expect(textOf(result)).toBe("done 3")
        expect(seen).toEqual([1, 2, 3])
      }))

    it.effect("callToolStream emits the progress, then the result", () =>
      Effect.gen(function*() {
        const { client } = yield* inMemory(makeServer())
        const events = yield* Stream.runCollect(client.callToolStream({ name: "progress", arguments: { steps: 3 } }))
        expect(events.map((e) => (e._tag === "Progress" ? `p${e.progress.progress}/${e.progress.total}` : "result")))
          .toEqual(["p1/3", "p2/3", "p3/3", "result"])
        const failed = yield* Effect.flip(Stream.runCollect(client.callToolStream({ name: "nope" })))
        expect(failed).toMatchObject({ _tag: "McpServerError", reason: { _tag: "RpcError", code: -32602 } })
      }))

    /** A tool that reports the progress values the test feeds it, and answers when told. */
    const steered = Effect.gen(function*() {
      const steps = yield* Queue.unbounded<number | "done">()
      const server = McpServer.make({ serverInfo: { name: "steered", version: "1" } }).pipe(
        McpServer.method("tools/call", {}, (_, ctx) =>
          Effect.gen(function*() {
            while (true) {
              const step = yield* Queue.take(steps)
              if (step === "done") return { content: [{ type: "text", text: "finished" }] }
              yield* ctx.progress(step)
            }
          }))
      )
      const { client } = yield* inMemory(server, { requestTimeout: "1 second" })
      return { client, steps }
    })

    /** Lets the in-memory link deliver what is in flight (no clock involved). */
    const settle = Effect.gen(function*() {
      for (let i = 0; i < 50; i++) yield* Effect.yieldNow
    })

    /** For each progress value: `gap` passes on the clock, then the tool reports it and the link delivers it. */
    const progressAfter = (steps: Queue.Queue<number | "done">, gap: Duration.Input, values: ReadonlyArray<number>) =>
      Effect.forEach(values, (value) =>
        Effect.gen(function*() {
          yield* TestClock.adjust(gap)
          yield* Queue.offer(steps, value)
          yield* settle
        }), { discard: true })

    it.effect("each progress restarts the idle timeout; silence past it fails the call", () =>
      Effect.gen(function*() {
        const { client, steps } = yield* steered
        const seen: Array<number> = []
        const fiber = yield* client.callTool({ name: "long" }, {
          onProgress: (p) => Effect.sync(() => void seen.push(p.progress))
        }).pipe(Effect.forkChild({ startImmediately: true }))
        yield* settle
        yield* progressAfter(steps, "900 millis", [1, 2, 3, 4])
        // 3.6 s in, well past the 1 s timeout, still alive thanks to progress.
        expect(seen).toEqual([1, 2, 3, 4])
        expect(fiber.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust("1100 millis")
        const error = yield* Effect.flip(Fiber.join(fiber))
        expect(error).toMatchObject({
          _tag: "McpTransportError",
          reason: { _tag: "RequestTimeout", method: "tools/call", timeoutMs: 1000, phase: "No response or progress" }
        })
      }))

    it.effect("without onProgress too, progress restarts the idle timeout, and its expiry names the idle phase and the call's timeout", () =>
      Effect.gen(function*() {
        const { client, steps } = yield* steered
        const fiber = yield* client.callTool({ name: "long" }, { timeout: "2 seconds" }).pipe(
          Effect.forkChild({ startImmediately: true })
        )
        yield* settle
        yield* progressAfter(steps, "1900 millis", [1, 2, 3])
        expect(fiber.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust("2100 millis")
        const error = yield* Effect.flip(Fiber.join(fiber))
        expect(error).toMatchObject({
          _tag: "McpTransportError",
          reason: { _tag: "RequestTimeout", method: "tools/call", timeoutMs: 2000, phase: "No response or progress" }
        })
        // The client's own requestTimeout when the call sets none.
        const plain = yield* client.callTool({ name: "long" }).pipe(Effect.forkChild({ startImmediately: true }))
        yield* settle
        yield* TestClock.adjust("1100 millis")
        expect(yield* Effect.flip(Fiber.join(plain))).toMatchObject({
          reason: { _tag: "RequestTimeout", method: "tools/call", timeoutMs: 1000, phase: "No response or progress" }
        })
      }))

    it.effect("out-of-order or repeated progress is ignored (and does not restart the timeout)", () =>
      Effect.gen(function*() {
        const { client, steps } = yield* steered
        const seen: Array<number> = []
        const fiber = yield* client.callTool({ name: "long" }, {
          onProgress: (p) => Effect.sync(() => void seen.push(p.progress))
        }).pipe(Effect.forkChild({ startImmediately: true }))
        for (const step of [1, 3, 2, 3]) yield* Queue.offer(steps, step)
        yield* settle
        expect(seen).toEqual([1, 3])
        yield* TestClock.adjust("900 millis")
        yield* Queue.offer(steps, 2)
        yield* settle
        yield* TestClock.adjust("200 millis")
        expect(yield* Effect.flip(Fiber.join(fiber))).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "RequestTimeout" } })
        expect(seen).toEqual([1, 3])
      }))

    it.effect("maxTotalTimeout caps the call even while progress flows", () =>
      Effect.gen(function*() {
        const { client, steps } = yield* steered
        const fiber = yield* client.callTool({ name: "long" }, { maxTotalTimeout: "2 seconds" }).pipe(
          Effect.forkChild({ startImmediately: true })
        )
        yield* settle
        yield* progressAfter(steps, "900 millis", [1, 2])
        yield* TestClock.adjust("300 millis")
        const error = yield* Effect.flip(Fiber.join(fiber))
        expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "RequestTimeout", timeoutMs: 2000, phase: "Maximum total time exceeded" } })
      }))

    it.effect("with onProgress too, under maxTotalTimeout: the callbacks see each progress, the result comes, and the cap still holds", () =>
      Effect.gen(function*() {
        const { client, steps } = yield* steered
        const seen: Array<number> = []
        const onProgress = (p: { readonly progress: number }) => Effect.sync(() => void seen.push(p.progress))
        const finished = yield* client.callTool({ name: "long" }, { maxTotalTimeout: "1 minute", onProgress }).pipe(
          Effect.forkChild({ startImmediately: true })
        )
        yield* settle
        yield* progressAfter(steps, "900 millis", [1, 2, 3])
        yield* Queue.offer(steps, "done")
        expect((yield* Fiber.join(finished)).content).toEqual([{ type: "text", text: "finished" }])
        expect(seen).toEqual([1, 2, 3])

        const capped = yield* client.callTool({ name: "long" }, { maxTotalTimeout: "2 seconds", onProgress }).pipe(
          Effect.forkChild({ startImmediately: true })
        )
        yield* settle
        yield* progressAfter(steps, "900 millis", [4, 5])
        yield* TestClock.adjust("300 millis")
        expect(yield* Effect.flip(Fiber.join(capped))).toMatchObject({
          reason: { _tag: "RequestTimeout", timeoutMs: 2000, phase: "Maximum total time exceeded" }
        })
        expect(seen).toEqual([1, 2, 3, 4, 5])
      }))

    it.effect("resetTimeoutOnProgress: false keeps the plain timeout", () =>
      Effect.gen(function*() {
        const { client, steps } = yield* steered
        const fiber = yield* client.callTool({ name: "long" }, { resetTimeoutOnProgress: false }).pipe(
          Effect.forkChild({ startImmediately: true })
        )
        yield* settle
        yield* TestClock.adjust("900 millis")
        yield* Queue.offer(steps, 1)
        yield* settle
        yield* TestClock.adjust("200 millis")
        expect(yield* Effect.flip(Fiber.join(fiber))).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "RequestTimeout", timeoutMs: 1000 } })
      }))
  })

  describe("cancellation", () => {
    it.effect("interrupting a call cancels it at the server: the handler is interrupted", () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const interrupted = yield* Deferred.make<JsonRpc.RequestId>()
        const server = McpServer.make({ serverInfo: { name: "cancel", version: "1" } }).pipe(
          McpServer.method("tools/call", {}, (_, ctx) =>
            Deferred.succeed(started, undefined).pipe(
              Effect.andThen(Effect.never),
              Effect.onInterrupt(() => Deferred.succeed(interrupted, ctx.requestId))
            ))
        )
        const { client, pair } = yield* inMemory(server)
        const fiber = yield* client.callTool({ name: "forever" }).pipe(Effect.forkChild({ startImmediately: true }))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(fiber)
        const id = yield* Deferred.await(interrupted)
        // Only notifications/cancelled interrupts a handler.
        expect(id).toBeDefined()
        expect(yield* pair.client.pendingCount).toBe(0)
      }))

    it.effect("the server's notifications/cancelled interrupts our handler for its request", () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const interrupted = yield* Deferred.make<void>()
        const server = McpServer.make({ serverInfo: { name: "asker", version: "1" } }).pipe(
          McpServer.method("tools/call", {}, (_, ctx) =>
            ctx.request("sampling/createMessage", { messages: [], maxTokens: 1 }, { timeout: 500 }).pipe(
              Effect.flip,
              Effect.map((e) => ({ content: [{ type: "text", text: e._tag }] }))
            ))
        )
        const { client } = yield* inMemory(server, {
          handlers: {
            createMessage: () =>
              Deferred.succeed(started, undefined).pipe(
                Effect.andThen(Effect.never),
                Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
              )
          }
        })
        const call = yield* client.callTool({ name: "ask" }).pipe(Effect.forkChild({ startImmediately: true }))
        // The server's timer runs from before its request reached us.
        yield* Deferred.await(started)
        yield* TestClock.adjust("600 millis")
        expect(textOf(yield* Fiber.join(call))).toBe("RequestTimeout")
        yield* Deferred.await(interrupted)
        expect(yield* Deferred.isDone(interrupted)).toBe(true)
      }))
  })

  describe("server requests", () => {
    it.effect("sampling, elicitation and roots handlers answer the server", () =>
      Effect.gen(function*() {
        const sampled = yield* Ref.make<ReadonlyArray<unknown>>([])
        const { client } = yield* inMemory(makeServer(), {
          handlers: {
            createMessage: (params) =>
              Ref.set(sampled, params.messages).pipe(
                Effect.as({ role: "assistant" as const, model: "test-model", content: { type: "text" as const, text: "sampled!" } })
              ),
            elicit: (params) =>
              Effect.succeed({ action: "accept" as const, content: { name: params.mode === "form" ? "Ada" : "?" } }),
            listRoots: () => Effect.succeed([{ uri: "file:///a", name: "a" }, { uri: "file:///b" }])
          }
        })
        expect(textOf(yield* client.callTool({ name: "sample", arguments: { prompt: "hello" } }))).toBe(
          "test-model: sampled!"
        )
        expect(yield* Ref.get(sampled)).toMatchObject([{ role: "user", content: { type: "text", text: "hello" } }])
        const elicited = yield* client.callTool({ name: "elicit" })
        expect(elicited.structuredContent).toEqual({ action: "accept", content: { name: "Ada" } })
        expect(textOf(yield* client.callTool({ name: "roots" }))).toBe("file:///a,file:///b")
      }))

    it.effect("without handlers the server's requests get -32601 and its typed helpers fail before sending", () =>
      Effect.gen(function*() {
        const { client, pair } = yield* inMemory(makeServer())
        // The server's typed helper refuses (the client declared nothing).
        const refused = yield* client.callTool({ name: "sample" }).pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
        expect(refused).toMatchObject({ _tag: "RpcError" })
        expect((refused as RpcError).rpcMessage).toContain("did not declare the sampling capability")
        // A raw request reaches the client, which answers -32601.
        for (const method of ["roots/list", "sampling/createMessage", "elicitation/create", "other/thing"]) {
          const error = yield* Effect.flip(pair.server.context.request(method, {}))
          expect(error).toMatchObject({ _tag: "RpcError", code: -32601 })
        }
        expect(yield* pair.server.context.request("ping")).toEqual({})
      }))

    it.effect("invalid sampling params are answered -32602", () =>
      Effect.gen(function*() {
        const { pair } = yield* inMemory(makeServer(), {
          handlers: { createMessage: () => Effect.die("not reached") }
        })
        const error = yield* Effect.flip(pair.server.context.request("sampling/createMessage", { messages: "nope" }))
        expect(error).toMatchObject({ _tag: "RpcError", code: -32602 })
      }))

    it.effect("a handler's RpcError is the reply", () =>
      Effect.gen(function*() {
        const { pair } = yield* inMemory(makeServer(), {
          handlers: { listRoots: () => Effect.fail(new RpcError({ code: -32000, rpcMessage: "no roots for you" })) }
        })
        const error = yield* Effect.flip(pair.server.context.request("roots/list", {}))
        expect(error).toMatchObject({ _tag: "RpcError", code: -32000, rpcMessage: "no roots for you" })
      }))
  })

  describe("keep-alive", () => {
    it.effect("failed pings past the threshold mark the connection degraded; a good ping heals it", () =>
      Effect.gen(function*() {
        const answering = yield* Ref.make(true)
        const { client } = yield* inMemory(
          makeServer(),
          { keepAlive: { interval: "10 seconds", timeout: "1 second", failureThreshold: 2 } },
          (h) => (message, ctx) =>
            message.method === "ping"
              ? Effect.flatMap(Ref.get(answering), (ok) => (ok ? h(message, ctx) : Effect.never))
              : h(message, ctx)
        )
        const settle = Effect.gen(function*() {
          for (let i = 0; i < 50; i++) yield* Effect.yieldNow
        })
        yield* settle
        yield* TestClock.adjust("10 seconds")
        yield* settle
        expect((yield* SubscriptionRef.get(client.health))._tag).toBe("Healthy")
        yield* Ref.set(answering, false)
        yield* TestClock.adjust("11 seconds")
        yield* settle
        expect((yield* SubscriptionRef.get(client.health))._tag).toBe("Healthy")
        yield* TestClock.adjust("11 seconds")
        yield* settle
        const degraded = yield* SubscriptionRef.get(client.health)
        expect(degraded).toMatchObject({ _tag: "Degraded", consecutiveFailures: 2, lastError: { _tag: "RequestTimeout" } })
        yield* Ref.set(answering, true)
        yield* TestClock.adjust("10 seconds")
        yield* settle
        expect((yield* SubscriptionRef.get(client.health))._tag).toBe("Healthy")
      }))
  })

  describe("over stdio", { timeout: 60_000 }, () => {
    it.live("our router server as a child: handshake, calls, and the scope kills the process", () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const client = yield* McpClient.connect(StdioClientTransport.make(stdioFixture())).pipe(Scope.provide(scope))
        expect(client.connection.kind).toBe("stdio")
        expect(client.serverInfo.name).toBe("router-fixture")
        const pid = (yield* client.callTool({ name: "pid" })).structuredContent as { pid: number }
        expect(isAlive(pid.pid)).toBe(true)
        const events = yield* Stream.runCollect(client.callToolStream({ name: "progress", arguments: { steps: 2 } }))
        expect(events.map((e) => e._tag)).toEqual(["Progress", "Progress", "Result"])
        yield* Scope.close(scope, Exit.void)
        expect(isAlive(pid.pid)).toBe(false)
      }).pipe(Effect.provide(NodeServices.layer)))

    it.live("a server answering an unsupported version: typed error and the process is gone", () =>
      Effect.gen(function*() {
        const pids: Array<number> = []
        const error = yield* McpClient.connect(
          Effect.tap(StdioClientTransport.make(stdioFixture(["--force-version", "2099-01-01"])), (t) =>
            Effect.sync(() => void pids.push(t.pid))),
          { protocol: "2025-11-25" }
        ).pipe(Effect.scoped, Effect.flip)
        expect(error).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "UnsupportedProtocolVersion", received: "2099-01-01" } })
        expect(isAlive(pids[0]!)).toBe(false)
      }).pipe(Effect.provide(NodeServices.layer)))

    it.live("a server that never answers initialize: the handshake times out", () =>
      Effect.gen(function*() {
        const error = yield* McpClient.connect(StdioClientTransport.make(stdioFixture(["--mute-initialize"])), {
          protocol: "2025-11-25",
          initializeTimeout: "300 millis"
        }).pipe(Effect.scoped, Effect.flip)
        expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "RequestTimeout", method: "initialize" } })
      }).pipe(Effect.provide(NodeServices.layer)))

    it.live("cancellation reaches the handler in the child process", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.connect(StdioClientTransport.make(stdioFixture()))
        const started = yield* Deferred.make<void>()
        const fiber = yield* client.callTool({ name: "slow", arguments: { ms: 60_000 } }, {
          onProgress: () => Deferred.succeed(started, undefined).pipe(Effect.asVoid)
        }).pipe(Effect.forkChild)
        yield* Deferred.await(started)
        yield* Fiber.interrupt(fiber)
        // The server's record of it, polled with a bound.
        let ids: ReadonlyArray<unknown> = []
        for (let i = 0; i < 500 && ids.length === 0; i++) {
          ids = ((yield* client.callTool({ name: "cancelled" })).structuredContent as { ids: Array<unknown> }).ids
          if (ids.length === 0) yield* Effect.sleep("10 millis")
        }
        expect(ids.length).toBe(1)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
  })

  describe("against @modelcontextprotocol/server-everything (stdio)", { timeout: 60_000 }, () => {
    const everything: StdioClientTransport.StdioClientConfig = {
      command: process.execPath,
      args: [everythingPath, "stdio"],
      shutdown: { gracePeriod: "300 millis", killAfter: "300 millis" },
      stderr: { log: false }
    }

    it.live("handshake and every typed method it supports", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.connect(StdioClientTransport.make(everything))
        expect(client.protocolVersion).toBe("2025-11-25")
        expect(client.serverInfo.name).toBe("mcp-servers/everything")
        expect(client.instructions?.length).toBeGreaterThan(0)
        yield* client.ping()

        const tools = yield* client.listAllTools()
        const names = tools.map((t) => t.name)
        expect(names).toEqual(expect.arrayContaining(["echo", "get-sum", "get-tiny-image", "trigger-long-running-operation"]))
        // Tools that need client capabilities we did not declare are not offered.
        expect(names).not.toContain("trigger-sampling-request")

        expect(textOf(yield* client.callTool({ name: "echo", arguments: { message: "hello" } }))).toBe("Echo: hello")
        expect(textOf(yield* client.callTool({ name: "get-sum", arguments: { a: 2, b: 40 } }))).toContain("42")
        const image = yield* client.callTool({ name: "get-tiny-image" })
        const png = image.content.find((c) => c.type === "image")
        expect(png !== undefined && "data" in png && png.data instanceof Uint8Array && png.data.length > 0).toBe(true)
        const structured = yield* client.callTool({ name: "get-structured-content", arguments: { location: "Chicago" } })
        expect(structured.structuredContent).toMatchObject({ temperature: expect.any(Number) })
        const links = yield* client.callTool({ name: "get-resource-links", arguments: { count: 2 } })
        expect(links.content.filter((c) => c.type === "resource_link").length).toBe(2)

        const resources = yield* client.listAllResources()
        expect(resources.length).toBeGreaterThan(0)
        const templates = yield* client.listAllResourceTemplates()
        expect(templates.map((t) => t.uriTemplate)).toContain("demo://resource/dynamic/text/{resourceId}")
        const read = yield* client.readResource("demo://resource/dynamic/text/1")
        expect(read.contents[0]).toMatchObject({ uri: "demo://resource/dynamic/text/1" })
        const blob = yield* client.readResource("demo://resource/dynamic/blob/1")
        const b = blob.contents[0]!
        expect("blob" in b && b.blob instanceof Uint8Array).toBe(true)

        const updated = yield* collect(client.resourceUpdated, 1)
        yield* client.subscribeResource("demo://resource/dynamic/text/1")
        yield* client.callTool({ name: "toggle-subscriber-updates" })
        expect((yield* Fiber.join(updated))[0]?.uri).toBe("demo://resource/dynamic/text/1")
        yield* client.callTool({ name: "toggle-subscriber-updates" })
        yield* client.unsubscribeResource("demo://resource/dynamic/text/1")

        const prompts = yield* client.listAllPrompts()
        expect(prompts.map((p) => p.name)).toEqual(expect.arrayContaining(["simple-prompt", "args-prompt", "completable-prompt"]))
        const simple = yield* client.getPrompt({ name: "simple-prompt" })
        expect(simple.messages.length).toBeGreaterThan(0)
        const args = yield* client.getPrompt({ name: "args-prompt", arguments: { city: "Paris" } })
        expect(JSON.stringify(args.messages)).toContain("Paris")
        const completion = yield* client.complete({
          ref: { type: "ref/prompt", name: "completable-prompt" },
          argument: { name: "department", value: "S" }
        })
        expect(completion.completion.values).toEqual(["Sales", "Support"])

        const logs = yield* collect(client.logging, 1)
        yield* client.setLoggingLevel("debug")
        yield* client.callTool({ name: "toggle-simulated-logging" })
        const [log] = yield* Fiber.join(logs)
        expect(log?.data).toEqual(expect.stringContaining("message"))
        yield* client.callTool({ name: "toggle-simulated-logging" })
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("progress from a long-running tool, and cancelling one", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.connect(StdioClientTransport.make(everything))
        const events = yield* Stream.runCollect(
          client.callToolStream({ name: "trigger-long-running-operation", arguments: { duration: 0.3, steps: 3 } })
        )
        expect(events.map((e) => (e._tag === "Progress" ? e.progress.progress : "done"))).toEqual([1, 2, 3, "done"])

        const fiber = yield* client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 30, steps: 3 } })
          .pipe(Effect.forkChild)
        while ((yield* client.connection.pendingCount) === 0) yield* Effect.sleep("5 millis")
        yield* Fiber.interrupt(fiber)
        expect(yield* client.connection.pendingCount).toBe(0)
        // The server took the cancellation in its stride.
        yield* client.ping()
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("sampling, elicitation and roots handlers", () =>
      Effect.gen(function*() {
        const rootsAsked = yield* Deferred.make<void>()
        const client = yield* McpClient.connect(StdioClientTransport.make(everything), {
          handlers: {
            createMessage: (params) =>
              Effect.succeed({
                role: "assistant" as const,
                model: "fake-llm",
                content: {
                  type: "text" as const,
                  text: `you said ${JSON.stringify(params.messages[0]?.content)}`
                }
              }),
            elicit: () => Effect.succeed({ action: "accept" as const, content: { name: "Ada" } }),
            listRoots: () =>
              Deferred.succeed(rootsAsked, undefined).pipe(Effect.as([{ uri: "file:///work", name: "work" }]))
          }
        })
        const names = (yield* client.listAllTools()).map((t) => t.name)
        expect(names).toEqual(expect.arrayContaining(["trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"]))
        const sampled = yield* client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "ping?" } })
        expect(textOf(sampled)).toContain("fake-llm")
        const elicited = yield* client.callTool({ name: "trigger-elicitation-request" })
        expect(textOf(elicited)).toContain("Ada")
        // The server asks for our roots on its own shortly after initialization.
        yield* Deferred.await(rootsAsked)
        const roots = yield* client.callTool({ name: "get-roots-list" })
        expect(textOf(roots)).toContain("file:///work")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
  })

  describe("against @modelcontextprotocol/server-everything (streamableHttp)", { timeout: 60_000 }, () => {
    it.live("handshake, typed methods, progress, sampling and elicitation over Streamable HTTP", () =>
      Effect.gen(function*() {
        const server = yield* EverythingServer.start("streamableHttp")
        const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url: `${server.origin}/mcp`, listen: true }), {
          handlers: {
            createMessage: () =>
              Effect.succeed({ role: "assistant" as const, model: "http-llm", content: { type: "text" as const, text: "ok" } }),
            elicit: () => Effect.succeed({ action: "decline" as const })
          }
        })
        expect(client.connection.kind).toBe("streamable-http")
        expect(client.protocolVersion).toBe("2025-11-25")
        expect(client.serverInfo.name).toBe("mcp-servers/everything")
        const names = (yield* client.listAllTools()).map((t) => t.name)
        expect(names).toEqual(expect.arrayContaining(["echo", "trigger-sampling-request", "trigger-elicitation-request"]))
        expect(textOf(yield* client.callTool({ name: "echo", arguments: { message: "over http" } }))).toBe("Echo: over http")
        const read = yield* client.readResource("demo://resource/dynamic/text/2")
        expect(read.contents[0]).toMatchObject({ uri: "demo://resource/dynamic/text/2" })
        const prompt = yield* client.getPrompt({ name: "args-prompt", arguments: { city: "Oslo" } })
        expect(JSON.stringify(prompt.messages)).toContain("Oslo")
        const events = yield* Stream.runCollect(
          client.callToolStream({ name: "trigger-long-running-operation", arguments: { duration: 0.2, steps: 2 } })
        )
        expect(events.map((e) => e._tag)).toEqual(["Progress", "Progress", "Result"])
        expect(textOf(yield* client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "x" } }))).toContain(
          "http-llm"
        )
        expect(textOf(yield* client.callTool({ name: "trigger-elicitation-request" }))).toContain("decline")
        const logs = yield* collect(client.logging, 1)
        yield* client.setLoggingLevel("debug")
        yield* client.callTool({ name: "toggle-simulated-logging" })
        expect((yield* Fiber.join(logs)).length).toBe(1)
        yield* client.callTool({ name: "toggle-simulated-logging" })
      }).pipe(Effect.scoped, Effect.provide([NodeServices.layer, NodeHttpClient.layerUndici])))
  })
})
