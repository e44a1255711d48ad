import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { Context, Effect, Layer, Ref, Schema, Stream } from "effect"
import * as AiError from "effect/ai/AiError"
import * as AiTool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as AiToolkit from "../../src/client/AiToolkit.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import { DefinitionError } from "../../src/server/DefinitionError.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as Middleware from "../../src/server/Middleware.ts"
import * as Tool from "../../src/server/Tool.ts"
import { SdkHandlerTransport } from "../fixtures/sdk-handler-transport.ts"

class DivisionByZero extends Schema.TaggedError<DivisionByZero>()("DivisionByZero", { dividend: Schema.Number }) {}

/** How many decimals `divide` rounds to: a service only the handlers' layer provides. */
class Precision extends Context.Service<Precision, number>()("test/Precision") {}

/** What `forget` forgot, so a test sees that its handler ran with the layer's services. */
class Forgotten extends Context.Service<Forgotten, Ref.Ref<ReadonlyArray<string>>>()("test/Forgotten") {}

const Divide = AiTool.make("divide", {
  description: "Divides a by b",
  parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number.annotate({ description: "not 0" }) }),
  success: Schema.Struct({ quotient: Schema.Number }),
  failure: DivisionByZero
})

const Forget = AiTool.make("forget", {
  description: "Forgets a key",
  parameters: Schema.Struct({ key: Schema.String })
})
  .annotate(AiTool.Title, "Forget a key")
  .annotate(AiTool.Destructive, true)
  .annotate(AiTool.Idempotent, true)
  .annotate(AiTool.Readonly, false)

const tools = Toolkit.make(Divide, Forget)

const handlers = tools.toLayer(Effect.gen(function*() {
  const precision = yield* Precision
  const forgotten = yield* Forgotten
  return tools.of({
    divide: ({ a, b }) =>
      b === 0 ? Effect.fail(new DivisionByZero({ dividend: a })) : Effect.succeed({ quotient: Number((a / b).toFixed(precision)) }),
    forget: ({ key }) => Ref.update(forgotten, (keys) => [...keys, key])
  })
}))

/** The handlers with the services they are built from; `Forgotten` stays visible to the tests. */
const services = handlers.pipe(
  Layer.provide(Layer.succeed(Precision, 2)),
  Layer.provideMerge(Layer.effect(Forgotten, Ref.make<ReadonlyArray<string>>([])))
)

/** A tool with the effect/ai defaults: no parameters, no failure. */
const answers = Toolkit.make(AiTool.make("answer", { success: Schema.Number }))

/** Tools whose handlers do what MCP has no place for: preliminary results, failures outside the failure schema. */
const extras = Toolkit.make(
  AiTool.make("progressive", { success: Schema.Number }),
  AiTool.make("broken", { success: Schema.Number })
)

const serverFor = (stateless: boolean) =>
  McpServer.make({ serverInfo: { name: "toolkit", version: "1.0.0" }, stateless }).pipe(Tool.fromToolkit(tools))

const connect = (protocol: "2025-11-25" | "2026-07-28") =>
  Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(serverFor(protocol === "2026-07-28"))
    const pair = yield* InMemoryTransport.makePair(handle.handler)
    return yield* McpClient.fromTransport(pair.client, { protocol })
  })

const texts = (result: { readonly content: ReadonlyArray<unknown> }) => result.content.map((c) => (c as { text: string }).text)

const expectedDivide = {
  name: "divide",
  description: "Divides a by b",
  inputSchema: {
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number", description: "not 0" } },
    required: ["a", "b"]
  },
  outputSchema: { type: "object", properties: { quotient: { type: "number" } }, required: ["quotient"] }
}

const expectedForget = {
  name: "forget",
  title: "Forget a key",
  description: "Forgets a key",
  inputSchema: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
  annotations: { title: "Forget a key", readOnlyHint: false, destructiveHint: true, idempotentHint: true }
}

