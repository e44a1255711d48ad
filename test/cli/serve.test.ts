/**
 * `effect-mcp-transport serve` run as a user runs it: a spawned process, a real client.
 *
 * The program is the built binary (dist/cli/main.js; `npm run build`
 * first); `EFFECT_MCP_BIN` names another one.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as McpClient from "../../src/client/McpClient.ts"
import * as RequestMeta from "../../src/RequestMeta.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import { isAlive } from "../fixtures/stdio-helpers.ts"
import { awaitEvent, ensureBuilt, MAIN, readEvents } from "./runCli.ts"

const repo = fileURLToPath(new URL("../../", import.meta.url))
const bin = process.env.EFFECT_MCP_BIN ?? (ensureBuilt(), MAIN)

const dir = mkdtempSync(join(tmpdir(), "serve-test-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const eventsFile = () => join(dir, `events-${++files}.jsonl`)

interface Spawned {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  /** Resolves with the exit code (or 128 + signal number when killed). */
  readonly exited: Promise<number>
}

/** The CLI as a child process, killed with the scope if still running. */
const run = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.sync((): Spawned => {
      const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] })
      let out = ""
      let err = ""
      child.stdout!.setEncoding("utf8").on("data", (d: string) => void (out += d))
      child.stderr!.setEncoding("utf8").on("data", (d: string) => void (err += d))
      const exited = new Promise<number>((resolve) =>
        child.on("close", (code, signal) => resolve(code ?? (signal === "SIGKILL" ? 137 : 128))))
      return { child, stdout: () => out, stderr: () => err, exited }
    }),
    (s) => Effect.sync(() => void (s.child.exitCode === null && s.child.signalCode === null && s.child.kill("SIGKILL")))
  )

/** Waits (bounded by the test's timeout) until stderr or stdout has a line matching `re`. */
const awaitOutput = (s: Spawned, which: "stdout" | "stderr", re: RegExp) =>
  Effect.callback<RegExpExecArray, Error>((resume) => {
    const stream = which === "stdout" ? s.child.stdout! : s.child.stderr!
    const check = () => {
      const m = re.exec(which === "stdout" ? s.stdout() : s.stderr())
      if (m !== null) {
        stream.off("data", check)
        s.child.off("close", closed)
        resume(Effect.succeed(m))
      }
    }
    const closed = () => {
      check()
      resume(Effect.fail(new Error(`exited before ${re}: stdout ${s.stdout()} stderr ${s.stderr()}`)))
    }
    // Registered after the collector, so the text is already appended when this runs.
    stream.on("data", check)
    s.child.on("close", closed)
    check()
    return Effect.sync(() => {
      stream.off("data", check)
      s.child.off("close", closed)
    })
  })

const textOf = (result: { readonly content: ReadonlyArray<{ readonly type: string }> }) =>
  result.content.map((c) => ("text" in c ? (c as { text: string }).text : `<${c.type}>`)).join("")


const MODERN = "2026-07-28"
const HANDSHAKE = "2025-11-25"
const BOTH = "stateless 2026-07-28 and handshake 2024-11-05 to 2025-11-25"

/** The example server on stdio through the CLI, `extra` flags added, for an McpClient. */
const stdioServer = (extra: ReadonlyArray<string> = []) =>
  StdioClientTransport.make({
    command: process.execPath,
    args: [bin, "serve", "--stdio", ...extra],
    shutdown: { gracePeriod: "5 seconds", killAfter: "1 second" }
  })

const modernMeta = () => RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: {} })
const initialize = (id: number) => ({
  jsonrpc: "2.0",
  id,
  method: "initialize",
  params: { protocolVersion: HANDSHAKE, capabilities: {}, clientInfo: { name: "raw", version: "1.0.0" } }
})
const discover = (id: number) => ({ jsonrpc: "2.0", id, method: "server/discover", params: { _meta: modernMeta() } })

/** Writes one frame to a raw `serve --stdio` and waits for the reply with its id. */
const exchange = (s: Spawned, message: { readonly id: number }) =>
  Effect.gen(function*() {
    s.child.stdin!.write(JSON.stringify(message) + "\n")
    const [line] = yield* awaitOutput(s, "stdout", new RegExp(`^\\{"jsonrpc":"2\\.0","id":${message.id},.*$`, "m"))
    return JSON.parse(line!) as { id: number; result?: Record<string, unknown>; error?: { code: number; message: string; data?: any } }
  })

/** A raw POST of `body` with `headers`; status and the parsed JSON body. */
const rawPost = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: JSON.stringify(body)
    })
    return { status: res.status, body: await res.json() as { error?: { code: number; message: string; data?: any } } }
  })

