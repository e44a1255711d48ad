import { describe, expect, it } from "@effect/vitest"
import { SdkHandlerTransport } from "../fixtures/sdk-handler-transport.ts"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { Effect, Ref, Schema, SchemaGetter } from "effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import { RpcError } from "../../src/McpError.ts"
import { DefinitionError } from "../../src/server/DefinitionError.ts"
import type { Handler } from "../../src/server/Handler.ts"
import * as JsonSchema from "../../src/server/JsonSchema.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as Prompt from "../../src/server/Prompt.ts"
import * as Resource from "../../src/server/Resource.ts"
import * as Tool from "../../src/server/Tool.ts"

class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { id: Schema.String }) {}

const Point = Schema.Struct({ x: Schema.Number, y: Schema.Number })

const subscribed: Array<string> = []

const definitions = <R>(server: McpServer.McpServer<R>) =>
  server.pipe(
    Tool.add("add", {
      description: "Adds two numbers",
      parameters: { a: Schema.Number.annotate({ description: "the first" }), b: Schema.Number },
      success: Schema.Struct({ sum: Schema.Number }),
      annotations: { readOnlyHint: true }
    }, ({ a, b }) => Effect.succeed({ sum: a + b })),
    Tool.add("count", { parameters: { text: Schema.String }, success: Schema.Int }, ({ text }) => Effect.succeed(text.length)),
    Tool.add("lookup", {
      parameters: Schema.Struct({ id: Schema.String }),
      success: Point,
      failure: NotFound
    }, ({ id }) => id === "origin" ? Effect.succeed({ x: 0, y: 0 }) : Effect.fail(new NotFound({ id }))),
    Tool.add("ratio", { parameters: { a: Schema.Number }, success: Schema.Number }, ({ a }) => Effect.succeed(a / 0)),
    Tool.add("raw", {}, () => Effect.succeed("plain text")),
    Tool.add("region", {
      parameters: { region: Schema.String.annotate(JsonSchema.header("Region")), text: Schema.optionalKey(Schema.String) }
    }, ({ region }) => Effect.succeed(`region: ${region}`)),
    Resource.add("docs://readme", { name: "readme", mimeType: "text/markdown" }, () => Effect.succeed("# Hello")),
    Resource.add("docs://logo", { mimeType: "image/png" }, () => Effect.succeed(new Uint8Array([137, 80, 78, 71]))),
    Resource.template("users://{id}/profile", {
      name: "profile",
      mimeType: "application/json",
      variables: { id: Schema.NumberFromString.check(Schema.isInt()) },
      complete: { id: (typed) => Effect.succeed(["1", "2", "12"].filter((id) => id.startsWith(typed))) }
    }, ({ id }, uri) => Effect.succeed([{ text: JSON.stringify({ id, double: id * 2 }), uri }])),
    Resource.template("files://{+path}", {}, ({ path }) => Effect.succeed(`file ${path}`)),
    Resource.subscriptions({
      subscribe: (uri) => Effect.sync(() => void subscribed.push(`+${uri}`)),
      unsubscribe: (uri) => Effect.sync(() => void subscribed.push(`-${uri}`))
    }),
    Prompt.add("greet", {
      description: "Greets someone",
      arguments: {
        name: Schema.String.annotate({ description: "who" }),
        times: Schema.optionalKey(Schema.NumberFromString)
      },
      complete: { name: (typed, { arguments: args }) => Effect.succeed(["Ada", "Alan", `${args.times ?? "?"}`].filter((n) => n.startsWith(typed))) }
    }, ({ name, times }) => Effect.succeed(`Hello ${name}`.repeat(times ?? 1)))
  )

const legacyServer = definitions(McpServer.make({ serverInfo: { name: "defs", version: "1.0.0" } }))
const dualServer = definitions(McpServer.make({ serverInfo: { name: "defs", version: "1.0.0" }, stateless: true }))

const connect = (server: McpServer.McpServer, protocol: "2025-11-25" | "2026-07-28") =>
  Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(server)
    const pair = yield* InMemoryTransport.makePair(handle.handler)
    const client = yield* McpClient.fromTransport(pair.client, { protocol })
    return { client, handle }
  })

const firstText = (result: { readonly content: ReadonlyArray<unknown> }) => (result.content[0] as { text: string }).text