describe("serving an effect/ai Toolkit", () => {
  for (const protocol of ["2025-11-25", "2026-07-28"] as const) {
    describe(`with McpClient (${protocol})`, () => {
      it.effect("tools/list gives each tool's schemas, description and annotations, with no non-finite numbers", () =>
        Effect.gen(function*() {
          const client = yield* connect(protocol)
          expect(client.era).toBe(protocol === "2025-11-25" ? "legacy" : "modern")
          const { tools: listed } = yield* client.listTools()
          // McpClient decodes the listing with the hints' defaults filled in; the SDK test below sees the wire form.
          expect(listed).toMatchObject([expectedDivide, expectedForget])
          const json = JSON.stringify(listed)
          expect(json).not.toMatch(/NaN|Infinity|anyOf/)
        }).pipe(Effect.provide(services)))

      it.effect("a success is structuredContent with a text copy; the handler's services come from its layer", () =>
        Effect.gen(function*() {
          const client = yield* connect(protocol)
          const result = yield* client.callTool({ name: "divide", arguments: { a: 2, b: 3 } })
          expect(result.isError).toBeUndefined()
          expect(result.structuredContent).toEqual({ quotient: 0.67 })
          expect(texts(result)).toEqual([JSON.stringify({ quotient: 0.67 })])

          const forget = yield* client.callTool({ name: "forget", arguments: { key: "k1" } })
          expect(forget.content).toEqual([])
          expect(forget.structuredContent).toBeUndefined()
          expect(yield* Ref.get(yield* Forgotten)).toEqual(["k1"])
        }).pipe(Effect.provide(services)))

      it.effect("a failure of the failure schema is a tool error carrying its JSON", () =>
        Effect.gen(function*() {
          const client = yield* connect(protocol)
          const result = yield* client.callTool({ name: "divide", arguments: { a: 1, b: 0 } })
          expect(result.isError).toBe(true)
          expect(JSON.parse(texts(result)[0])).toEqual({ _tag: "DivisionByZero", dividend: 1 })
        }).pipe(Effect.provide(services)))

      it.effect("an invalid argument is a tool error that says what is wrong, and the handler does not run", () =>
        Effect.gen(function*() {
          const client = yield* connect(protocol)
          const result = yield* client.callTool({ name: "divide", arguments: { a: "two", b: 1 } })
          expect(result.isError).toBe(true)
          expect(texts(result)[0]).toContain(`Invalid arguments for tool "divide"`)
          expect(texts(result)[0]).toContain(`["a"]`)
          const missing = yield* client.callTool({ name: "forget", arguments: {} })
          expect(missing.isError).toBe(true)
          expect(texts(missing)[0]).toContain(`["key"]`)
          expect(yield* Ref.get(yield* Forgotten)).toEqual([])
        }).pipe(Effect.provide(services)))

      it.effect("our AiToolkit over the served Toolkit gives a model the same tools, and calls them", () =>
        Effect.gen(function*() {
          const client = yield* connect(protocol)
          const remote = yield* AiToolkit.make(client)
          const seen = (tool: AiTool.Any) => ({ name: tool.name, description: AiTool.getDescription(tool) })
          expect(Object.values(remote.tools).map(seen)).toEqual(Object.values(tools.tools).map(seen))
          // The model is offered the served JSON Schemas: finite numbers only, field descriptions kept.
          expect(Object.values(remote.tools).map((tool) => AiTool.getJsonSchema(tool))).toEqual([
            expectedDivide.inputSchema,
            expectedForget.inputSchema
          ])

          const results = yield* remote.handle("divide", { a: 1, b: 4 }).pipe(
            Effect.flatMap((stream) => Stream.runCollect(stream))
          )
          expect(results.map((r) => r.isFailure)).toEqual([false])
          expect(results[0].result).toMatchObject({ structuredContent: { quotient: 0.25 } })
        }).pipe(Effect.provide(services)))
    })
  }

  it.live("the official SDK 1.x client lists and calls the tools (it checks structuredContent against outputSchema)", () =>
    Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(serverFor(false))
      const context = yield* Layer.build(services)
      const run = <A>(effect: Effect.Effect<A, unknown, any>) => Effect.runPromise(Effect.provide(effect, context) as Effect.Effect<A, unknown>)
      const client = new Client({ name: "sdk", version: "1.0.0" }, { capabilities: {} })
      yield* Effect.acquireRelease(
        Effect.promise(() => client.connect(new SdkHandlerTransport(handle.handler, run))),
        () => Effect.promise(() => client.close())
      )
      const { tools: listed } = yield* Effect.promise(() => client.listTools())
      expect(listed).toEqual([expectedDivide, expectedForget])
      const quotient = yield* Effect.promise(() => client.callTool({ name: "divide", arguments: { a: 10, b: 4 } }))
      expect(quotient.structuredContent).toEqual({ quotient: 2.5 })
      const failed = yield* Effect.promise(() => client.callTool({ name: "divide", arguments: { a: 1, b: 0 } }))
      expect(failed.isError).toBe(true)
      expect(failed.content).toEqual([{ type: "text", text: JSON.stringify({ _tag: "DivisionByZero", dividend: 1 }) }])
      const invalid = yield* Effect.promise(() => client.callTool({ name: "divide", arguments: { a: 1 } }))
      expect(invalid.isError).toBe(true)
      expect((invalid.content as Array<{ text: string }>)[0].text).toContain(`["b"]`)
      yield* Effect.promise(() => client.callTool({ name: "forget", arguments: { key: "sdk" } }))
      expect(yield* Ref.get(Context.get(context, Forgotten))).toEqual(["sdk"])
    }).pipe(Effect.scoped))

  it.effect("a tool without parameters (effect/ai's EmptyParams) takes an empty object and refuses other keys", () =>
    Effect.gen(function*() {
      const server = McpServer.make({ serverInfo: { name: "toolkit", version: "1.0.0" }, stateless: true }).pipe(
        Tool.fromToolkit(answers)
      )
      const handle = yield* McpServer.toHandler(server)
      const client = yield* McpClient.fromTransport(yield* InMemoryTransport.make(handle.handler), { protocol: "2026-07-28" })
      const { tools: listed } = yield* client.listTools()
      expect(listed[0]).toMatchObject({
        name: "answer",
        inputSchema: { type: "object", additionalProperties: false },
        outputSchema: { type: "object", properties: { result: { type: "number" } }, required: ["result"] }
      })
      const ok = yield* client.callTool({ name: "answer", arguments: {} })
      expect(ok.structuredContent).toEqual({ result: 42 })
      const extra = yield* client.callTool({ name: "answer", arguments: { question: "?" } })
      expect(extra.isError).toBe(true)
      expect(texts(extra)[0]).toContain(`["question"]`)
    }).pipe(Effect.provide(answers.toLayer({ answer: () => Effect.succeed(42) }))))

  it.effect("preliminary results are not sent; a failure outside the failure schema (an AiError) is -32603", () =>
    Effect.gen(function*() {
      const server = McpServer.make({ serverInfo: { name: "toolkit", version: "1.0.0" }, stateless: true }).pipe(
        Tool.fromToolkit(extras)
      )
      const handle = yield* McpServer.toHandler(server)
      const client = yield* McpClient.fromTransport(yield* InMemoryTransport.make(handle.handler), { protocol: "2025-11-25" })
      const final = yield* client.callTool({ name: "progressive", arguments: {} })
      expect(final.structuredContent).toEqual({ result: 2 })
      expect(texts(final)).toEqual(["2"])
      const error = yield* Effect.flip(client.callTool({ name: "broken", arguments: {} }))
      expect(error).toMatchObject({ _tag: "McpServerError", reason: { code: -32603 } })
      expect(JSON.stringify(error)).not.toContain("secret")
    }).pipe(Effect.provide(extras.toLayer({
      progressive: (_, { preliminary }) => Effect.as(preliminary(1), 2),
      broken: () => Effect.fail(new AiError.UnknownError({ description: "secret upstream detail" }))
    }))))

  it("the served definition needs the toolkit's handlers", () => {
    const server = serverFor(true)
    // @ts-expect-error a server without the handlers' layer does not type as needing nothing
    const needsNothing: McpServer.McpServer<never> = server
    expect(needsNothing).toBe(server)
  })

  it("a provider-defined tool or a tool with JSON Schema parameters is a DefinitionError", () => {
    const base = McpServer.make({ serverInfo: { name: "toolkit", version: "1.0.0" }, stateless: true })
    const search = AiTool.providerDefined({
      id: "test.web_search",
      customName: "WebSearch",
      providerName: "web_search",
      args: Schema.Struct({}),
      success: Schema.String
    })
    expect(() => base.pipe(Tool.fromToolkit(Toolkit.make(search({}))))).toThrow(DefinitionError)
    const dynamic = AiTool.dynamic("raw", { parameters: { type: "object", properties: {} } })
    expect(() => base.pipe(Tool.fromToolkit(Toolkit.make(dynamic)))).toThrow(/JSON Schema/)
  })
})