/** `serve --http --port 0` with `extra` flags; its URL and the eras it announced. */
const httpServer = (extra: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const server = yield* run(["serve", "--http", "--port", "0", ...extra])
    const [, url, eras] = yield* awaitOutput(server, "stderr", /^listening (http:\/\/127\.0\.0\.1:\d+\/mcp) \(eras: ([^)]+)\)$/m)
    return { server, url: url!, eras: eras! }
  })

describe(`effect-mcp-transport serve (${bin.slice(repo.length)})`, () => {
  it.live("--stdio: tools over stdin/stdout, a cancelled call is seen by the server, the child is gone once the client closed", () =>
    Effect.gen(function*() {
      const events = eventsFile()
      let pid = 0
      yield* Effect.scoped(Effect.gen(function*() {
        const transport = yield* StdioClientTransport.make({
          command: process.execPath,
          args: [bin, "serve", "--stdio"],
          env: { EFFECT_MCP_EXAMPLE_EVENTS: events },
          shutdown: { gracePeriod: "5 seconds", killAfter: "1 second" }
        })
        pid = transport.pid
        const client = yield* McpClient.fromTransport(transport)
        expect(client.serverInfo.name).toBe("effect-mcp-example")
        expect((yield* client.listAllTools()).map((t) => t.name)).toEqual(["echo", "add", "countdown"])
        const sum = yield* client.callTool({ name: "add", arguments: { a: 1, b: 2 } })
        expect(sum.structuredContent).toEqual({ sum: 3 })

        const firstStep = yield* Deferred.make<void>()
        const call = yield* client.callTool(
          { name: "countdown", arguments: { steps: 1000, intervalMs: 50 } },
          { onProgress: () => Effect.asVoid(Deferred.succeed(firstStep, void 0)) }
        ).pipe(Effect.forkChild)
        yield* Deferred.await(firstStep)
        yield* Fiber.interrupt(call)
        const cancelled = yield* awaitEvent(events, (e) => e.event === "cancelled")
        expect(cancelled).toMatchObject({ tool: "countdown", pid })
      }))
      // Closing stdin ended the server on its own (exit 0, well within the grace period).
      expect(isAlive(pid)).toBe(false)
      expect(readEvents(events).map((e) => e.event)).toEqual(["listening", "started", "completed", "started", "cancelled", "stopped"])
      expect(readEvents(events).every((e) => e.pid === pid)).toBe(true)
    }).pipe(Effect.provide(NodeServices.layer)), 60_000)

  it.live("--http --port 0: announces the URL on stderr, serves progress over HTTP, SIGINT stops it (exit 130)", () =>
    Effect.gen(function*() {
      const events = eventsFile()
      const server = yield* run(["serve", "--http", "--port", "0"], { EFFECT_MCP_EXAMPLE_EVENTS: events })
      const [, url] = yield* awaitOutput(server, "stderr", /^listening (http:\/\/127\.0\.0\.1:\d+\/mcp) \(eras: [^)]+\)$/m)
      yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url: url! }))
        let steps = 0
        const result = yield* client.callTool(
          { name: "countdown", arguments: { steps: 3, intervalMs: 10 } },
          { onProgress: () => Effect.sync(() => void steps++) }
        )
        expect(textOf(result)).toBe("countdown finished after 3 steps")
        expect(steps).toBe(3)
      }))
      server.child.kill("SIGINT")
      expect(yield* Effect.promise(() => server.exited)).toBe(130)
      expect(server.stdout()).toBe("")
      expect(readEvents(events).map((e) => e.event)).toEqual(["listening", "started", "completed", "stopped"])
      expect(readEvents(events)[0]).toMatchObject({ transport: "http", url, pid: server.child.pid })
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)), 60_000)

  it.live("--http --json: the URL as JSON on stdout; SIGTERM mid-call (no --grace left) interrupts the call, its client is told, the server stops", () =>
    Effect.gen(function*() {
      const events = eventsFile()
      const server = yield* run(["serve", "--http", "--port", "0", "--json", "--grace", "0"], { EFFECT_MCP_EXAMPLE_EVENTS: events })
      yield* awaitOutput(server, "stdout", /\}\s*$/)
      const announced = JSON.parse(server.stdout()) as { transport: string; url: string; eras: string }
      expect(announced.transport).toBe("http")
      expect(announced.eras).toBe("both")
      expect(announced.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
      yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url: announced.url }))
        const firstStep = yield* Deferred.make<void>()
        const call = yield* client.callTool(
          { name: "countdown", arguments: { steps: 1000, intervalMs: 50 } },
          { onProgress: () => Effect.asVoid(Deferred.succeed(firstStep, void 0)) }
        ).pipe(Effect.flip, Effect.forkScoped)
        yield* Deferred.await(firstStep)
        server.child.kill("SIGTERM")
        expect(yield* Effect.promise(() => server.exited)).toBe(130)
        expect((yield* Fiber.join(call)).message).toContain("The server shut down before the request finished")
      }))
      expect(readEvents(events).map((e) => e.event)).toEqual(["listening", "started", "cancelled", "stopped"])
      expect(isAlive(server.child.pid!)).toBe(false)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)), 60_000)

  it.live("usage errors exit 2 and a taken port exits 1, each with one line on stderr", () =>
    Effect.gen(function*() {
      const holder = yield* Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<Server>((resolve) => {
            const s = createServer()
            s.listen(0, "127.0.0.1", () => resolve(s))
          })
        ),
        (s) => Effect.promise(() => new Promise<void>((resolve) => s.close(() => resolve())))
      )
      const taken = (holder.address() as AddressInfo).port
      const busy = yield* run(["serve", "--http", "--port", String(taken)])
      const portWithoutHttp = yield* run(["serve", "--port", "9000"])
      const badGrace = yield* run(["serve", "--http", "--grace", "soon"])
      expect(yield* Effect.promise(() => busy.exited)).toBe(1)
      expect(busy.stderr().trim()).toMatch(new RegExp(`^effect-mcp-transport: cannot listen on 127\\.0\\.0\\.1:${taken}: .*EADDRINUSE`))
      expect(busy.stderr().trim().split("\n")).toHaveLength(1)
      expect(yield* Effect.promise(() => portWithoutHttp.exited)).toBe(2)
      expect(portWithoutHttp.stderr().trim()).toBe("effect-mcp-transport: --port, --host and --redis need --http")
      expect(portWithoutHttp.stdout()).toBe("")
      expect(yield* Effect.promise(() => badGrace.exited)).toBe(2)
      expect(badGrace.stderr()).toContain(`expected a duration such as 90s or 5m, got "soon"`)
    }).pipe(Effect.scoped), 60_000)
})

