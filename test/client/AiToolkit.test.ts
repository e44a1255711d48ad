import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Option, Schedule, Schema, Stream } from "effect"
import { LanguageModel, Prompt, type Response, Tool } from "effect/ai"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as AiToolkit from "../../src/client/AiToolkit.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as McpManager from "../../src/client/McpManager.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import { RpcError } from "../../src/McpError.ts"
import * as McpServer from "../../src/server/McpServer.ts"

// ---------------------------------------------------------------------------
// A scripted model: each turn sees the prompt and the offered tools, and answers with encoded parts.

interface Turn {
  readonly prompt: Prompt.Prompt
  readonly tools: ReadonlyArray<string>
}

const scriptedModel = (script: ReadonlyArray<(turn: Turn) => Array<Response.PartEncoded>>) => {
  const turns: Array<Turn> = []
  const layer = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: (options) =>
        Effect.sync(() => {
          const turn = { prompt: options.prompt, tools: options.tools.map((t) => t.name) }
          const answer = script[turns.length]
          turns.push(turn)
          if (answer === undefined) throw new Error(`no script for turn ${turns.length}`)
          return answer(turn)
        }),
      streamText: () => Stream.die("streaming is not scripted")
    })
  )
  return { layer, turns }
}

const toolCall = (id: string, name: string, params: unknown): Response.PartEncoded => ({
  type: "tool-call",
  id,
  name,
  params
})

const say = (text: string): Response.PartEncoded => ({ type: "text", text })

/** The tool results the prompt hands the model, by call id. */
const toolResultsIn = (prompt: Prompt.Prompt): Record<string, Prompt.ToolResultPart> => {
  const out: Record<string, Prompt.ToolResultPart> = {}
  for (const message of prompt.content) {
    if (message.role !== "tool") continue
    for (const part of message.content) if (part.type === "tool-result") out[part.id] = part
  }
  return out
}

const outputText = (part: Prompt.ToolResultPart | undefined) =>
  part?.modelOutput === undefined ? undefined : Prompt.toolModelOutputToText(part.modelOutput)

// ---------------------------------------------------------------------------
// Servers

const CallParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})

const text = (t: string) => ({ content: [{ type: "text", text: t }] })

interface Probes {
  readonly started: Deferred.Deferred<void>
  readonly interrupted: Deferred.Deferred<void>
}

/** A calculator server: add, a tool that reports its own error, one whose calls the server refuses, one that never ends. */
const alphaServer = (probes: Probes) =>
  McpServer.make({ serverInfo: { name: "alpha", version: "1" }, stateless: true }).pipe(
    McpServer.method("tools/list", {}, () =>
      Effect.succeed({
        tools: [
          {
            name: "add",
            title: "Adder",
            description: "Adds two numbers",
            inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
            annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }
          },
          { name: "divide", description: "Divides", inputSchema: { type: "object" } },
          { name: "broken", inputSchema: { type: "object" } },
          { name: "forever", inputSchema: { type: "object" } }
        ]
      })),
    McpServer.method("tools/call", { params: CallParams }, (p) => {
      const args = p.arguments ?? {}
      switch (p.name) {
        case "add": {
          const sum = Number(args.a) + Number(args.b)
          return Effect.succeed({ ...text(String(sum)), structuredContent: { sum } })
        }
        case "divide":
          return Effect.succeed({ ...text("division by zero"), isError: true })
        case "broken":
          return Effect.fail(new RpcError({ code: -32603, rpcMessage: "the database is gone" }))
        default:
          return Deferred.succeed(probes.started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(probes.interrupted, undefined))
          )
      }
    })
  )

/** An echo server whose listing can grow (then it says so), with a tool that reports progress. */
const betaServer = () => {
  const tools = [
    { name: "echo", description: "Echoes", inputSchema: { type: "object", properties: { text: { type: "string" } } } },
    { name: "steps", inputSchema: { type: "object" } },
    { name: "grow", inputSchema: { type: "object" } }
  ]
  return McpServer.make({
    serverInfo: { name: "beta", version: "1" },
    stateless: true,
    capabilities: { tools: { listChanged: true } }
  }).pipe(
    McpServer.method("tools/list", {}, () => Effect.sync(() => ({ tools: [...tools] }))),
    McpServer.method("tools/call", { params: CallParams }, (p, ctx) =>
      Effect.gen(function*() {
        switch (p.name) {
          case "echo":
            return text(String(p.arguments?.text ?? ""))
          case "steps":
            for (let i = 1; i <= 3; i++) yield* ctx.progress(i, { total: 3 })
            return text("stepped")
          case "image":
            return { content: [{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }, { type: "text", text: "a dot" }] }
          case "grow":
            tools.push({ name: "image", inputSchema: { type: "object" } })
            yield* ctx.notify("notifications/tools/list_changed")
            return text("grown")
          default:
            return yield* new RpcError({ code: -32602, rpcMessage: `Unknown tool: ${p.name}` })
        }
      }))
  )
}

