/**
 * Definitions that are not generated from Schemas: a tool described by
 * hand-written JSON Schema (`Tool.addJsonSchema`) next to Schema tools, and a
 * resource that is readable but not listed (`listed: false`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import { RpcError } from "../../src/McpError.ts"
import { DefinitionError } from "../../src/server/DefinitionError.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as Resource from "../../src/server/Resource.ts"
import * as Tool from "../../src/server/Tool.ts"

/** Keywords a generator would rewrite or drop: dialect, $defs with $anchor, $ref, composition, conditionals. */
const CONTACT = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  $defs: {
    address: { $anchor: "addressDef", type: "object", properties: { street: { type: "string" }, city: { type: "string" } } }
  },
  properties: {
    name: { type: "string" },
    address: { $ref: "#/$defs/address" },
    contactMethod: { type: "string", enum: ["phone", "email"] },
    phone: { type: "string" },
    email: { type: "string" }
  },
  allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
  if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
  then: { required: ["phone"] },
  else: { required: ["email"] },
  additionalProperties: false
}

const OUTPUT = { type: "object", properties: { saved: { type: "boolean" } }, required: ["saved"], "x-vendor": { kept: 1 } }

const CONTACT_TEXT = JSON.stringify(CONTACT)

const server = (stateless: boolean) =>
  McpServer.make({ serverInfo: { name: "hand-written", version: "1.0.0" }, stateless }).pipe(
    Tool.add("echo", { parameters: { text: Schema.String } }, ({ text }) => Effect.succeed(text)),
    Tool.addJsonSchema("save_contact", {
      description: "Saves a contact",
      inputSchema: CONTACT,
      outputSchema: OUTPUT,
      annotations: { idempotentHint: true }
    }, (args) =>
      args.name === "fault"
        ? Effect.fail(new RpcError({ code: -32001, rpcMessage: "refused" }))
        : Effect.succeed({ content: [{ type: "text", text: `saved ${JSON.stringify(args)}` }], structuredContent: { saved: true } })),
    Tool.addJsonSchema("plain", { inputSchema: { type: "object" } }, () => Effect.succeed("plain text")),
    Resource.add("docs://readme", { mimeType: "text/plain" }, () => Effect.succeed("read me")),
    Resource.add("docs://embedded", { mimeType: "text/plain", listed: false }, () => Effect.succeed("only by URI"))
  )

const connect = (protocol: "2025-11-25" | "2026-07-28") =>
  Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(server(protocol === "2026-07-28"))
    const pair = yield* InMemoryTransport.makePair(handle.handler)
    return yield* McpClient.fromTransport(pair.client, { protocol })
  })