describe("Tool, Resource and Prompt definitions", () => {
  for (const protocol of ["2025-11-25", "2026-07-28"] as const) {
    const server = protocol === "2025-11-25" ? legacyServer : dualServer
    describe(`with McpClient (${protocol})`, () => {
      it.effect("tools/list gives the generated schemas", () =>
        Effect.gen(function*() {
          const { client } = yield* connect(server, protocol)
          expect(client.era).toBe(protocol === "2025-11-25" ? "legacy" : "modern")
          const { tools } = yield* client.listTools()
          const byName = Object.fromEntries(tools.map((t) => [t.name, t]))
          expect(byName.add).toMatchObject({
            name: "add",
            description: "Adds two numbers",
            inputSchema: {
              type: "object",
              properties: { a: { type: "number", description: "the first" }, b: { type: "number" } },
              required: ["a", "b"]
            },
            outputSchema: { type: "object", properties: { sum: { type: "number" } }, required: ["sum"] },
            annotations: { readOnlyHint: true }
          })
          expect(byName.count.outputSchema).toEqual({
            type: "object",
            properties: { result: { type: "integer" } },
            required: ["result"]
          })
          expect(byName.raw.inputSchema).toEqual({ type: "object", properties: {} })
          expect(byName.raw.outputSchema).toBeUndefined()
          expect(byName.region.inputSchema.properties).toEqual({
            region: { type: "string", "x-mcp-header": "Region" },
            text: { type: "string" }
          })
        }).pipe(Effect.scoped))

      it.effect("tools/call decodes arguments, encodes results and reports failures by name", () =>
        Effect.gen(function*() {
          const { client } = yield* connect(server, protocol)
          const sum = yield* client.callTool({ name: "add", arguments: { a: 1, b: 2 } })
          expect(sum.isError).not.toBe(true)
          expect(sum.structuredContent).toEqual({ sum: 3 })
          expect(JSON.parse(firstText(sum))).toEqual({ sum: 3 })

          const count = yield* client.callTool({ name: "count", arguments: { text: "four" } })
          expect(count.structuredContent).toEqual({ result: 4 })
          expect(firstText(count)).toBe("4")

          const invalid = yield* client.callTool({ name: "add", arguments: { a: 1, b: "two" } })
          expect(invalid.isError).toBe(true)
          expect(firstText(invalid)).toContain(`Invalid arguments for tool "add"`)
          expect(firstText(invalid)).toContain(`["b"]`)
          const missing = yield* client.callTool({ name: "add", arguments: { a: 1 } })
          expect(missing.isError).toBe(true)
          expect(firstText(missing)).toContain("Missing key")

          const found = yield* client.callTool({ name: "lookup", arguments: { id: "origin" } })
          expect(found.structuredContent).toEqual({ x: 0, y: 0 })
          const notFound = yield* client.callTool({ name: "lookup", arguments: { id: "mars" } })
          expect(notFound.isError).toBe(true)
          expect(JSON.parse(firstText(notFound))).toEqual({ _tag: "NotFound", id: "mars" })
          expect(notFound.structuredContent).toBeUndefined()

          // Infinity is no JSON number: the success schema refuses to encode it.
          const ratio = yield* client.callTool({ name: "ratio", arguments: { a: 1 } }).pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
          expect(ratio).toBeInstanceOf(RpcError)
          expect((ratio as RpcError).code).toBe(-32603)
          // The non-finite spellings of Effect's JSON codec are not numbers here either.
          const nan = yield* client.callTool({ name: "ratio", arguments: { a: "NaN" } })
          expect(nan.isError).toBe(true)

          const raw = yield* client.callTool({ name: "raw" })
          expect(raw.content).toEqual([{ type: "text", text: "plain text" }])

          const unknown = yield* client.callTool({ name: "nope" }).pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
          expect((unknown as RpcError).code).toBe(-32602)
          expect(unknown.message).toContain("Unknown tool: nope")
        }).pipe(Effect.scoped))

      it.effect("resources: fixed URIs, templates with typed variables, text and binary contents", () =>
        Effect.gen(function*() {
          const { client } = yield* connect(server, protocol)
          const { resources } = yield* client.listResources()
          expect(resources).toEqual([
            { uri: "docs://readme", name: "readme", mimeType: "text/markdown" },
            { uri: "docs://logo", name: "docs://logo", mimeType: "image/png" }
          ])
          const { resourceTemplates } = yield* client.listResourceTemplates()
          expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(["users://{id}/profile", "files://{+path}"])

          const readme = yield* client.readResource("docs://readme")
          expect(readme.contents).toEqual([{ uri: "docs://readme", mimeType: "text/markdown", text: "# Hello" }])
          const logo = yield* client.readResource("docs://logo")
          // McpClient decodes the base64 back to bytes.
          expect(logo.contents).toEqual([{ uri: "docs://logo", mimeType: "image/png", blob: new Uint8Array([137, 80, 78, 71]) }])

          const profile = yield* client.readResource("users://21/profile")
          expect(profile.contents).toEqual([
            { uri: "users://21/profile", mimeType: "application/json", text: JSON.stringify({ id: 21, double: 42 }) }
          ])
          const file = yield* client.readResource("files://a/b%20c.txt")
          expect(file.contents[0]).toMatchObject({ text: "file a/b c.txt" })

          // Resource not found: -32002 up to 2025-11-25; 2026-07-28 forbids it and says -32602.
          const notFound = protocol === "2026-07-28" ? -32602 : -32002
          const notANumber = yield* client.readResource("users://ada/profile").pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
          expect((notANumber as RpcError).code).toBe(notFound)
          expect(notANumber.message).toContain("users://{id}/profile")
          const nowhere = yield* client.readResource("other://x").pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
          expect((nowhere as RpcError).code).toBe(notFound)
          expect((nowhere as RpcError).data).toEqual({ uri: "other://x" })
        }).pipe(Effect.scoped))

      it.effect("prompts with decoded arguments; completions for prompt arguments and template variables", () =>
        Effect.gen(function*() {
          const { client } = yield* connect(server, protocol)
          const { prompts } = yield* client.listPrompts()
          expect(prompts).toEqual([{
            name: "greet",
            description: "Greets someone",
            arguments: [
              { name: "name", description: "who", required: true },
              { name: "times", required: false }
            ]
          }])
          const got = yield* client.getPrompt({ name: "greet", arguments: { name: "Ada", times: "2" } })
          expect(got.messages).toEqual([{ role: "user", content: { type: "text", text: "Hello AdaHello Ada" } }])
          const bad = yield* client.getPrompt({ name: "greet", arguments: { times: "2" } }).pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
          expect((bad as RpcError).code).toBe(-32602)
          expect(bad.message).toContain(`Invalid arguments for prompt "greet"`)
          const unknown = yield* client.getPrompt({ name: "nope" }).pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
          expect((unknown as RpcError).code).toBe(-32602)

          const names = yield* client.complete({
            ref: { type: "ref/prompt", name: "greet" },
            argument: { name: "name", value: "A" },
            context: { arguments: { times: "3" } }
          })
          expect(names.completion).toMatchObject({ values: ["Ada", "Alan"], total: 2, hasMore: false })
          const ids = yield* client.complete({
            ref: { type: "ref/resource", uri: "users://{id}/profile" },
            argument: { name: "id", value: "1" }
          })
          expect(ids.completion.values).toEqual(["1", "12"])
          const none = yield* client.complete({ ref: { type: "ref/prompt", name: "greet" }, argument: { name: "times", value: "" } })
          expect(none.completion.values).toEqual([])
        }).pipe(Effect.scoped))
    })
  }

  it.effect("capabilities follow the definitions", () =>
    Effect.sync(() => {
      expect(McpServer.capabilities(legacyServer)).toEqual({
        logging: {},
        tools: {},
        resources: { subscribe: true },
        prompts: {},
        completions: {}
      })
    }))

  it.effect("resources/subscribe and unsubscribe reach the hooks for URIs the server names", () =>
    Effect.gen(function*() {
      subscribed.length = 0
      const { client } = yield* connect(legacyServer, "2025-11-25")
      yield* client.subscribeResource("users://1/profile")
      yield* client.unsubscribeResource("docs://readme")
      const unknown = yield* client.subscribeResource("other://x").pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
      expect((unknown as RpcError).code).toBe(-32002)
      expect(subscribed).toEqual(["+users://1/profile", "-docs://readme"])
    }).pipe(Effect.scoped))

  it.effect("stateless era: the transport reads x-mcp-header parameters from the generated tool list", () =>
    Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(dualServer)
      expect(handle.handler.stateless).toBe(true)
      const schema = yield* handle.handler.toolInputSchema!("region")
      expect(schema).toMatchObject({ properties: { region: { "x-mcp-header": "Region" } } })
    }))

  it.effect("handlers get the request context and may fail with RpcError", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<ReadonlyArray<string>>([])
      const server = McpServer.make({ serverInfo: { name: "ctx", version: "1.0.0" } }).pipe(
        Tool.add("era", {}, (_, ctx) => Effect.as(Ref.update(seen, (s) => [...s, ctx.session.era]), "ok")),
        Tool.add("refuse", {}, () => Effect.fail(new RpcError({ code: -32099, rpcMessage: "refused" })))
      )
      const { client } = yield* connect(server, "2025-11-25")
      yield* client.callTool({ name: "era" })
      expect(yield* Ref.get(seen)).toEqual(["legacy"])
      const refused = yield* client.callTool({ name: "refuse" }).pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
      expect((refused as RpcError).code).toBe(-32099)
    }).pipe(Effect.scoped))
})

