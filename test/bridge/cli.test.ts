/**
 * `effect-mcp-transport bridge` as a user runs it: the built binary (`npm run build`
 * first) in a child process, real servers and clients on both sides.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope, Stream } from "effect"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import { MAIN, NODE, ensureBuilt, runCli, startCli } from "../cli/runCli.ts"
import { isAlive } from "../fixtures/stdio-helpers.ts"
import { serve } from "../interop/InteropServer.ts"
import { eventually, routerServer, textOf } from "./helpers.ts"

const handshakeOnly = fileURLToPath(new URL("./fixtures/handshake-only-server.ts", import.meta.url))

describe("effect-mcp-transport bridge (built binary)", { timeout: 60_000 }, () => {
  it.live("--http -- <stdio server>: a client over HTTP reaches the child; SIGINT ends the bridge and the child", () =>
    Effect.gen(function*() {
      const cli = startCli(["bridge", "--http", "--port", "0", "--", NODE, routerServer])
      yield* Effect.addFinalizer(() => Effect.sync(() => cli.child.kill("SIGKILL")))
      yield* Effect.promise(() => cli.waitFor(/listening (http:\S+)/))
      const url = /listening (http:\S+)/.exec(cli.stderr())![1]!
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)

      const scope = yield* Scope.make()
      const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), {}).pipe(Scope.provide(scope))
      expect(client.serverInfo.name).toBe("router-fixture")
      expect(textOf(yield* client.callTool({ name: "echo", arguments: { text: "via cli" } }))).toBe("via cli")
      const events = yield* Stream.runCollect(client.callToolStream({ name: "progress", arguments: { steps: 2, delayMs: 10 } }))
      expect(events.filter((e) => e._tag === "Progress").length).toBe(2)
      const pid = ((yield* client.callTool({ name: "pid" })).structuredContent as { pid: number }).pid
      expect(isAlive(pid)).toBe(true)

      cli.child.kill("SIGINT")
      const result = yield* Effect.promise(() => cli.exit)
      expect(result.code).toBe(130)
      expect(result.stdout).toBe("")
      expect(isAlive(pid)).toBe(false)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("<url> --stdio: a stdio client reaches the HTTP server, stdout carries frames only; the session ends with it", () =>
    Effect.gen(function*() {
      ensureBuilt()
      const server = yield* serve({})
      const scope = yield* Scope.make()
      let transport: StdioClientTransport.StdioClientTransportShape | undefined
      const client = yield* McpClient.connect(
        StdioClientTransport.make({
          command: NODE,
          args: [MAIN, "bridge", server.url, "--stdio"],
          shutdown: { gracePeriod: "5 seconds", killAfter: "500 millis" },
          stderr: { log: false }
        }).pipe(Effect.tap((t) => Effect.sync(() => void (transport = t)))),
        { handlers: { listRoots: () => Effect.succeed([{ uri: "file:///cli", name: "cli" }]) } }
      ).pipe(Scope.provide(scope))
      // Anything on stdout that is not a frame would show up here.
      const diagnostics: Array<string> = []
      yield* transport!.diagnostics.pipe(
        Stream.runForEach((d) => Effect.sync(() => void diagnostics.push(d._tag))),
        Effect.forkChild({ startImmediately: true })
      )
      expect(client.serverInfo.name).toBe("interop-server")
      expect(textOf(yield* client.callTool({ name: "roots" }))).toBe("file:///cli")
      yield* client.ping()
      expect(yield* server.transport.sessionIds).toHaveLength(1)
      const pid = transport!.pid
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(pid)).toBe(false)
      expect(yield* eventually(server.transport.sessionIds, (ids) => ids.length === 0)).toEqual([])
      expect(diagnostics).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("<url> --stdio, raw lines: one JSON frame per answer on stdout, exit 0 when stdin ends", () =>
    Effect.gen(function*() {
      ensureBuilt()
      const server = yield* serve({})
      const result = yield* Effect.promise(() =>
        new Promise<{ code: number | null; stdout: string }>((resolve) => {
          const child = spawn(NODE, [MAIN, "bridge", server.url, "--stdio"], { stdio: ["pipe", "pipe", "ignore"] })
          let stdout = ""
          const send = (m: object) => child.stdin.write(JSON.stringify(m) + "\n")
          child.stdout.setEncoding("utf8").on("data", (d: string) => {
            stdout += d
            const answers = stdout.split("\n").filter((l) => l !== "").length
            if (answers === 1) {
              send({ jsonrpc: "2.0", method: "notifications/initialized" })
              send({ jsonrpc: "2.0", id: 2, method: "ping" })
            }
            if (answers === 2) child.stdin.end()
          })
          child.on("close", (code) => resolve({ code, stdout }))
          send({
            jsonrpc: "2.0",
            id: 1,
            method: "initialize",
            params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
          })
        })
      )
      expect(result.code).toBe(0)
      const frames = result.stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
      expect(frames).toMatchObject([
        { id: 1, result: { protocolVersion: "2025-06-18", serverInfo: { name: "interop-server" } } },
        { id: 2, result: {} }
      ])
      expect(yield* eventually(server.transport.sessionIds, (ids) => ids.length === 0)).toEqual([])
    }).pipe(Effect.scoped))

  it.live("--stdio -- <stdio server> whose child dies: the call in flight gets -32000, then exit 3 with one line", () =>
    Effect.promise(async () => {
      ensureBuilt()
      const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(NODE, [MAIN, "bridge", "--stdio", "--", NODE, routerServer], { stdio: ["pipe", "pipe", "pipe"] })
        let stdout = ""
        let stderr = ""
        const send = (m: object) => child.stdin.write(JSON.stringify(m) + "\n")
        child.stderr.setEncoding("utf8").on("data", (d: string) => void (stderr += d))
        child.stdout.setEncoding("utf8").on("data", (d: string) => {
          stdout += d
          if (stdout.split("\n").filter((l) => l !== "").length === 1 && !stdout.includes('"id":2')) {
            send({ jsonrpc: "2.0", method: "notifications/initialized" })
            send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "exit", arguments: { code: 3 } } })
          }
        })
        child.on("close", (code) => resolve({ code, stdout, stderr }))
        send({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
        })
      })
      const frames = result.stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
      expect(frames).toMatchObject([
        { id: 1, result: { serverInfo: { name: "router-fixture" } } },
        { id: 2, error: { code: -32000, data: { bridge: "TransportClosed" } } }
      ])
      expect(result.code).toBe(3)
      expect(result.stderr.trim().split("\n")).toEqual([
        expect.stringMatching(/^effect-mcp-transport: Transport closed \(process exited, exit code 3/)
      ])
    }))

  it.live("usage errors exit 2 with one line", () =>
    Effect.promise(async () => {
      const both = await runCli(["bridge", "--http", "--stdio", "--", NODE, routerServer])
      expect(both.code).toBe(2)
      expect(both.stderr.trim().split("\n")).toEqual([
        "effect-mcp-transport: give --http (serve a stdio server over HTTP) or --stdio (serve a URL over stdio)"
      ])
      const none = await runCli(["bridge", "--http"])
      expect(none.code).toBe(2)
      expect(none.stderr).toMatch(/no server given/)
      const portWithStdio = await runCli(["bridge", "http://127.0.0.1:1/mcp", "--stdio", "--port", "1"])
      expect(portWithStdio.code).toBe(2)
      const poolWithoutFront = await runCli(["bridge", "--http", "--upstream-pool", "2", "--", NODE, routerServer])
      expect(poolWithoutFront.code).toBe(2)
      expect(poolWithoutFront.stderr.trim()).toBe("effect-mcp-transport: --upstream-pool needs --front-era stateless")
    }))

  it.live("--http --front-era stateless --upstream-pool 2: a client pinned to 2026-07-28 reaches a handshake-only server", () =>
    Effect.gen(function*() {
      const cli = startCli([
        "bridge",
        "--http",
        "--port",
        "0",
        "--front-era",
        "stateless",
        "--upstream-pool",
        "2",
        "--",
        NODE,
        handshakeOnly
      ])
      yield* Effect.addFinalizer(() => Effect.sync(() => cli.child.kill("SIGKILL")))
      yield* Effect.promise(() => cli.waitFor(/listening (http:\S+)/))
      const url = /listening (http:\S+)/.exec(cli.stderr())![1]!
      const scope = yield* Scope.make()
      const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: "2026-07-28" }).pipe(
        Scope.provide(scope)
      )
      expect(client.era).toBe("modern")
      expect(client.serverInfo.name).toBe("handshake-only")
      const pids = yield* Effect.forEach([1, 2], () =>
        Effect.map(client.callTool({ name: "pid" }), (r) => (r.structuredContent as { pid: number }).pid))
      expect(pids.every(isAlive)).toBe(true)

      cli.child.kill("SIGINT")
      const result = yield* Effect.promise(() => cli.exit)
      expect(result.code).toBe(130)
      expect(pids.some(isAlive)).toBe(false)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("--http with the default front: `serve --stdio --eras both` and `--eras modern` reach clients of either era, each in its own", () =>
    Effect.gen(function*() {
      const bridgeTo = (eras: string) =>
        Effect.gen(function*() {
          const cli = startCli(["bridge", "--http", "--port", "0", "--", NODE, MAIN, "serve", "--stdio", "--eras", eras])
          yield* Effect.addFinalizer(() => Effect.sync(() => cli.child.kill("SIGKILL")))
          yield* Effect.promise(() => cli.waitFor(/listening (http:\S+)/))
          return /listening (http:\S+)/.exec(cli.stderr())![1]!
        })
      const served = (url: string, protocol: "2026-07-28" | "2025-11-25") =>
        Effect.gen(function*() {
          const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol })
          const sum = (yield* client.callTool({ name: "add", arguments: { a: 2, b: 3 } })).structuredContent
          return { version: client.protocolVersion, sum }
        }).pipe(Effect.scoped)
      const [both, modernOnly] = yield* Effect.all([bridgeTo("both"), bridgeTo("modern")], { concurrency: 2 })
      const cells = yield* Effect.all([
        served(both, "2026-07-28"),
        served(both, "2025-11-25"),
        served(modernOnly, "2026-07-28"),
        served(modernOnly, "2025-11-25")
      ], { concurrency: "unbounded" })
      expect(cells.map((c) => c.version)).toEqual(["2026-07-28", "2025-11-25", "2026-07-28", "2025-11-25"])
      for (const cell of cells) expect(cell.sum).toEqual({ sum: 5 })
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))
})