describe(`effect-mcp-transport serve, protocol eras (${bin.slice(repo.length)})`, () => {
  it.live("--stdio serves both eras by default: McpClient pinned to 2026-07-28 and to 2025-11-25, each on its own child", () =>
    Effect.gen(function*() {
      for (const [protocol, era] of [[MODERN, "modern"], [HANDSHAKE, "legacy"]] as const) {
        yield* Effect.scoped(Effect.gen(function*() {
          const client = yield* McpClient.connect(stdioServer(), { protocol })
          expect(client.era).toBe(era)
          expect(client.protocolVersion).toBe(protocol)
          expect(client.serverInfo.name).toBe("effect-mcp-example")
          let steps = 0
          const result = yield* client.callTool(
            { name: "countdown", arguments: { steps: 2, intervalMs: 1 } },
            { onProgress: () => Effect.sync(() => void steps++) }
          )
          expect(textOf(result)).toBe("countdown finished after 2 steps")
          expect(steps).toBe(2)
        }))
      }
      // What it announces on stderr (stdout carries frames only).
      const raw = yield* run(["serve", "--stdio"])
      yield* awaitOutput(raw, "stderr", new RegExp(`^serving stdio \\(eras: ${BOTH}\\)$`, "m"))
      raw.child.stdin!.end()
      expect(yield* Effect.promise(() => raw.exited)).toBe(0)
      expect(raw.stdout()).toBe("")
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)), 90_000)

  it.live("--http serves both eras on one URL: pinned 2026-07-28 without a session, pinned 2025-11-25 with one, deleted at close", () =>
    Effect.gen(function*() {
      const { eras, server, url } = yield* httpServer()
      expect(eras).toBe(BOTH)
      for (const [protocol, era] of [[MODERN, "modern"], [HANDSHAKE, "legacy"]] as const) {
        yield* Effect.scoped(Effect.gen(function*() {
          const transport = yield* StreamableHttpClientTransport.make({ url })
          const client = yield* McpClient.fromTransport(transport, { protocol })
          expect(client.era).toBe(era)
          expect(client.protocolVersion).toBe(protocol)
          const sum = yield* client.callTool({ name: "add", arguments: { a: 2, b: 3 } })
          expect(sum.structuredContent).toEqual({ sum: 5 })
          expect((yield* transport.sessionId) !== undefined).toBe(era === "legacy")
        }))
      }
      server.child.kill("SIGINT")
      expect(yield* Effect.promise(() => server.exited)).toBe(130)
    }).pipe(Effect.scoped, Effect.provide([NodeHttpClient.layerUndici, NodeServices.layer])), 60_000)

  it.live("--eras modern: initialize is refused with -32022 listing 2026-07-28, on stdio and over HTTP; the stateless era is served", () =>
    Effect.gen(function*() {
      const raw = yield* run(["serve", "--stdio", "--eras", "modern"])
      yield* awaitOutput(raw, "stderr", /^serving stdio \(eras: stateless 2026-07-28 only\)$/m)
      const refused = yield* exchange(raw, initialize(1))
      expect(refused.error).toMatchObject({ code: -32022, data: { supported: [MODERN], requested: HANDSHAKE } })
      expect((yield* exchange(raw, discover(2))).result).toMatchObject({ supportedVersions: [MODERN] })
      // A request of neither era: the stateless era's -32602 for missing _meta, not "send initialize first".
      const bare = yield* exchange(raw, { jsonrpc: "2.0", id: 3, method: "tools/list" } as { id: number })
      expect(bare.error).toMatchObject({ code: -32602, data: { missing: [RequestMeta.MetaKey.protocolVersion, RequestMeta.MetaKey.clientCapabilities] } })
      raw.child.stdin!.end()
      expect(yield* Effect.promise(() => raw.exited)).toBe(0)

      // Our client pinned to the handshake gets the refusal; in auto it finds the stateless era.
      const pinned = yield* Effect.flip(Effect.scoped(McpClient.connect(stdioServer(["--eras", "modern"]), { protocol: HANDSHAKE })))
      expect(pinned).toMatchObject({ _tag: "McpServerError", reason: { code: -32022 } })

      const { eras, url } = yield* httpServer(["--eras", "modern"])
      expect(eras).toBe("stateless 2026-07-28 only")
      const overHttp = yield* rawPost(url, initialize(1))
      expect(overHttp.status).toBe(400)
      expect(overHttp.body.error).toMatchObject({ code: -32022, data: { supported: [MODERN], requested: HANDSHAKE } })
      const get = yield* Effect.promise(() => fetch(url, { headers: { accept: "text/event-stream" } }))
      expect(get.status).toBe(405)
      yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }))
        expect(client.era).toBe("modern")
        expect(textOf(yield* client.callTool({ name: "echo", arguments: { text: "new" } }))).toBe("new")
      }))
    }).pipe(Effect.scoped, Effect.provide([NodeHttpClient.layerUndici, NodeServices.layer])), 90_000)

  it.live("--eras legacy: a stateless request gets the handshake era's answer (stdio: an error before initialize; HTTP: 400 for the unsupported version), so auto falls back", () =>
    Effect.gen(function*() {
      const raw = yield* run(["serve", "--stdio", "--eras", "legacy"])
      yield* awaitOutput(raw, "stderr", /^serving stdio \(eras: handshake 2024-11-05 to 2025-11-25 only\)$/m)
      // Not one of the stateless era's errors (-32020, -32021, -32022), which would tell a client to stay modern.
      const probe = yield* exchange(raw, discover(1))
      expect(probe.result).toBeUndefined()
      expect([-32020, -32021, -32022]).not.toContain(probe.error!.code)
      expect((yield* exchange(raw, initialize(2))).result).toMatchObject({ protocolVersion: HANDSHAKE })
      raw.child.stdin!.end()
      expect(yield* Effect.promise(() => raw.exited)).toBe(0)

      yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* McpClient.connect(stdioServer(["--eras", "legacy"]))
        expect(client.era).toBe("legacy")
        expect(client.protocolVersion).toBe(HANDSHAKE)
      }))

      const { eras, url } = yield* httpServer(["--eras", "legacy"])
      expect(eras).toBe("handshake 2024-11-05 to 2025-11-25 only")
      const params = { _meta: modernMeta() }
      const modernPost = yield* rawPost(
        url,
        { jsonrpc: "2.0", id: 1, method: "server/discover", params },
        RequestMeta.standardHeaders(MODERN, "server/discover", params)
      )
      // 2025-06-18 on: an unsupported MCP-Protocol-Version is 400; the body lists the revisions served.
      expect(modernPost.status).toBe(400)
      expect(modernPost.body.error!.data.supported).toEqual(["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
      expect([-32020, -32021, -32022]).not.toContain(modernPost.body.error!.code)
      yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }))
        expect(client.era).toBe("legacy")
      }))
      const pinned = yield* Effect.flip(Effect.scoped(McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: MODERN })))
      expect(pinned).toMatchObject({ _tag: "McpServerError", reason: { _tag: "RpcError", code: -32600, data: { requested: MODERN } } })
    }).pipe(Effect.scoped, Effect.provide([NodeHttpClient.layerUndici, NodeServices.layer])), 90_000)

  it.live("--eras takes only both, modern or legacy (usage error, exit 2)", () =>
    Effect.gen(function*() {
      const bad = yield* run(["serve", "--eras", "future"])
      expect(yield* Effect.promise(() => bad.exited)).toBe(2)
      expect(bad.stderr()).toMatch(/future/)
    }).pipe(Effect.scoped), 60_000)
})
