import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport as SdkStdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Effect } from "effect"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"

// The shortest whole server the API allows: one typed tool, served over stdio (docs/mcp-server.md shows it).
const fixture = fileURLToPath(new URL("../fixtures/one-tool-server.ts", import.meta.url))

describe("a one-tool server in the fewest lines", () => {
  it("takes 15 lines, imports included", () => {
    const lines = readFileSync(fixture, "utf8").split("\n").filter((line) => line.trim() !== "")
    expect(lines.length).toBeLessThanOrEqual(15)
  })

  it("is the example docs/mcp-server.md opens with, word for word", () => {
    const docs = readFileSync(fileURLToPath(new URL("../../docs/mcp-server.md", import.meta.url)), "utf8")
    const first = /```ts\n([\s\S]*?)```/.exec(docs)![1]
    const asPublished = readFileSync(fixture, "utf8").replace(/"\.\.\/\.\.\/src\/(.*)\.ts"/g, "\"effect-mcp-transport/$1\"")
    expect(first).toBe(asPublished)
  })

  it("is the smallest server README.md shows, word for word", () => {
    const readme = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8")
    const asPublished = readFileSync(fixture, "utf8").replace(/"\.\.\/\.\.\/src\/(.*)\.ts"/g, "\"effect-mcp-transport/$1\"")
    expect(readme).toContain("```ts\n" + asPublished + "```")
  })

  it.live("serves McpClient in the stateless era and the SDK 1.x client in the handshake era over stdio", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.connect(
        StdioClientTransport.make({ command: process.execPath, args: [fixture] }),
        { protocol: "2026-07-28" }
      )
      expect(client.era).toBe("modern")
      const sum = yield* client.callTool({ name: "add", arguments: { a: 2, b: 40 } })
      expect(sum.structuredContent).toEqual({ result: 42 })

      const sdk = new Client({ name: "sdk", version: "1.0.0" }, { capabilities: {} })
      yield* Effect.acquireRelease(
        Effect.promise(() => sdk.connect(new SdkStdioClientTransport({ command: process.execPath, args: [fixture], stderr: "pipe" }))),
        () => Effect.promise(() => sdk.close())
      )
      const { tools } = yield* Effect.promise(() => sdk.listTools())
      expect(tools[0].inputSchema).toEqual({
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"]
      })
      const viaSdk = yield* Effect.promise(() => sdk.callTool({ name: "add", arguments: { a: 1, b: 1 } }))
      expect(viaSdk.structuredContent).toEqual({ result: 2 })
      expect(viaSdk.content).toEqual([{ type: "text", text: "2" }])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)), 30_000)
})
