import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeHttpClient } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Option } from "effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import * as ExampleServer from "../../src/cli/ExampleServer.ts"
import { RpcError } from "../../src/McpError.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import { awaitEvent, readEvents } from "./runCli.ts"

const dir = mkdtempSync(join(tmpdir(), "example-server-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const eventsFile = () => join(dir, `events-${++files}.jsonl`)

const inMemory = (events: string) =>
  Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(ExampleServer.make({ events }))
    const pair = yield* InMemoryTransport.makePair(handle.handler)
    const client = yield* McpClient.fromTransport(pair.client)
    return { client, pair }
  })

const textOf = (result: { readonly content: ReadonlyArray<{ readonly type: string }> }) =>
  result.content.map((c) => ("text" in c ? (c as { text: string }).text : `<${c.type}>`)).join("")

describe("ExampleServer", () => {
  it.live("declares its tools, resources and prompts; echo and add answer", () =>
    Effect.gen(function*() {
      const events = eventsFile()
      const { client } = yield* inMemory(events)
      expect(client.serverInfo.name).toBe("effect-mcp-example")
      expect(Object.keys(client.serverCapabilities).sort()).toEqual(["completions", "logging", "prompts", "resources", "tools"])

      const tools = yield* client.listAllTools()
      expect(tools.map((t) => t.name)).toEqual(["echo", "add", "countdown"])
      expect(tools.find((t) => t.name === "add")?.outputSchema).toBeDefined()

      expect(textOf(yield* client.callTool({ name: "echo", arguments: { text: "héllo" } }))).toBe("héllo")
      const sum = yield* client.callTool({ name: "add", arguments: { a: 2, b: 40.5 } })
      expect(textOf(sum)).toBe("42.5")
      expect(sum.structuredContent).toEqual({ sum: 42.5 })

      const readme = yield* client.readResource("example://readme")
      expect(JSON.stringify(readme.contents)).toContain("countdown")
      const info = yield* client.readResource("example://server-info")
      expect(JSON.parse((info.contents[0] as { text: string }).text)).toMatchObject({ pid: process.pid, tools: ["echo", "add", "countdown"] })
      const missing = yield* Effect.flip(client.readResource("example://nope"))
      expect(missing._tag).toBe("McpServerError")
      expect(missing.reason).toBeInstanceOf(RpcError)

      const prompt = yield* client.getPrompt({ name: "greet", arguments: { name: "Ada" } })
      expect(JSON.stringify(prompt.messages)).toContain("Ada")
      const completion = yield* client.complete({ ref: { type: "ref/prompt", name: "greet" }, argument: { name: "name", value: "a" } })
      expect(completion.completion.values).toEqual(["Ada", "Alan"])

      // Every tool call is recorded: started, then completed, with the request id and our pid.
      const recorded = readEvents(events)
      expect(recorded.filter((e) => e.event === "started").map((e) => e.tool)).toEqual(["echo", "add"])
      expect(recorded.filter((e) => e.event === "completed").map((e) => e.tool)).toEqual(["echo", "add"])
      for (const e of recorded) {
        expect(Object.keys(e)).toEqual(["event", "tool", "requestId", "pid"])
        expect(e.pid).toBe(process.pid)
      }
    }).pipe(Effect.scoped))

  it.live("bad arguments are a tool error; an unknown tool is a protocol error", () =>
    Effect.gen(function*() {
      const { client } = yield* inMemory(eventsFile())
      const bad = yield* client.callTool({ name: "add", arguments: { a: "two", b: 1 } })
      expect(bad.isError).toBe(true)
      expect(textOf(bad)).toContain("Invalid arguments")
      const tooMany = yield* client.callTool({ name: "countdown", arguments: { steps: 0 } })
      expect(tooMany.isError).toBe(true)
      const unknown = yield* client.callTool({ name: "nope" }).pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
      expect(unknown).toBeInstanceOf(RpcError)
      expect((unknown as RpcError).code).toBe(-32602)
    }).pipe(Effect.scoped))

  it.live("countdown reports progress i of steps with a message, then finishes", () =>
    Effect.gen(function*() {
      const events = eventsFile()
      const { client } = yield* inMemory(events)
      const seen: Array<McpClient.Progress> = []
      const result = yield* client.callTool(
        { name: "countdown", arguments: { steps: 3, intervalMs: 5 } },
        { onProgress: (p) => Effect.sync(() => void seen.push(p)) }
      )
      expect(textOf(result)).toBe("countdown finished after 3 steps")
      expect(seen.map((p) => [p.progress, p.total])).toEqual([[1, 3], [2, 3], [3, 3]])
      expect(seen[0]!.message).toBe("step 1 of 3, 2 to go")
      // Without a progress token there is nothing to report, and the result is the same.
      const quiet = yield* client.request("tools/call", { name: "countdown", arguments: { steps: 2, intervalMs: 0 } })
      expect(textOf(quiet as { content: Array<{ type: string }> })).toBe("countdown finished after 2 steps")
      expect(readEvents(events).map((e) => e.event)).toEqual(["started", "completed", "started", "completed"])
    }).pipe(Effect.scoped))

  it.live("a cancelled countdown is interrupted on the server and recorded as cancelled", () =>
    Effect.gen(function*() {
      const events = eventsFile()
      const { client, pair } = yield* inMemory(events)
      const firstStep = yield* Deferred.make<void>()
      const call = yield* client.callTool(
        { name: "countdown", arguments: { steps: 1000, intervalMs: 20 } },
        { onProgress: () => Deferred.succeed(firstStep, void 0).pipe(Effect.asVoid) }
      ).pipe(Effect.forkChild)
      yield* Deferred.await(firstStep)
      yield* Fiber.interrupt(call)
      const cancelled = yield* awaitEvent(events, (e) => e.event === "cancelled")
      const started = readEvents(events).find((e) => e.event === "started")!
      expect(cancelled).toEqual({ event: "cancelled", tool: "countdown", requestId: started.requestId, pid: process.pid })
      expect(readEvents(events).some((e) => e.event === "completed")).toBe(false)
      expect(yield* pair.server.inFlight).toBe(0)
      // The session is still usable.
      expect(textOf(yield* client.callTool({ name: "echo", arguments: { text: "still here" } }))).toBe("still here")
    }).pipe(Effect.scoped))

  it.live("layerHttp: Streamable HTTP on a free port, progress over SSE, listening/stopped events, sessions forgotten", () =>
    Effect.gen(function*() {
      const events = eventsFile()
      const url = yield* Effect.scoped(Effect.gen(function*() {
        const services = yield* Layer.build(ExampleServer.layerHttp({ port: 0, events }))
        const transport = Context.get(services, HttpServerTransport.HttpServerTransport)
        const url = Option.getOrThrow(transport.url)
        expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
        expect(readEvents(events)[0]).toEqual({ event: "listening", transport: "http", url, pid: process.pid })

        yield* Effect.scoped(Effect.gen(function*() {
          // The handshake era, for its session (the example server serves both eras).
          const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: "2025-11-25" })
          let steps = 0
          const result = yield* client.callTool(
            { name: "countdown", arguments: { steps: 2, intervalMs: 5 } },
            { onProgress: () => Effect.sync(() => void steps++) }
          )
          expect(textOf(result)).toBe("countdown finished after 2 steps")
          expect(steps).toBe(2)
          expect((yield* transport.sessionIds).length).toBe(1)
        }))
        // The client's DELETE ended the session.
        expect(yield* transport.sessionIds).toEqual([])
        return url
      }))
      expect(readEvents(events).map((e) => e.event)).toEqual(["listening", "started", "completed", "stopped"])
      expect(url).toContain("/mcp")
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
})
