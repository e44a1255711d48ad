import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as Tool from "../../src/server/Tool.ts"

const server = McpServer.make({ serverInfo: { name: "text-copy", version: "1.0.0" }, stateless: true }).pipe(
  Tool.add("add", {
    parameters: { a: Schema.Number, b: Schema.Number },
    success: Schema.Struct({ sum: Schema.Number }),
    text: ({ sum }) => String(sum)
  }, ({ a, b }) => Effect.succeed({ sum: a + b })),
  Tool.add("half", {
    parameters: { a: Schema.Number },
    success: Schema.Struct({ half: Schema.Number }),
    text: ({ half }) => `half: ${half}`
  }, ({ a }) => Effect.succeed({ half: a === 3 ? Number.NaN : a / 2 }))
)

const firstText = (result: { readonly content: ReadonlyArray<unknown> }) => (result.content[0] as { text: string }).text

describe("Tool.add text", () => {
  it.effect("sends the text the option makes next to the structuredContent, with the outputSchema listed", () =>
    Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(server)
      const client = yield* McpClient.connect(InMemoryTransport.make(handle.handler), { protocol: "2025-11-25" })
      const tools = yield* client.listAllTools()
      expect(tools[0]?.outputSchema).toEqual({ type: "object", properties: { sum: { type: "number" } }, required: ["sum"] })
      const sum = yield* client.callTool({ name: "add", arguments: { a: 2, b: 40.5 } })
      expect([firstText(sum), sum.structuredContent, sum.content.length]).toEqual(["42.5", { sum: 42.5 }, 1])
    }).pipe(Effect.scoped))

  it.effect("is not asked for a result the success Schema refuses (that stays -32603)", () =>
    Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(server)
      const client = yield* McpClient.connect(InMemoryTransport.make(handle.handler), { protocol: "2025-11-25" })
      expect(firstText(yield* client.callTool({ name: "half", arguments: { a: 5 } }))).toBe("half: 2.5")
      const refused = yield* Effect.flip(client.callTool({ name: "half", arguments: { a: 3 } }))
      expect(refused).toMatchObject({ _tag: "McpServerError", reason: { code: -32603 } })
    }).pipe(Effect.scoped))
})