/** Who a `greet` call greets: the handlers' layer gives a default, a middleware may give one per call. */
class Greeted extends Context.Service<Greeted, string>()("test/Greeted") {}

describe("a toolkit handler's services", () => {
  const greeting = Toolkit.make(AiTool.make("greet", { parameters: Schema.Struct({ who: Schema.String }), success: Schema.String }))
  // Read when the call runs, from the context it runs with (the types would have it from the layer alone).
  const greeted = Effect.service(Greeted) as Effect.Effect<string>
  const greetingHandlers = greeting.toLayer({ greet: () => Effect.map(greeted, (who) => `hello ${who}`) }).pipe(
    Layer.provide(Layer.succeed(Greeted, "from the layer"))
  )
  const greet = (client: McpClient.McpClientShape, who: string) =>
    Effect.map(client.callTool({ name: "greet", arguments: { who } }), (result) => (result.structuredContent as { result: string }).result)

  it.effect("the layer's services are the defaults; each call's own win, and no call sees another's", () =>
    Effect.gen(function*() {
      const server = McpServer.make({ serverInfo: { name: "greeter", version: "1.0.0" } }).pipe(
        Tool.fromToolkit(greeting),
        // Calls for "layer" get no service of their own; the others get theirs.
        McpServer.middleware((next) => (request) => {
          const who = (request.params as { arguments?: { who?: string } }).arguments?.who
          return who === "layer" || who === undefined ? next(request) : Middleware.provideService(Greeted, () => Effect.succeed(who))(next)(request)
        })
      )
      const handle = yield* McpServer.toHandler(server)
      const client = yield* McpClient.connect(InMemoryTransport.make(handle.handler))
      expect(yield* greet(client, "layer")).toBe("hello from the layer")
      expect(yield* greet(client, "ada")).toBe("hello ada")
      expect(yield* greet(client, "bob")).toBe("hello bob")
      expect(yield* greet(client, "layer")).toBe("hello from the layer")
      expect(yield* greet(client, "bob")).toBe("hello bob")
    }).pipe(Effect.provide(greetingHandlers)))
})