describe("definition errors", () => {
  const base = McpServer.make({ serverInfo: { name: "errors", version: "1.0.0" } })
  const thrown = (f: () => unknown): DefinitionError => {
    try {
      f()
    } catch (e) {
      if (e instanceof DefinitionError) return e
      throw e
    }
    throw new Error("no DefinitionError was thrown")
  }
  const echo = Tool.add("echo", { parameters: { text: Schema.String } }, ({ text }) => Effect.succeed(text))

  it("a tool, resource, template or prompt defined twice", () => {
    expect(thrown(() => base.pipe(echo, echo))).toMatchObject({ kind: "tool", name: "echo" })
    const readme = Resource.add("docs://readme", {}, () => Effect.succeed(""))
    expect(thrown(() => base.pipe(readme, readme))).toMatchObject({ kind: "resource", name: "docs://readme" })
    const users = Resource.template("users://{id}", {}, () => Effect.succeed(""))
    expect(thrown(() => base.pipe(users, users))).toMatchObject({ kind: "resourceTemplate", name: "users://{id}" })
    const greet = Prompt.add("greet", {}, () => Effect.succeed("hi"))
    expect(thrown(() => base.pipe(greet, greet))).toMatchObject({ kind: "prompt", name: "greet" })
    expect(thrown(() => base.pipe(echo, echo)).message).toBe(`tool "echo" is already defined`)
  })

  it("a method registered twice, by hand or over a definition", () => {
    const list = McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [] }))
    expect(thrown(() => base.pipe(list, list))).toMatchObject({ _tag: "DefinitionError", kind: "method", name: "tools/list" })
    expect(thrown(() => base.pipe(echo, list))).toMatchObject({ kind: "method", name: "tools/list" })
    expect(thrown(() => base.pipe(list, echo))).toMatchObject({ kind: "method", name: "tools/list" })
    const custom = McpServer.method("math/add", {}, () => Effect.succeed({}))
    expect(thrown(() => base.pipe(custom, custom))).toMatchObject({ kind: "method", name: "math/add" })
    // Different tables of one catalogue do not collide.
    expect(() => base.pipe(echo, Resource.add("docs://a", {}, () => Effect.succeed("")), Prompt.add("p", {}, () => Effect.succeed("")))).not.toThrow()
  })

  it("an earlier definition is not changed by later steps", () => {
    const one = base.pipe(echo)
    const two = one.pipe(Tool.add("other", {}, () => Effect.succeed("")))
    expect(one.router.requests.get("tools/list")).not.toBe(two.router.requests.get("tools/list"))
    return Effect.runPromise(Effect.gen(function*() {
      const listed = (server: McpServer.McpServer) =>
        Effect.gen(function*() {
          const { client } = yield* connect(server, "2025-11-25")
          return (yield* client.listTools()).tools.map((t) => t.name)
        }).pipe(Effect.scoped)
      expect(yield* listed(one)).toEqual(["echo"])
      expect(yield* listed(two)).toEqual(["echo", "other"])
    }))
  })

  it("parameters that are not an object, invalid x-mcp-header, unsupported template expressions", () => {
    expect(thrown(() => base.pipe(Tool.add("n", { parameters: Schema.Number }, () => Effect.succeed("")))).reason)
      .toContain("not an object")
    expect(
      thrown(() => base.pipe(Tool.add("h", { parameters: { n: Schema.Number.annotate(JsonSchema.header("N")) } }, () => Effect.succeed(""))))
        .reason
    ).toContain("string, integer or boolean only")
    expect(thrown(() => base.pipe(Resource.template("q://{?x}", {}, () => Effect.succeed("")))).reason)
      .toContain("{?x}")
  })

  it("method names are typed: an MCP namespace takes only MCP methods", () => {
    // @ts-expect-error a misspelt MCP method does not compile
    const typo = () => McpServer.method("tools/cal", {}, () => Effect.succeed({}))
    expect(typeof typo).toBe("function")
    // @ts-expect-error unknown variables of a template do not compile
    Resource.template("users://{id}", { variables: { name: Schema.String } }, () => Effect.succeed(""))
  })
})


