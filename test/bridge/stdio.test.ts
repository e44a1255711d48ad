/**
 * The other direction: an HTTP server (our McpServer on HttpServerTransport,
 * in this process) exposed over stdio by the bridge running as a child
 * process (`fixtures/stdio-bridge.ts`), driven by stdio clients: our
 * McpClient and the official SDK's Client.
 */
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport as SdkStdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Deferred, Effect, Exit, Fiber, Scope, Stream } from "effect"
import * as Bridge from "../../src/bridge/Bridge.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import { isAlive } from "../fixtures/stdio-helpers.ts"
import { serve } from "../interop/InteropServer.ts"
import { serveHttp as serveBothEras } from "../fixtures/peers/our-server.ts"
import { eventually, textOf } from "./helpers.ts"

const bridgeProgram = fileURLToPath(new URL("./fixtures/stdio-bridge.ts", import.meta.url))
const BOUND = "10 seconds"

const spawnBridge = (url: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    let pid = 0
    let transport: StdioClientTransport.StdioClientTransportShape | undefined
    const client = yield* McpClient.connect(
      StdioClientTransport.make({
        command: process.execPath,
        args: [bridgeProgram, url],
        shutdown: { gracePeriod: "3 seconds", killAfter: "500 millis" },
        stderr: { log: false }
      }).pipe(Effect.tap((t) =>
        Effect.sync(() => {
          pid = t.pid
          transport = t
        })
      )),
      {
        clientInfo: { name: "stdio-through-bridge", version: "1.0.0" },
        // The handshake era's session is what these tests follow through the bridge.
        protocol: "2025-11-25",
        handlers: { listRoots: () => Effect.succeed([{ uri: "file:///bridged", name: "bridged" }]) }
      }
    ).pipe(Scope.provide(scope))
    return { client, pid, transport: transport!, close: Scope.close(scope, Exit.void) }
  })

