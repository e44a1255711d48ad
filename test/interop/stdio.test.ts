/**
 * Interop over stdio with real child processes, in both directions:
 * - the official SDK's Client + StdioClientTransport against our stdio server
 *   (McpServer on StdioServerTransport: `test/fixtures/router-stdio-server.ts`);
 * - our McpClient + StdioClientTransport against a server from npm that nobody
 *   here wrote, `@modelcontextprotocol/server-memory`, doing real work.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport as SdkStdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Effect, Exit, Scope } from "effect"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import { isAlive } from "../fixtures/stdio-helpers.ts"

const routerServer = fileURLToPath(new URL("../fixtures/router-stdio-server.ts", import.meta.url))
const memoryServer = fileURLToPath(
  new URL("../../node_modules/@modelcontextprotocol/server-memory/dist/index.js", import.meta.url)
)

const textOf = (content: unknown) =>
  (content as ReadonlyArray<{ type: string; text?: string }>).map((c) => c.text ?? `<${c.type}>`).join("")

describe("interop: the official SDK client against our stdio server", { timeout: 60_000 }, () => {
  it.live("connect, listTools, callTool (with progress), ping; close() leaves no process behind", () =>
    Effect.promise(async () => {
      const transport = new SdkStdioClientTransport({ command: process.execPath, args: [routerServer], stderr: "pipe" })
      const client = new Client({ name: "sdk-interop", version: "1.0.0" }, { capabilities: {} })
      try {
        await client.connect(transport)
        expect(client.getServerVersion()).toMatchObject({ name: "router-fixture", version: "1.0.0" })
        expect(client.getServerCapabilities()).toMatchObject({ tools: { listChanged: true }, logging: {} })
        expect(client.getInstructions()).toBe("A fixture server for tests.")

        const { tools } = await client.listTools()
        expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["echo", "add", "progress", "pid"]))

        const echo = await client.callTool({ name: "echo", arguments: { text: "from the SDK" } })
        expect(textOf(echo.content)).toBe("from the SDK")
        const add = await client.callTool({ name: "add", arguments: { a: 2, b: 40 } })
        expect(add.structuredContent).toEqual({ sum: 42 })

        // Progress spaced out in time arrives in its own reads. (See the next test for why the last
        // one, written together with the response, is not asserted.)
        const seen: Array<number> = []
        const progress = await client.callTool({ name: "progress", arguments: { steps: 3, delayMs: 30 } }, undefined, {
          onprogress: (p) => void seen.push(p.progress)
        })
        expect(seen.slice(0, 2)).toEqual([1, 2])
        expect(progress.structuredContent).toEqual({ hadToken: true })

        // An unknown tool is a JSON-RPC error the SDK surfaces as a rejection.
        await expect(client.callTool({ name: "no-such-tool" })).rejects.toThrow(/Unknown tool/)

        expect(await client.ping()).toEqual({})

        const pid = transport.pid
        expect(pid).not.toBeNull()
        const reported = await client.callTool({ name: "pid" })
        expect(reported.structuredContent).toEqual({ pid })
        expect(isAlive(pid!)).toBe(true)

        await client.close()
        // The SDK's close() resolves once the child has exited (stdin closed: our server ends on EOF).
        expect(isAlive(pid!)).toBe(false)
      } finally {
        await client.close()
      }
    }))
  // A limitation of the SDK client (1.32.2), not of our server: it handles notifications in a
  // microtask but responses at once, and drops a call's progress handler when the response is
  // handled. Progress that arrives in the same read as the response is therefore reported as
  // "unknown token" and lost. Our stdio server writes the lines that are ready together (one
  // write per batch), so a fast tool's progress and its result usually share a read.
  it.live("SDK limitation: progress in the same read as the response is dropped (the result is intact)", () =>
    Effect.promise(async () => {
      const transport = new SdkStdioClientTransport({ command: process.execPath, args: [routerServer], stderr: "pipe" })
      const client = new Client({ name: "sdk-interop", version: "1.0.0" }, { capabilities: {} })
      const errors: Array<string> = []
      client.onerror = (e) => void errors.push(e.message)
      try {
        await client.connect(transport)
        const seen: Array<number> = []
        const result = await client.callTool({ name: "progress", arguments: { steps: 3 } }, undefined, {
          onprogress: (p) => void seen.push(p.progress)
        })
        expect(result.structuredContent).toEqual({ hadToken: true })
        // Whatever was not delivered was reported, never silently lost.
        const dropped = errors.filter((m) => m.includes("progress notification for an unknown token"))
        expect(seen.length + dropped.length).toBe(3)
      } finally {
        await client.close()
      }
    }))
})

describe("interop: our McpClient against @modelcontextprotocol/server-memory (stdio, from npm)", { timeout: 60_000 }, () => {
  it.live("lists its tools, creates entities and relations, reads the graph back; the child dies with the scope", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "interop-memory-"))
      const memoryFile = join(dir, "memory.jsonl")
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))

      const scope = yield* Scope.make()
      let pid = 0
      const client = yield* McpClient.connect(
        Effect.tap(
          StdioClientTransport.make({
            command: process.execPath,
            args: [memoryServer],
            // Its knowledge graph goes to a temp file, not into node_modules.
            env: { MEMORY_FILE_PATH: memoryFile },
            shutdown: { gracePeriod: "500 millis", killAfter: "500 millis" },
            stderr: { log: false }
          }),
          (t) => Effect.sync(() => void (pid = t.pid))
        ),
        { clientInfo: { name: "interop-memory", version: "1.0.0" } }
      ).pipe(Scope.provide(scope))

      expect(client.serverInfo.name).toBe("memory-server")
      expect(isAlive(pid)).toBe(true)
      const tools = yield* client.listAllTools()
      expect(tools.map((t) => t.name)).toEqual(
        expect.arrayContaining(["create_entities", "create_relations", "add_observations", "read_graph", "search_nodes"])
      )

      const created = yield* client.callTool({
        name: "create_entities",
        arguments: {
          entities: [
            { name: "Ada", entityType: "person", observations: ["wrote the first program"] },
            { name: "Analytical Engine", entityType: "machine", observations: ["designed by Babbage"] }
          ]
        }
      })
      expect(created.isError ?? false).toBe(false)
      expect((created.structuredContent as { entities: Array<{ name: string }> }).entities.map((e) => e.name)).toEqual([
        "Ada",
        "Analytical Engine"
      ])
      yield* client.callTool({
        name: "create_relations",
        arguments: { relations: [{ from: "Ada", to: "Analytical Engine", relationType: "programmed" }] }
      })
      yield* client.callTool({
        name: "add_observations",
        arguments: { observations: [{ entityName: "Ada", contents: ["born 1815"] }] }
      })

      const graph = (yield* client.callTool({ name: "read_graph" })).structuredContent as {
        entities: Array<{ name: string; entityType: string; observations: Array<string> }>
        relations: Array<{ from: string; to: string; relationType: string }>
      }
      expect(graph.entities).toEqual(expect.arrayContaining([
        { name: "Ada", entityType: "person", observations: ["wrote the first program", "born 1815"] },
        { name: "Analytical Engine", entityType: "machine", observations: ["designed by Babbage"] }
      ]))
      expect(graph.relations).toEqual([{ from: "Ada", to: "Analytical Engine", relationType: "programmed" }])

      const found = (yield* client.callTool({ name: "search_nodes", arguments: { query: "Babbage" } }))
        .structuredContent as { entities: Array<{ name: string }> }
      expect(found.entities.map((e) => e.name)).toEqual(["Analytical Engine"])

      // The work reached the file we pointed it at.
      expect(readFileSync(memoryFile, "utf8")).toContain("\"Ada\"")

      yield* Scope.close(scope, Exit.void)
      expect(isAlive(pid)).toBe(false)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})