const fixturePath = new URL("../fixtures/router-stdio-server.ts", import.meta.url).pathname

const makeProbes = Effect.all({ started: Deferred.make<void>(), interrupted: Deferred.make<void>() })

const connect = (server: McpServer.McpServer, protocol: McpClient.McpClientOptions["protocol"] = "2025-11-25") =>
  Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(server)
    const pair = yield* InMemoryTransport.makePair(handle.handler)
    return yield* McpClient.fromTransport(pair.client, { protocol })
  })

/** A manager over in-memory servers; `kill` crashes a server's connection. */
const managerOf = (definitions: Record<string, McpServer.McpServer>) =>
  Effect.gen(function*() {
    const pairs = new Map<string, InMemoryTransport.InMemoryPair>()
    const manager = yield* McpManager.make({
      config: { mcpServers: Object.fromEntries(Object.keys(definitions).map((n) => [n, { command: "in-memory" }])) },
      transport: (name) =>
        Effect.gen(function*() {
          const handle = yield* McpServer.toHandler(definitions[name]!)
          const pair = yield* InMemoryTransport.makePair(handle.handler)
          pairs.set(name, pair)
          return pair.client
        }),
      client: { protocol: "2025-11-25" },
      reconnectSchedule: Schedule.spaced("1 hour")
    })
    return { manager, kill: (name: string) => pairs.get(name)!.server.kill("crashed") }
  })

// ---------------------------------------------------------------------------