describe("with the official SDK 1.x client", () => {
  it.live("lists and calls tools (the SDK checks structuredContent against outputSchema), reads, gets, completes", () =>
    Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(legacyServer)
      const client = new Client({ name: "sdk", version: "1.0.0" }, { capabilities: {} })
      yield* Effect.promise(() => client.connect(new SdkHandlerTransport(handle.handler as Handler, Effect.runPromise)))
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((t) => t.name)).toEqual(["add", "count", "lookup", "ratio", "raw", "region"])
      const sum = yield* Effect.promise(() => client.callTool({ name: "add", arguments: { a: 2, b: 3 } }))
      expect(sum.structuredContent).toEqual({ sum: 5 })
      const count = yield* Effect.promise(() => client.callTool({ name: "count", arguments: { text: "abc" } }))
      expect(count.structuredContent).toEqual({ result: 3 })
      const invalid = yield* Effect.promise(() => client.callTool({ name: "add", arguments: { a: "x", b: 1 } }))
      expect(invalid.isError).toBe(true)
      const failed = yield* Effect.promise(() => client.callTool({ name: "lookup", arguments: { id: "mars" } }))
      expect(failed.isError).toBe(true)

      const profile = yield* Effect.promise(() => client.readResource({ uri: "users://4/profile" }))
      expect(profile.contents[0]).toMatchObject({ text: JSON.stringify({ id: 4, double: 8 }) })
      const logo = yield* Effect.promise(() => client.readResource({ uri: "docs://logo" }))
      expect(logo.contents[0]).toMatchObject({ blob: "iVBORw==" })
      const templates = yield* Effect.promise(() => client.listResourceTemplates())
      expect(templates.resourceTemplates).toHaveLength(2)

      const prompt = yield* Effect.promise(() => client.getPrompt({ name: "greet", arguments: { name: "Grace" } }))
      expect(prompt.messages[0].content).toEqual({ type: "text", text: "Hello Grace" })
      const completion = yield* Effect.promise(() =>
        client.complete({ ref: { type: "ref/prompt", name: "greet" }, argument: { name: "name", value: "Al" } })
      )
      expect(completion.completion.values).toEqual(["Alan"])
      yield* Effect.promise(() => client.close())
    }))
})

