import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as McpManager from "../../src/client/McpManager.ts"
import * as ToolFailure from "../../src/client/ToolFailure.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as Tool from "../../src/server/Tool.ts"

class OutOfStock extends Schema.TaggedError<OutOfStock>()("OutOfStock", { sku: Schema.String, restock: Schema.Date }) {}
class Other extends Schema.TaggedError<Other>()("Other", { why: Schema.String }) {}

const restock = new Date("2026-12-24T00:00:00.000Z")

const server = McpServer.make({ serverInfo: { name: "shop", version: "1.0.0" } }).pipe(
  Tool.add("order", {
    parameters: { sku: Schema.String },
    success: Schema.Struct({ ordered: Schema.String }),
    failure: OutOfStock
  }, ({ sku }) => sku === "gone" ? Effect.fail(new OutOfStock({ sku, restock })) : Effect.succeed({ ordered: sku })),
  Tool.add("plain", {}, () => Effect.succeed({ isError: true, content: [{ type: "text" as const, text: "not JSON at all" }] }))
)

const connect = (protocol: "2025-11-25" | "2026-07-28") =>
  Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(server)
    const pair = yield* InMemoryTransport.makePair(handle.handler)
    return yield* McpClient.fromTransport(pair.client, { protocol })
  })

describe("a tool's declared failure, decoded on the client", () => {
  for (const protocol of ["2025-11-25", "2026-07-28"] as const) {
    it.effect(`callTool with failure fails with the typed value (${protocol})`, () =>
      Effect.gen(function*() {
        const client = yield* connect(protocol)
        const failure = yield* Effect.flip(client.callTool({ name: "order", arguments: { sku: "gone" } }, { failure: OutOfStock }))
        expect(failure).toBeInstanceOf(OutOfStock)
        expect(failure).toMatchObject({ _tag: "OutOfStock", sku: "gone" })
        expect((failure as OutOfStock).restock.getTime()).toBe(restock.getTime())

        // A success passes through; without the Schema the same failure is a tool error result.
        const ok = yield* client.callTool({ name: "order", arguments: { sku: "tea" } }, { failure: OutOfStock })
        expect(ok.structuredContent).toEqual({ ordered: "tea" })
        const raw = yield* client.callTool({ name: "order", arguments: { sku: "gone" } })
        expect(raw.isError).toBe(true)
        expect(JSON.parse((raw.content[0] as { text: string }).text)).toMatchObject({ _tag: "OutOfStock", sku: "gone" })
      }).pipe(Effect.scoped))
  }

  it.effect("a tool error that is not the declared failure stays a result", () =>
    Effect.gen(function*() {
      const client = yield* connect("2025-11-25")
      const plain = yield* client.callTool({ name: "plain" }, { failure: OutOfStock })
      expect(plain).toMatchObject({ isError: true, content: [{ text: "not JSON at all" }] })
      // JSON, but another failure's.
      const other = yield* client.callTool({ name: "order", arguments: { sku: "gone" } }, { failure: Other })
      expect(other.isError).toBe(true)
      // Invalid arguments are a tool error too, and stay one.
      const invalid = yield* client.callTool({ name: "order", arguments: {} }, { failure: OutOfStock })
      expect(invalid.isError).toBe(true)
    }).pipe(Effect.scoped))

  it.effect("ToolFailure.decode works on any call, and McpManager.callTool takes the same option", () =>
    Effect.gen(function*() {
      const client = yield* connect("2026-07-28")
      const piped = yield* Effect.flip(
        client.callTool({ name: "order", arguments: { sku: "gone" } }).pipe(ToolFailure.decode(OutOfStock))
      )
      expect(piped).toBeInstanceOf(OutOfStock)

      const handle = yield* McpServer.toHandler(server)
      const manager = yield* McpManager.make({
        config: { mcpServers: { shop: { command: "in-memory" } } },
        transport: () => InMemoryTransport.make(handle.handler)
      })
      const managed = yield* Effect.flip(manager.callTool("shop__order", { sku: "gone" }, { failure: OutOfStock }))
      expect(managed).toBeInstanceOf(OutOfStock)
      // A declared failure is an answer: the server stays ready.
      expect((yield* manager.statuses).shop).toMatchObject({ _tag: "Ready" })
    }).pipe(Effect.scoped))
})