describe("bridge: an HTTP server over stdio", { timeout: 60_000 }, () => {
  it.live("our McpClient over stdio: handshake, tools, progress, roots, cancellation; stdin's end ends the bridge and its HTTP session", () =>
    Effect.gen(function*() {
      const server = yield* serve({})
      const { client, close, pid } = yield* spawnBridge(server.url)
      expect(client.serverInfo.name).toBe("interop-server")
      expect(client.protocolVersion).toBe("2025-11-25")
      const [session] = yield* server.handle.sessions
      // The client's own initialize reached the server: its name and its capabilities.
      expect(session).toMatchObject({ clientInfo: { name: "stdio-through-bridge" } })
      expect(session!.clientCapabilities).toEqual({
        roots: { listChanged: true },
        extensions: { "io.modelcontextprotocol/tasks": {} }
      })

      expect((yield* client.listAllTools()).map((t) => t.name)).toEqual(
        expect.arrayContaining(["progress", "roots", "slow"])
      )
      const events = yield* Stream.runCollect(client.callToolStream({ name: "progress", arguments: { steps: 3 } }))
      expect(events.map((e) => (e._tag === "Progress" ? e.progress.progress : textOf(e.result)))).toEqual([
        1,
        2,
        3,
        "done 3 (token present)"
      ])
      // The server's roots/list (on the tools/call POST stream) is answered by the stdio client.
      expect(textOf(yield* client.callTool({ name: "roots" }))).toBe("file:///bridged")

      const slow = yield* client.callTool({ name: "slow" }).pipe(Effect.forkChild({ startImmediately: true }))
      const started = yield* Deferred.await(server.probe.slowStarted).pipe(Effect.timeout(BOUND))
      yield* Fiber.interrupt(slow)
      expect(yield* Deferred.await(server.probe.slowInterrupted).pipe(Effect.timeout(BOUND))).toEqual(started)
      yield* client.ping()

      // Closing stdin ends the bridge, which ends its HTTP session (DELETE).
      yield* close
      expect(isAlive(pid)).toBe(false)
      expect(yield* eventually(server.transport.sessionIds, (ids) => ids.length === 0)).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("the server ends the session: the call in flight gets an error, then the bridge exits with 3", () =>
    Effect.gen(function*() {
      const server = yield* serve({})
      const { client, close, pid, transport } = yield* spawnBridge(server.url)
      const [sessionId] = yield* server.transport.sessionIds
      yield* client.ping()
      yield* server.transport.closeSession(sessionId!)
      const failed = yield* Effect.flip(client.ping())
      expect(failed).toMatchObject({ _tag: "McpServerError", reason: { _tag: "RpcError", code: Bridge.ErrorCode.UpstreamFailed, data: { bridge: "SessionExpired" } } })
      const closed = yield* transport.awaitClosed.pipe(Effect.timeout(BOUND))
      expect(closed.exitCode).toBe(3)
      expect(isAlive(pid)).toBe(false)
      yield* close
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("an upstream refusing for now: the bridge's error carries the status and the wait it asked for", () =>
    Effect.gen(function*() {
      const server = yield* serve({})
      const { client, close } = yield* spawnBridge(server.url)
      yield* client.ping()
      // A draining server refuses every request with 503 and `Retry-After: 1`; the bridge's upstream tries twice more.
      yield* server.transport.shutdown
      const refused = yield* Effect.flip(client.ping())
      expect(refused).toMatchObject({
        _tag: "McpServerError",
        reason: { _tag: "RpcError", code: Bridge.ErrorCode.UpstreamFailed, data: { bridge: "HttpError", status: 503, retryAfterMs: 1000 } }
      })
      yield* close
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("the official SDK's stdio client: tools, progress, roots; close() ends the bridge", () =>
    Effect.gen(function*() {
      const server = yield* serve({})
      yield* Effect.promise(async () => {
        const transport = new SdkStdioClientTransport({ command: process.execPath, args: [bridgeProgram, server.url], stderr: "pipe" })
        const client = new Client({ name: "sdk-stdio", version: "1.0.0" }, { capabilities: { roots: {} } })
        client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///sdk", name: "sdk" }] }))
        try {
          await client.connect(transport)
          expect(client.getServerVersion()).toMatchObject({ name: "interop-server" })
          const { tools } = await client.listTools()
          expect(tools.map((t) => t.name)).toContain("progress")
          const seen: Array<number> = []
          const result = await client.callTool({ name: "progress", arguments: { steps: 2 } }, undefined, {
            onprogress: (p) => void seen.push(p.progress)
          })
          expect(textOf(result as never)).toBe("done 2 (token present)")
          expect(seen.length).toBeLessThanOrEqual(2)
          expect(textOf(await client.callTool({ name: "roots" }) as never)).toBe("file:///sdk")
          const pid = transport.pid!
          await client.close()
          expect(isAlive(pid)).toBe(false)
        } finally {
          await client.close()
        }
      })
      expect(yield* eventually(server.transport.sessionIds, (ids) => ids.length === 0)).toEqual([])
    }).pipe(Effect.scoped))

  it.live("a 2026-07-28 client over stdio, a server of both eras: requests go as they are, with the era's headers, no session", () =>
    Effect.gen(function*() {
      const server = yield* serveBothEras()
      const scope = yield* Scope.make()
      const client = yield* McpClient.connect(
        StdioClientTransport.make({
          command: process.execPath,
          args: [bridgeProgram, server.url],
          shutdown: { gracePeriod: "3 seconds", killAfter: "500 millis" },
          stderr: { log: false }
        }),
        {
          protocol: "2026-07-28",
          handlers: { elicit: () => Effect.succeed({ action: "accept", content: { name: "Ada" } }) }
        }
      ).pipe(Scope.provide(scope))
      expect(client.era).toBe("modern")
      expect(client.serverInfo.name).toBe("ours")
      expect(textOf(yield* client.callTool({ name: "echo", arguments: { text: "over stdio" } }))).toBe("echo: over stdio")
      // x-mcp-header parameters travel as Mcp-Param-* headers, which the server checks.
      expect(textOf(yield* client.callTool({ name: "region_echo", arguments: { region: "eu" } }))).toBe("region: eu")
      expect(textOf(yield* client.callTool({ name: "ask_name" }))).toBe("hello Ada")
      // Nothing of the handshake era reached the server: no session.
      expect(yield* server.transport.sessionIds).toEqual([])
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})