describe("hand-written definitions", () => {
  for (const protocol of ["2025-11-25", "2026-07-28"] as const) {
    describe(`with McpClient (${protocol})`, () => {
      it.effect("Tool.addJsonSchema: listed next to Schema tools with its schemas exactly as given", () =>
        Effect.gen(function*() {
          const client = yield* connect(protocol)
          const listed = (yield* client.request("tools/list", {})) as { tools: ReadonlyArray<Record<string, unknown>> }
          expect(listed.tools.map((t) => t.name)).toEqual(["echo", "save_contact", "plain"])
          const tool = listed.tools[1]!
          // Key order included: the document is passed through, not regenerated.
          expect(JSON.stringify(tool.inputSchema)).toBe(CONTACT_TEXT)
          expect(JSON.stringify(tool.outputSchema)).toBe(JSON.stringify(OUTPUT))
          expect(tool).toMatchObject({ description: "Saves a contact", annotations: { idempotentHint: true } })
          expect(listed.tools[2]!.inputSchema).toEqual({ type: "object" })
        }))

      it.effect("Tool.addJsonSchema: the handler gets the arguments as sent; Schema tools still decode theirs", () =>
        Effect.gen(function*() {
          const client = yield* connect(protocol)
          // Not validated against inputSchema: additionalProperties is the handler's business.
          const saved = yield* client.callTool({ name: "save_contact", arguments: { name: "Ada", extra: [1] } })
          expect(saved.content).toEqual([{ type: "text", text: `saved {"name":"Ada","extra":[1]}` }])
          expect(saved.structuredContent).toEqual({ saved: true })
          const plain = yield* client.callTool({ name: "plain", arguments: {} })
          expect(plain.content).toEqual([{ type: "text", text: "plain text" }])
          const fault = yield* Effect.flip(client.callTool({ name: "save_contact", arguments: { name: "fault" } }))
          expect((fault as unknown as { reason: RpcError }).reason.code).toBe(-32001)
          const echoed = yield* client.callTool({ name: "echo", arguments: { text: "hi" } })
          expect(echoed.content).toEqual([{ type: "text", text: "hi" }])
          const invalid = yield* client.callTool({ name: "echo", arguments: { text: 1 } })
          expect(invalid.isError).toBe(true)
        }))

      it.effect("a resource with listed: false is readable by its URI and absent from resources/list", () =>
        Effect.gen(function*() {
          const client = yield* connect(protocol)
          const listed = yield* client.listResources()
          expect(listed.resources.map((r) => r.uri)).toEqual(["docs://readme"])
          const read = yield* client.readResource("docs://embedded")
          expect(read.contents).toEqual([{ uri: "docs://embedded", mimeType: "text/plain", text: "only by URI" }])
        }))
    })
  }

  it.effect("Tool.addJsonSchema: arguments that are not an object are a tool error before the handler runs", () =>
    Effect.gen(function*() {
      let ran = false
      const handle = yield* McpServer.toHandler(
        McpServer.make({ serverInfo: { name: "h", version: "1" }, stateless: true }).pipe(
          Tool.addJsonSchema("t", { inputSchema: { type: "object" } }, () => Effect.sync(() => (ran = true, "ran")))
        )
      )
      const pair = yield* InMemoryTransport.makePair(handle.handler)
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "2026-07-28" })
      const result = (yield* client.request("tools/call", { name: "t", arguments: "text" })) as { isError?: boolean; content: ReadonlyArray<{ text: string }> }
      expect(result.isError).toBe(true)
      expect(result.content[0]!.text).toBe(`Invalid arguments for tool "t": expected an object`)
      expect(ran).toBe(false)
    }))

  it("the schema is copied: changing the caller's object later does not change the listing", () =>
    Effect.gen(function*() {
      const schema: Record<string, unknown> = { type: "object", properties: { a: { type: "string" } } }
      const handle = yield* McpServer.toHandler(
        McpServer.make({ serverInfo: { name: "h", version: "1" }, stateless: true }).pipe(
          Tool.addJsonSchema("t", { inputSchema: schema }, () => Effect.succeed("ok"))
        )
      )
      schema.properties = {}
      const pair = yield* InMemoryTransport.makePair(handle.handler)
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "2026-07-28" })
      const listed = (yield* client.request("tools/list", {})) as { tools: ReadonlyArray<{ inputSchema: unknown }> }
      expect(listed.tools[0]!.inputSchema).toEqual({ type: "object", properties: { a: { type: "string" } } })
    }).pipe(Effect.scoped, Effect.runPromise))

  it.effect("a hand-written tool is added while serving like any other, and its name is checked against the Schema tools", () =>
    Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(
        McpServer.make({ serverInfo: { name: "h", version: "1" }, stateless: true, capabilities: { tools: { listChanged: true } } }).pipe(
          Tool.add("echo", { parameters: { text: Schema.String } }, ({ text }) => Effect.succeed(text))
        )
      )
      const pair = yield* InMemoryTransport.makePair(handle.handler)
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "2026-07-28" })
      yield* handle.definitions.add(Tool.addJsonSchema("contact", { inputSchema: CONTACT }, () => Effect.succeed("ok")))
      const listed = (yield* client.request("tools/list", {})) as { tools: ReadonlyArray<Record<string, unknown>> }
      expect(JSON.stringify(listed.tools[1]!.inputSchema)).toBe(CONTACT_TEXT)
      const clash = yield* Effect.flip(
        handle.definitions.add(Tool.addJsonSchema("echo", { inputSchema: { type: "object" } }, () => Effect.succeed("x")))
      )
      expect(clash.message).toBe(`tool "echo" is already defined`)
    }))

  describe("definition errors", () => {
    const base = () => McpServer.make({ serverInfo: { name: "e", version: "1" } })
    const raw = (name: string) => Tool.addJsonSchema(name, { inputSchema: { type: "object" } }, () => Effect.succeed("x"))
    const typed = (name: string) => Tool.add(name, {}, () => Effect.succeed("x"))

    it("a name given to a Schema tool and a hand-written one, in either order, is a DefinitionError", () => {
      expect(() => base().pipe(typed("same"), raw("same"))).toThrow(`tool "same" is already defined`)
      expect(() => base().pipe(raw("same"), typed("same"))).toThrow(`tool "same" is already defined`)
      expect(() => base().pipe(raw("same"), raw("same"))).toThrow(DefinitionError)
    })

    it("a schema whose root is not an object type is a DefinitionError", () => {
      expect(() => base().pipe(Tool.addJsonSchema("s", { inputSchema: { type: "string" } }, () => Effect.succeed("x")))).toThrow(
        `tool "s" has an inputSchema whose root is not { "type": "object" }`
      )
      expect(() => base().pipe(Tool.addJsonSchema("s", { inputSchema: {} }, () => Effect.succeed("x")))).toThrow(DefinitionError)
      expect(() =>
        base().pipe(
          Tool.addJsonSchema("s", { inputSchema: { type: "object" }, outputSchema: { type: "array" } }, () => Effect.succeed("x"))
        )
      ).toThrow(`tool "s" has an outputSchema whose root is not { "type": "object" }`)
    })

    it("an x-mcp-header MCP does not allow is a DefinitionError", () => {
      expect(() =>
        base().pipe(
          Tool.addJsonSchema("s", {
            inputSchema: { type: "object", properties: { a: { type: "object", "x-mcp-header": "A" } } }
          }, () => Effect.succeed("x"))
        )
      ).toThrow(DefinitionError)
    })

    it("McpServer.method cannot serve tools/call next to a hand-written tool", () => {
      expect(() => base().pipe(raw("t"), McpServer.method("tools/call", {}, () => Effect.succeed({ content: [] })))).toThrow(
        `method "tools/call" is already defined`
      )
    })
  })
})
