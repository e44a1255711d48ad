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
      const [, url] = yield* awaitOutput(server, "stderr", /^listening (http:\/\/127\.0\.0\.1:\d+\/mcp)$/m)
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

  it.live("--http --json: the URL as JSON on stdout; SIGTERM mid-call interrupts the call and stops the server", () =>
    Effect.gen(function*() {
      const events = eventsFile()
      const server = yield* run(["serve", "--http", "--port", "0", "--json"], { EFFECT_MCP_EXAMPLE_EVENTS: events })
      yield* awaitOutput(server, "stdout", /\}\s*$/)
      const announced = JSON.parse(server.stdout()) as { transport: string; url: string }
      expect(announced.transport).toBe("http")
      expect(announced.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
      yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url: announced.url }))
        const firstStep = yield* Deferred.make<void>()
        yield* client.callTool(
          { name: "countdown", arguments: { steps: 1000, intervalMs: 50 } },
          { onProgress: () => Effect.asVoid(Deferred.succeed(firstStep, void 0)) }
        ).pipe(Effect.ignore, Effect.forkScoped)
        yield* Deferred.await(firstStep)
        server.child.kill("SIGTERM")
        expect(yield* Effect.promise(() => server.exited)).toBe(130)
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
      expect(yield* Effect.promise(() => busy.exited)).toBe(1)
      expect(busy.stderr().trim()).toMatch(new RegExp(`^effect-mcp-transport: cannot listen on 127\\.0\\.0\\.1:${taken}: .*EADDRINUSE`))
      expect(busy.stderr().trim().split("\n")).toHaveLength(1)
      expect(yield* Effect.promise(() => portWithoutHttp.exited)).toBe(2)
      expect(portWithoutHttp.stderr().trim()).toBe("effect-mcp-transport: --port and --host need --http")
      expect(portWithoutHttp.stdout()).toBe("")
    }).pipe(Effect.scoped), 60_000)
})