// Upper-cases after a yield: its decoding does not finish synchronously.
const Shouted = Schema.String.pipe(Schema.decodeTo(Schema.String, {
  decode: SchemaGetter.transformEffect((s: string) => Effect.as(Effect.yieldNow, s.toUpperCase())),
  encode: SchemaGetter.passthrough()
}))

const callServer = McpServer.make({ serverInfo: { name: "calls", version: "1.0.0" }, stateless: true }).pipe(
  Tool.add("shout", { parameters: { text: Shouted } }, ({ text }) => Effect.succeed(text)),
  Tool.add("throws", {}, () => {
    throw new Error("thrown by the handler")
  })
)

describe("Tool calls", () => {
  it.effect("arguments whose decoding yields are decoded, or answered as invalid", () =>
    Effect.gen(function*() {
      const { client } = yield* connect(callServer, "2025-11-25")
      const shouted = yield* client.callTool({ name: "shout", arguments: { text: "hi" } })
      expect(shouted.content).toEqual([{ type: "text", text: "HI" }])
      const invalid = yield* client.callTool({ name: "shout", arguments: { text: 42 } })
      expect(invalid.isError).toBe(true)
      expect(firstText(invalid)).toContain(`Invalid arguments for tool "shout"`)
    }))

  it.effect("a handler that throws is an internal error, without its message", () =>
    Effect.gen(function*() {
      const { client } = yield* connect(callServer, "2025-11-25")
      const error = yield* client.callTool({ name: "throws" }).pipe(Effect.unwrapReason("McpServerError"), Effect.flip)
      expect(error).toBeInstanceOf(RpcError)
      expect((error as RpcError).code).toBe(-32603)
      expect((error as RpcError).message).not.toContain("thrown by the handler")
    }))
})