describe("AiToolkit", () => {
  describe("from one client", () => {
    it.effect("each server tool is a tool: the server's JSON Schema, description and hints, not strict", () =>
      Effect.gen(function*() {
        const client = yield* connect(alphaServer(yield* makeProbes))
        const toolkit = yield* AiToolkit.make(client)
        expect(Object.keys(toolkit.tools)).toEqual(["add", "divide", "broken", "forever"])
        const add = toolkit.tools.add!
        expect(Tool.getJsonSchema(add)).toEqual({
          type: "object",
          properties: { a: { type: "number" }, b: { type: "number" } },
          required: ["a", "b"]
        })
        expect(Tool.getDescription(add)).toBe("Adds two numbers")
        expect(Tool.getStrictMode(add)).toBe(false)
        expect(Context.getUnsafe(add.annotations, Tool.Title)).toBe("Adder")
        expect(Context.get(add.annotations, Tool.Readonly)).toBe(true)
        expect(Context.get(add.annotations, Tool.Destructive)).toBe(false)
        expect(Context.get(add.annotations, Tool.Idempotent)).toBe(true)
        expect(Context.get(add.annotations, Tool.OpenWorld)).toBe(false)
        expect(AiToolkit.originOf(add)).toEqual({ server: undefined, tool: "add" })
        // No hints from the server: effect/ai's defaults.
        expect(Context.get(toolkit.tools.divide!.annotations, Tool.Destructive)).toBe(true)
      }))

    it.effect("a model call runs the tool at the server; the next turn sees its content and structured result", () => {
      const model = scriptedModel([
        () => [toolCall("c1", "add", { a: 2, b: 3 })],
        ({ prompt }) => [say(`the sum is ${outputText(toolResultsIn(prompt).c1)}`)]
      ])
      return Effect.gen(function*() {
        const client = yield* connect(alphaServer(yield* makeProbes))
        const toolkit = yield* AiToolkit.make(client)
        const first = yield* LanguageModel.generateText({ prompt: "2 + 3?", toolkit })
        expect(first.toolResults).toHaveLength(1)
        expect(first.toolResults[0]).toMatchObject({
          name: "add",
          isFailure: false,
          result: { content: [{ type: "text", text: "5" }], structuredContent: { sum: 5 } }
        })
        const second = yield* LanguageModel.generateText({
          prompt: Prompt.concat(Prompt.make("2 + 3?"), Prompt.fromResponseParts(first.content)),
          toolkit
        })
        expect(second.text).toBe("the sum is 5")
        expect(toolResultsIn(model.turns[1]!.prompt).c1).toMatchObject({ isFailure: false, result: { structuredContent: { sum: 5 } } })
      }).pipe(Effect.provide(model.layer))
    })

    it.effect("a tool's error result, a call the server refuses and arguments that are not an object reach the model as failures", () => {
      const model = scriptedModel([
        () => [toolCall("d", "divide", { a: 1, b: 0 }), toolCall("b", "broken", {}), toolCall("x", "add", [1, 2])],
        ({ prompt }) => {
          const results = toolResultsIn(prompt)
          return [say(["d", "b", "x"].map((id) => `${id}:${results[id]!.isFailure}`).join(" "))]
        }
      ])
      return Effect.gen(function*() {
        const client = yield* connect(alphaServer(yield* makeProbes))
        const toolkit = yield* AiToolkit.make(client)
        const first = yield* LanguageModel.generateText({ prompt: "try", toolkit })
        const byId = Object.fromEntries(first.toolResults.map((r) => [r.id, r]))
        expect(byId.d).toMatchObject({
          isFailure: true,
          result: {
            _tag: "McpToolFailure",
            kind: "tool-error",
            tool: "divide",
            message: "division by zero",
            content: [{ type: "text", text: "division by zero" }]
          }
        })
        expect(byId.b).toMatchObject({
          isFailure: true,
          result: { _tag: "McpToolFailure", kind: "call-failed", tool: "broken", error: "RpcError" }
        })
        expect((byId.b!.result as AiToolkit.ToolFailure).message).toContain("the database is gone")
        expect(byId.x).toMatchObject({ isFailure: true, result: { kind: "invalid-arguments", tool: "add" } })
        // The model call went on, and its next turn reads the failures.
        const second = yield* LanguageModel.generateText({
          prompt: Prompt.concat(Prompt.make("try"), Prompt.fromResponseParts(first.content)),
          toolkit
        })
        expect(second.text).toBe("d:true b:true x:true")
        expect(toolResultsIn(model.turns[1]!.prompt).d!.result).toMatchObject({ kind: "tool-error", message: "division by zero" })
      }).pipe(Effect.provide(model.layer))
    })

    it.effect("progress of a call reaches onProgress with the model's call id; images go to the model as files", () => {
      const model = scriptedModel([() => [toolCall("s1", "steps", {}), toolCall("i1", "image", {})]])
      return Effect.gen(function*() {
        const client = yield* connect(betaServer())
        yield* client.callTool({ name: "grow" })
        const seen: Array<string> = []
        const toolkit = yield* AiToolkit.make(client, {
          onProgress: (p) => Effect.sync(() => void seen.push(`${p.name}/${p.toolCallId}: ${p.progress.progress}/${p.progress.total}`))
        })
        const response = yield* LanguageModel.generateText({ prompt: "go", toolkit })
        expect(seen).toEqual(["steps/s1: 1/3", "steps/s1: 2/3", "steps/s1: 3/3"])
        const image = response.content.find((p) => p.type === "tool-result" && p.id === "i1") as Response.ToolResultPart<string, unknown, unknown>
        expect(image.modelOutput).toMatchObject([{ type: "file", mediaType: "image/png" }, { type: "text", text: "a dot" }])
        const data = (image.modelOutput![0] as Prompt.FilePart).data
        expect(Buffer.from(data as Uint8Array).toString("base64")).toBe("iVBORw0KGgo=")
      }).pipe(Effect.provide(model.layer))
    })

    for (const protocol of ["2025-11-25", "2026-07-28"] as const) {
      it.effect(`interrupting the model call cancels the MCP call: the server's handler is interrupted (${protocol})`, () => {
        const model = scriptedModel([() => [toolCall("f", "forever", {})]])
        return Effect.gen(function*() {
          const probes = yield* makeProbes
          const client = yield* connect(alphaServer(probes), protocol)
          expect(client.protocolVersion).toBe(protocol)
          const toolkit = yield* AiToolkit.make(client)
          const call = yield* LanguageModel.generateText({ prompt: "wait", toolkit }).pipe(
            Effect.forkChild({ startImmediately: true })
          )
          yield* Deferred.await(probes.started)
          yield* Fiber.interrupt(call)
          // Only the client's cancellation interrupts a handler at the server.
          yield* Deferred.await(probes.interrupted)
          expect(yield* client.connection.pendingCount).toBe(0)
        }).pipe(Effect.provide(model.layer))
      })
    }

    it.effect("model names: characters providers refuse become _; a name too long, or taken, leaves its tool out", () =>
      Effect.gen(function*() {
        const long = "x".repeat(65)
        const server = McpServer.make({ serverInfo: { name: "names", version: "1" }, stateless: true }).pipe(
          McpServer.method("tools/list", {}, () =>
            Effect.succeed({
              tools: ["files.read", "files_read", "a/b-c", long].map((name) => ({ name, inputSchema: { type: "object" } }))
            })),
          McpServer.method("tools/call", { params: CallParams }, (p) => Effect.succeed(text(p.name)))
        )
        const client = yield* connect(server)
        const toolkit = yield* AiToolkit.make(client)
        expect(Object.keys(toolkit.tools)).toEqual(["files_read", "a_b-c"])
        expect(AiToolkit.originOf(toolkit.tools.files_read!)?.tool).toBe("files.read")
        const custom = yield* AiToolkit.make(client, {
          toolName: ({ name }) => `fs_${name.length}`,
          filter: (tool) => tool.name !== long
        })
        expect(Object.keys(custom.tools)).toEqual(["fs_10", "fs_5"])
        // The tool is called by its own name at the server.
        const { content } = yield* custom.handle("fs_10", {}).pipe(
          Effect.flatMap(Stream.runLast),
          Effect.map((last) => Option.getOrThrow(last).result as AiToolkit.ToolResult)
        )
        expect(content).toEqual([{ type: "text", text: "files.read" }])
      }))

    it.effect("the Toolkit and its handler layer (toolkit, toLayer) serve a model call too", () => {
      const model = scriptedModel([() => [toolCall("e", "echo", { text: "hi" })]])
      return Effect.gen(function*() {
        const client = yield* connect(betaServer())
        const toolkit = yield* AiToolkit.toolkit(client)
        const response = yield* Effect.gen(function*() {
          return yield* LanguageModel.generateText({ prompt: "echo", toolkit: yield* toolkit })
        }).pipe(Effect.provide(AiToolkit.toLayer(toolkit, client)))
        expect(response.toolResults[0]).toMatchObject({ name: "echo", isFailure: false, result: { content: [{ text: "hi" }] } })
      }).pipe(Effect.provide(model.layer))
    })
  })

  describe("from a manager", () => {
    it.effect("a model calls tools of two servers; its second turn sees both results", () => {
      const model = scriptedModel([
        () => [toolCall("c1", "alpha__add", { a: 20, b: 22 }), toolCall("c2", "beta__echo", { text: "hello" })],
        ({ prompt }) => {
          const results = toolResultsIn(prompt)
          return [say(`${outputText(results.c1)} and ${outputText(results.c2)}`)]
        }
      ])
      return Effect.gen(function*() {
        const { manager } = yield* managerOf({ alpha: alphaServer(yield* makeProbes), beta: betaServer() })
        const toolkit = AiToolkit.fromManager(manager)
        const first = yield* LanguageModel.generateText({ prompt: "answer, then greet", toolkit })
        expect(model.turns[0]!.tools).toEqual([
          "alpha__add",
          "alpha__divide",
          "alpha__broken",
          "alpha__forever",
          "beta__echo",
          "beta__steps",
          "beta__grow"
        ])
        expect(first.toolResults.map((r) => [r.name, r.isFailure])).toEqual([["alpha__add", false], ["beta__echo", false]])
        const second = yield* LanguageModel.generateText({
          prompt: Prompt.concat(Prompt.make("answer, then greet"), Prompt.fromResponseParts(first.content)),
          toolkit
        })
        expect(second.text).toBe("42 and hello")
      }).pipe(Effect.provide(model.layer))
    })

    it.effect("after tools/list_changed the next turn is offered the new listing; a server that is down offers none", () => {
      const model = scriptedModel([
        () => [toolCall("g", "beta__grow", {})],
        () => [toolCall("i", "beta__image", {})],
        () => [say("done")]
      ])
      return Effect.gen(function*() {
        const { kill, manager } = yield* managerOf({ alpha: alphaServer(yield* makeProbes), beta: betaServer() })
        const toolkit = AiToolkit.fromManager(manager, {
          filter: (tool, server) => server === "beta" || tool.name === "add"
        })
        const changed = yield* manager.events.pipe(
          Stream.filter((e) => e._tag === "ToolsChanged" && e.server === "beta"),
          Stream.runHead,
          Effect.forkChild({ startImmediately: true })
        )
        yield* LanguageModel.generateText({ prompt: "grow", toolkit })
        yield* Fiber.join(changed)
        const second = yield* LanguageModel.generateText({ prompt: "show", toolkit })
        expect(model.turns[0]!.tools).toEqual(["alpha__add", "beta__echo", "beta__steps", "beta__grow"])
        expect(model.turns[1]!.tools).toEqual(["alpha__add", "beta__echo", "beta__steps", "beta__grow", "beta__image"])
        expect(second.toolResults[0]).toMatchObject({ name: "beta__image", isFailure: false })
        yield* kill("alpha")
        yield* manager.status("alpha").pipe(Stream.filter((s) => s._tag === "Reconnecting"), Stream.runHead)
        yield* LanguageModel.generateText({ prompt: "again", toolkit })
        expect(model.turns[2]!.tools).toEqual(["beta__echo", "beta__steps", "beta__grow", "beta__image"])
      }).pipe(Effect.provide(model.layer))
    })

    it.effect("a call to a server that went down after the listing reaches the model as a failure", () =>
      Effect.gen(function*() {
        const { kill, manager } = yield* managerOf({ alpha: alphaServer(yield* makeProbes) })
        const toolkit = yield* AiToolkit.fromManager(manager, { callOptions: { timeout: "1 second" } })
        yield* kill("alpha")
        yield* manager.status("alpha").pipe(Stream.filter((s) => s._tag === "Reconnecting"), Stream.runHead)
        const last = yield* toolkit.handle("alpha__add", { a: 1, b: 2 }).pipe(Effect.flatMap(Stream.runLast))
        const result = Option.getOrThrow(last)
        expect(result.isFailure).toBe(true)
        expect(result.result).toMatchObject({ _tag: "McpToolFailure", kind: "call-failed", server: "alpha", tool: "add" })
      }))

    it.live("over stdio child processes: tools of two servers, then a cancelled call the server process saw cancelled", () => {
      const model = scriptedModel([
        () => [toolCall("c1", "alpha__add", { a: 1, b: 2 }), toolCall("c2", "beta__echo", { text: "hi" })],
        ({ prompt }) => {
          const results = toolResultsIn(prompt)
          return [say(`${outputText(results.c1)} ${outputText(results.c2)}`)]
        },
        () => [toolCall("s", "alpha__slow", { ms: 60_000 })]
      ])
      return Effect.gen(function*() {
        const manager = yield* McpManager.make({
          config: {
            mcpServers: {
              alpha: { command: process.execPath, args: [fixturePath, "--name", "alpha"] },
              beta: { command: process.execPath, args: [fixturePath, "--name", "beta"] }
            }
          },
          transport: (_, config) =>
            McpManager.Config.isStdio(config)
              ? StdioClientTransport.make({
                command: config.command,
                args: config.args,
                shutdown: { gracePeriod: "200 millis", killAfter: "200 millis" },
                stderr: { log: false }
              })
              : Effect.die("stdio only"),
          client: { protocol: "2025-11-25" },
          slowStartThreshold: "25 seconds",
          reconnectSchedule: Schedule.spaced("1 hour")
        })
        const started = yield* Deferred.make<void>()
        const toolkit = AiToolkit.fromManager(manager, {
          filter: (tool) => ["add", "echo", "slow"].includes(tool.name),
          onProgress: (p) => p.tool === "slow" ? Deferred.succeed(started, undefined).pipe(Effect.asVoid) : Effect.void
        })
        const first = yield* LanguageModel.generateText({ prompt: "add, echo", toolkit })
        const second = yield* LanguageModel.generateText({
          prompt: Prompt.concat(Prompt.make("add, echo"), Prompt.fromResponseParts(first.content)),
          toolkit
        })
        expect(second.text).toBe("3 hi")

        const slow = yield* LanguageModel.generateText({ prompt: "sleep", toolkit }).pipe(Effect.forkChild)
        yield* Deferred.await(started)
        yield* Fiber.interrupt(slow)
        // The child process records the request it was told to cancel; each look is one round trip on the same pipe.
        let ids: ReadonlyArray<unknown> = []
        for (let i = 0; i < 200 && ids.length === 0; i++) {
          ids = ((yield* manager.callTool("alpha__cancelled")).structuredContent as { ids: Array<unknown> }).ids
        }
        expect(ids).toHaveLength(1)
      }).pipe(Effect.scoped, Effect.provide([model.layer, NodeServices.layer]))
    }, 60_000)
  })
})
