import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, FileSystem, Layer, Option, Ref, Schedule, Scope, Stream } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import { TestClock } from "effect/testing"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpManager from "../../src/client/McpManager.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import { HttpError, SpawnError } from "../../src/McpError.ts"
import type { Handler } from "../../src/server/Handler.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import { makeServer } from "../fixtures/router-stdio-server.ts"
import * as Misbehaving from "./http/MisbehavingServer.ts"
import { isAlive } from "../fixtures/stdio-helpers.ts"

const { Config, ServerStatus, ToolCache } = McpManager
type ServerStatus = McpManager.ServerStatus

const fixturePath = new URL("../fixtures/router-stdio-server.ts", import.meta.url).pathname

/** Child processes can take seconds to start on a loaded machine: wait for them rather than serve from cache. */
const SLOW_MACHINE = "25 seconds"

/** Opens stdio transports from config entries (what fromConfig does for stdio), short shutdown timings. */
const stdioFactory: McpManager.TransportFactory<SpawnError, ChildProcessSpawner.ChildProcessSpawner> = (_, config) =>
  Config.isStdio(config)
    ? StdioClientTransport.make({
      command: config.command,
      args: config.args,
      env: config.env,
      cwd: config.cwd,
      shutdown: { gracePeriod: "200 millis", killAfter: "200 millis" },
      stderr: { log: false }
    })
    : Effect.die("stdio only in these tests")

/** The handshake era: these tests restore sessions (log level, subscriptions) and fake handshake faults. */
const fixtureEntry = (name: string, flags: ReadonlyArray<string> = []) => ({
  command: process.execPath,
  args: [fixturePath, "--name", name, ...flags],
  protocol: "2025-11-25" as const
})

/**
 * In-memory servers built per connection (fresh session state each time),
 * with the pairs kept so a test can kill a server as a crash would.
 */
const inMemoryServers = (
  definitions: Record<string, McpServer.McpServer>,
  wrap: (name: string, handler: Handler) => Handler = (_, h) => h
) => {
  const pairs = new Map<string, InMemoryTransport.InMemoryPair>()
  let opened = 0
  const factory: McpManager.TransportFactory<never, never> = (name) =>
    Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(definitions[name]!)
      const pair = yield* InMemoryTransport.makePair(wrap(name, handle.handler))
      pairs.set(name, pair)
      opened++
      return pair.client
    })
  const config = {
    mcpServers: Object.fromEntries(
      Object.keys(definitions).map((n) => [n, { command: "in-memory", protocol: "2025-11-25" as const }])
    )
  }
  return { factory, config, pairs, opened: () => opened }
}

/** Waits (no clock involved) until the server's status satisfies `ok`, returning it. */
const statusWhere = (manager: McpManager.McpManagerShape, server: string, ok: (s: ServerStatus) => boolean) =>
  manager.status(server).pipe(Stream.filter(ok), Stream.runHead, Effect.map(Option.getOrThrow))

const pidOf = (manager: McpManager.McpManagerShape, server: string) =>
  Effect.map(manager.callTool(`${server}__pid`), (r) => (r.structuredContent as { pid: number }).pid)

/** Lets in-memory fibers run (no clock involved). */
const settle = Effect.gen(function*() {
  for (let i = 0; i < 100; i++) yield* Effect.yieldNow
})

describe("McpManager", () => {
  describe("configuration", () => {
    it.effect("decodes stdio, http and sse entries; bad entries are named with the reason", () =>
      Effect.gen(function*() {
        const decoded = yield* Config.decode({
          mcpServers: {
            files: { command: "npx", args: ["-y", "srv"], env: { A: "1" }, cwd: "/tmp" },
            remote: { type: "http", url: "https://example.com/mcp", headers: { Authorization: "Bearer x" } },
            legacy: { type: "sse", url: "http://localhost:1/sse" },
            aliased: { type: "streamable-http", url: "http://localhost:1/mcp" },
            off: { command: "x", disabled: true },
            noCommand: { args: [] },
            badUrl: { type: "http", url: "not a url" },
            badType: { type: "websocket", url: "ws://x" },
            badArgs: { command: "x", args: "nope" },
            "bad name!": { command: "x" },
            notObject: 3
          }
        })
        expect(decoded.servers.map((s) => s.name)).toEqual(["files", "remote", "legacy", "aliased"])
        expect(decoded.servers[0]!.config).toEqual({ command: "npx", args: ["-y", "srv"], env: { A: "1" }, cwd: "/tmp" })
        expect(decoded.servers[3]!.config).toMatchObject({ type: "http" })
        const reasons = Object.fromEntries(decoded.invalid.map((e) => [e.server, e.reason]))
        expect(Object.keys(reasons)).toEqual(["noCommand", "badUrl", "badType", "badArgs", "bad name!", "notObject"])
        expect(reasons.noCommand).toContain("command")
        expect(reasons.badUrl).toContain("not an absolute URL")
        expect(reasons.badType).toContain("websocket")
        expect(reasons.badArgs).toContain("args")
        expect(reasons["bad name!"]).toContain("server names")
        expect(decoded.invalid[0]!.message).toContain(`server "noCommand"`)
      }))

    it.effect("a document that is not an object, or not JSON, fails as a whole", () =>
      Effect.gen(function*() {
        expect((yield* Effect.flip(Config.decode([]))).server).toBeUndefined()
        expect((yield* Effect.flip(Config.decode({ mcpServers: 1 }))).reason).toContain("mcpServers")
        expect((yield* Effect.flip(Config.decodeJson("{"))).reason).toContain("not JSON")
        expect((yield* Effect.flip(Config.decodeStrict({ mcpServers: { x: {} } }))).server).toBe("x")
        // The inner map alone is accepted too.
        expect((yield* Config.decode({ a: { command: "x" } })).servers.length).toBe(1)
      }))
  })

  describe("over stdio (real child processes)", { timeout: 60_000 }, () => {
    it.live("connects all servers concurrently; a broken one among good ones fails alone; tools are prefixed and routed", () =>
      Effect.gen(function*() {
        const manager = yield* McpManager.make({
          config: {
            mcpServers: {
              alpha: fixtureEntry("alpha"),
              beta: fixtureEntry("beta"),
              broken: { command: "/nonexistent/mcp-server" },
              invalid: { url: "nope" }
            }
          },
          // The default transport factory (fromConfig).
          reconnectSchedule: Schedule.spaced("1 hour"),
          slowStartThreshold: SLOW_MACHINE
        })
        expect(manager.servers).toEqual(["alpha", "beta", "broken", "invalid"])
        const statuses = yield* manager.statuses
        expect(statuses.alpha).toMatchObject({ _tag: "Ready", generation: 1, serverInfo: { name: "alpha" } })
        expect(statuses.beta).toMatchObject({ _tag: "Ready", serverInfo: { name: "beta" } })
        expect(statuses.broken).toMatchObject({ _tag: "Reconnecting", lastError: { _tag: "SpawnError" } })
        expect(statuses.invalid).toMatchObject({ _tag: "Failed", lastError: { _tag: "ConfigError" } })

        const tools = yield* manager.tools
        expect(tools.filter((t) => t.server === "alpha").length).toBe(13)
        expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["alpha__echo", "beta__echo"]))
        expect(tools.every((t) => !t.cached)).toBe(true)
        const a = yield* manager.callTool("alpha__echo", { text: "to alpha" })
        expect(a.content[0]).toMatchObject({ text: "to alpha" })
        expect(yield* pidOf(manager, "alpha")).not.toBe(yield* pidOf(manager, "beta"))

        expect(yield* Effect.flip(manager.callTool("nobody__echo"))).toMatchObject({ _tag: "UnknownTool" })
        expect(yield* Effect.flip(manager.callTool("echo"))).toMatchObject({ _tag: "UnknownTool" })
        expect(yield* Effect.flip(manager.callTool("broken__echo"))).toMatchObject({ _tag: "ServerUnavailable" })
        expect(yield* Effect.flip(manager.client("zeta"))).toMatchObject({ _tag: "UnknownServer" })
      }).pipe(Effect.scoped, Effect.provide([NodeServices.layer, NodeHttpClient.layerUndici])))

    it.live("a server that never answers initialize times out alone; an unsupported version is a typed failure", () =>
      Effect.gen(function*() {
        const manager = yield* McpManager.make({
          config: {
            mcpServers: {
              good: fixtureEntry("good"),
              mute: { ...fixtureEntry("mute", ["--mute-initialize"]), connectTimeout: 500 },
              future: fixtureEntry("future", ["--force-version", "2099-01-01"])
            }
          },
          transport: stdioFactory,
          slowStartThreshold: SLOW_MACHINE,
          reconnectSchedule: Schedule.spaced("1 hour")
        })
        const statuses = yield* manager.statuses
        expect(statuses.good?._tag).toBe("Ready")
        expect(statuses.mute).toMatchObject({ _tag: "Reconnecting", lastError: { _tag: "ConnectTimeout" } })
        expect(statuses.future).toMatchObject({
          _tag: "Reconnecting",
          lastError: { _tag: "UnsupportedProtocolVersion", received: "2099-01-01" }
        })
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("kill the process mid-session: in-flight calls fail typed, the manager heals within the schedule and restores the session", () =>
      Effect.gen(function*() {
        const manager = yield* McpManager.make({
          config: { mcpServers: { srv: fixtureEntry("srv") } },
          transport: stdioFactory,
          slowStartThreshold: SLOW_MACHINE,
          reconnectSchedule: Schedule.spaced("200 millis")
        })
        const changed = yield* manager.events.pipe(
          Stream.filter((e) => e._tag === "SessionChanged"),
          Stream.runHead,
          Effect.forkChild({ startImmediately: true })
        )
        yield* manager.setLoggingLevel("srv", "error")
        yield* manager.subscribeResource("srv", "fixture://hello")
        const pid = yield* pidOf(manager, "srv")
        const started = yield* Deferred.make<void>()
        const inFlight = yield* manager.callTool("srv__slow", { ms: 60_000 }, {
          onProgress: () => Deferred.succeed(started, undefined).pipe(Effect.asVoid)
        }).pipe(Effect.forkChild)
        yield* Deferred.await(started)

        process.kill(pid, "SIGKILL")
        const error = yield* Effect.flip(Fiber.join(inFlight))
        expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "TransportClosed" } })
        const reconnecting = yield* statusWhere(manager, "srv", (s) => s._tag === "Reconnecting")
        expect(reconnecting).toMatchObject({ delayMs: 200, lastError: { _tag: "TransportClosed" } })
        const ready = yield* statusWhere(manager, "srv", (s) => s._tag === "Ready")
        expect(ready).toMatchObject({ generation: 2 })
        expect(Option.getOrThrow(yield* Fiber.join(changed))).toMatchObject({
          _tag: "SessionChanged",
          server: "srv",
          generation: 2,
          reason: "transport-closed"
        })
        const newPid = yield* pidOf(manager, "srv")
        expect(newPid).not.toBe(pid)
        expect(isAlive(pid)).toBe(false)
        // What the old session had set up was set up again.
        const subs = yield* manager.callTool("srv__subscriptions")
        expect(subs.content[0]).toMatchObject({ text: "fixture://hello" })
        const fresh = yield* manager.client("srv")
        const logs = yield* fresh.logging.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild({ startImmediately: true }))
        yield* manager.callTool("srv__log", { level: "warning", text: "below the restored level" })
        yield* manager.callTool("srv__log", { level: "error", text: "at the level" })
        expect((yield* Fiber.join(logs)).map((l) => l.data)).toEqual(["at the level"])
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("a manual reconnect ends the old process before the new one serves", () =>
      Effect.gen(function*() {
        const manager = yield* McpManager.make({
          config: { mcpServers: { srv: fixtureEntry("srv") } },
          transport: stdioFactory,
          slowStartThreshold: SLOW_MACHINE
        })
        const pid = yield* pidOf(manager, "srv")
        yield* manager.reconnect("srv")
        yield* statusWhere(manager, "srv", (s) => s._tag === "Ready" && s.generation === 2)
        expect(isAlive(pid)).toBe(false)
        expect(yield* pidOf(manager, "srv")).not.toBe(pid)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("closing the scope closes every server in parallel: processes gone, statuses Closed", () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const manager = yield* McpManager.make({
          config: { mcpServers: { a: fixtureEntry("a"), b: fixtureEntry("b"), c: fixtureEntry("c") } },
          transport: stdioFactory,
          slowStartThreshold: SLOW_MACHINE
        }).pipe(Scope.provide(scope))
        const pids = yield* Effect.forEach(["a", "b", "c"], (s) => pidOf(manager, s))
        expect(pids.every(isAlive)).toBe(true)
        yield* Scope.close(scope, Exit.void)
        expect(pids.some(isAlive)).toBe(false)
        const statuses = yield* manager.statuses
        expect(Object.values(statuses).map((s) => s._tag)).toEqual(["Closed", "Closed", "Closed"])
      }).pipe(Effect.provide(NodeServices.layer)))
  })

  describe("over HTTP (a real loopback server)", () => {
    it.live("a server refusing with 503 and Retry-After: the manager waits what it asked before the next attempt", () =>
      Effect.gen(function*() {
        const server = yield* Misbehaving.make
        yield* server.setHandler(() => Effect.succeed(Misbehaving.status(503, "draining", { "retry-after": "30" })))
        const manager = yield* McpManager.make({
          config: { mcpServers: { busy: { type: "http", url: server.url } } },
          reconnectSchedule: Schedule.spaced("1 second")
        })
        expect((yield* manager.statuses).busy).toMatchObject({
          _tag: "Reconnecting",
          delayMs: 30_000,
          lastError: { _tag: "HttpError", status: 503, retryAfterMs: 30_000 }
        })
        // 30 seconds is past what a transport waits for itself: one POST, then the manager's wait.
        expect(server.received("POST")).toHaveLength(1)
      }).pipe(Effect.scoped, Effect.provide([NodeServices.layer, NodeHttpClient.layerUndici])))
  })

  describe("healing policy (in-memory, TestClock)", () => {
    it.effect("follows the schedule, then the circuit breaker opens; after the cool-down one trial goes through", () =>
      Effect.gen(function*() {
        const attempts = yield* Ref.make(0)
        const healthy = yield* Ref.make(false)
        const handle = yield* McpServer.toHandler(makeServer())
        const manager = yield* McpManager.make({
          config: { mcpServers: { flaky: { command: "x" } } },
          transport: () =>
            Effect.gen(function*() {
              yield* Ref.update(attempts, (n) => n + 1)
              if (!(yield* Ref.get(healthy))) return yield* new SpawnError({ command: "x", args: [], cause: "down" })
              return yield* InMemoryTransport.make(handle.handler)
            }),
          reconnectSchedule: Schedule.exponential("1 second", 2),
          circuitBreaker: { failureThreshold: 3, cooldown: "60 seconds" },
          slowStartThreshold: "1 millis"
        })
        yield* settle
        expect(yield* Ref.get(attempts)).toBe(1)
        expect(Option.getOrThrow(yield* Stream.runHead(manager.status("flaky")))).toMatchObject({
          _tag: "Reconnecting",
          attempt: 2,
          delayMs: 1000
        })
        yield* TestClock.adjust("1 second")
        yield* settle
        expect(yield* Ref.get(attempts)).toBe(2)
        expect(Option.getOrThrow(yield* Stream.runHead(manager.status("flaky")))).toMatchObject({ delayMs: 2000 })
        yield* TestClock.adjust("2 seconds")
        yield* settle
        expect(yield* Ref.get(attempts)).toBe(3)
        // Third failure in a row: the circuit opens.
        expect(Option.getOrThrow(yield* Stream.runHead(manager.status("flaky")))).toMatchObject({
          _tag: "CircuitOpen",
          retryInMs: 60_000,
          lastError: { _tag: "SpawnError" }
        })
        yield* TestClock.adjust("59 seconds")
        yield* settle
        expect(yield* Ref.get(attempts)).toBe(3)
        yield* Ref.set(healthy, true)
        yield* TestClock.adjust("1 second")
        yield* settle
        expect(yield* Ref.get(attempts)).toBe(4)
        expect(Option.getOrThrow(yield* Stream.runHead(manager.status("flaky")))).toMatchObject({ _tag: "Ready" })
      }))

    it.effect("a refusal for now (503 or 429 with Retry-After) is waited out, up to the cool-down, before the next attempt", () =>
      Effect.gen(function*() {
        const refusals: Array<HttpError> = [
          new HttpError({ status: 503, body: "draining", method: "initialize", retryAfterMs: 20_000 }),
          new HttpError({ status: 429, body: "", method: "initialize", retryAfterMs: 3_600_000 }),
          new HttpError({ status: 500, body: "", method: "initialize", retryAfterMs: 20_000 })
        ]
        const attempts = yield* Ref.make(0)
        const handle = yield* McpServer.toHandler(makeServer())
        const manager = yield* McpManager.make({
          config: { mcpServers: { busy: { command: "x" } } },
          transport: () =>
            Effect.gen(function*() {
              const n = yield* Ref.getAndUpdate(attempts, (k) => k + 1)
              if (n < refusals.length) return yield* refusals[n]!
              return yield* InMemoryTransport.make(handle.handler)
            }),
          reconnectSchedule: Schedule.spaced("1 second"),
          circuitBreaker: { failureThreshold: 10, cooldown: "60 seconds" },
          slowStartThreshold: "1 millis"
        })
        const status = Effect.map(Stream.runHead(manager.status("busy")), Option.getOrThrow)
        yield* settle
        expect(yield* status).toMatchObject({ _tag: "Reconnecting", delayMs: 20_000, lastError: { _tag: "HttpError", status: 503 } })
        yield* TestClock.adjust("19 seconds")
        yield* settle
        expect(yield* Ref.get(attempts)).toBe(1)
        yield* TestClock.adjust("1 second")
        yield* settle
        // An hour asked for: the manager stays away for its cool-down only.
        expect(yield* status).toMatchObject({ _tag: "Reconnecting", delayMs: 60_000, lastError: { status: 429 } })
        yield* TestClock.adjust("60 seconds")
        yield* settle
        // A 500 is not a refusal for now: the schedule alone decides.
        expect(yield* status).toMatchObject({ _tag: "Reconnecting", delayMs: 1_000, lastError: { status: 500 } })
        yield* TestClock.adjust("1 second")
        yield* settle
        expect(yield* Ref.get(attempts)).toBe(4)
        const ready = yield* Stream.runHead(Stream.filter(manager.status("busy"), (s) => s._tag === "Ready"))
        expect(Option.isSome(ready)).toBe(true)
      }))

    it.effect("a half-open trial that fails opens the circuit again", () =>
      Effect.gen(function*() {
        const attempts = yield* Ref.make(0)
        const manager = yield* McpManager.make({
          config: { mcpServers: { down: { command: "x" } } },
          transport: () =>
            Effect.andThen(
              Ref.update(attempts, (n) => n + 1),
              Effect.fail(new SpawnError({ command: "x", args: [], cause: "down" }))
            ),
          reconnectSchedule: Schedule.spaced("1 second"),
          circuitBreaker: { failureThreshold: 1, cooldown: "10 seconds" },
          slowStartThreshold: "1 millis"
        })
        yield* settle
        expect(Option.getOrThrow(yield* Stream.runHead(manager.status("down")))).toMatchObject({ _tag: "CircuitOpen" })
        yield* TestClock.adjust("10 seconds")
        yield* settle
        expect(yield* Ref.get(attempts)).toBe(2)
        expect(Option.getOrThrow(yield* Stream.runHead(manager.status("down")))).toMatchObject({
          _tag: "CircuitOpen",
          retryInMs: 10_000
        })
      }))

    it.effect("an exhausted schedule is Failed until reconnect()", () =>
      Effect.gen(function*() {
        const attempts = yield* Ref.make(0)
        const manager = yield* McpManager.make({
          config: { mcpServers: { once: { command: "x" } } },
          transport: () =>
            Effect.andThen(
              Ref.update(attempts, (n) => n + 1),
              Effect.fail(new SpawnError({ command: "x", args: [], cause: "down" }))
            ),
          reconnectSchedule: Schedule.recurs(1),
          slowStartThreshold: "1 millis"
        })
        yield* settle
        yield* TestClock.adjust("1 second")
        yield* settle
        expect(yield* Ref.get(attempts)).toBe(2)
        const failed = yield* statusWhere(manager, "once", (s) => s._tag === "Failed")
        expect(failed).toMatchObject({ lastError: { _tag: "SpawnError" } })
        // It starts over: a fresh schedule (one more retry), then Failed again.
        yield* manager.reconnect("once")
        yield* settle
        expect(yield* Ref.get(attempts)).toBe(4)
        expect(Option.getOrThrow(yield* Stream.runHead(manager.status("once")))).toMatchObject({ _tag: "Failed" })
      }))

    it.effect("a server killed while ready heals after the schedule's delay; calls wait for it", () =>
      Effect.gen(function*() {
        const servers = inMemoryServers({ one: makeServer({ name: "one" }) })
        const manager = yield* McpManager.make({
          config: servers.config,
          transport: servers.factory,
          reconnectSchedule: Schedule.spaced("5 seconds")
        })
        expect(servers.opened()).toBe(1)
        yield* servers.pairs.get("one")!.server.kill("crashed")
        const reconnecting = yield* statusWhere(manager, "one", (s) => s._tag === "Reconnecting")
        expect(reconnecting).toMatchObject({ delayMs: 5000, lastError: { _tag: "TransportClosed", reason: "crashed" } })
        // A call made now waits for the server instead of failing.
        const call = yield* manager.callTool("one__echo", { text: "after" }).pipe(Effect.forkChild({ startImmediately: true }))
        yield* settle
        yield* TestClock.adjust("5 seconds")
        const result = yield* Fiber.join(call)
        expect(result.content[0]).toMatchObject({ text: "after" })
        expect(servers.opened()).toBe(2)
        expect(Option.getOrThrow(yield* Stream.runHead(manager.status("one")))).toMatchObject({ _tag: "Ready", generation: 2 })
      }))

    it.effect("keep-alive failures mark the server degraded and trigger healing", () =>
      Effect.gen(function*() {
        const silent = new Set<number>()
        let connection = 0
        const servers = inMemoryServers({ pinged: makeServer() }, (_, h) => {
          const id = ++connection
          return (message, ctx) => (message.method === "ping" && silent.has(id) ? Effect.never : h(message, ctx))
        })
        const manager = yield* McpManager.make({
          config: servers.config,
          transport: servers.factory,
          client: { keepAlive: { interval: "10 seconds", timeout: "1 second", failureThreshold: 1 } },
          reconnectSchedule: Schedule.spaced("1 second")
        })
        silent.add(1)
        const statuses: Array<string> = []
        yield* manager.status("pinged").pipe(
          Stream.runForEach((s) => Effect.sync(() => void statuses.push(s._tag))),
          Effect.forkChild({ startImmediately: true })
        )
        yield* settle
        yield* TestClock.adjust("11 seconds")
        yield* settle
        expect(statuses).toContain("Degraded")
        yield* TestClock.adjust("1 second")
        yield* settle
        expect(Option.getOrThrow(yield* Stream.runHead(manager.status("pinged")))).toMatchObject({ _tag: "Ready", generation: 2 })
        expect(statuses.slice(0, 5)).toEqual(["Ready", "Degraded", "Reconnecting", "Connecting", "Ready"])
      }))

    it.effect("a manual reconnect replaces the connection at once", () =>
      Effect.gen(function*() {
        const servers = inMemoryServers({ m: makeServer() })
        const manager = yield* McpManager.make({ config: servers.config, transport: servers.factory })
        const events = yield* manager.events.pipe(
          Stream.filter((e) => e._tag === "SessionChanged"),
          Stream.take(1),
          Stream.runCollect,
          Effect.forkChild({ startImmediately: true })
        )
        yield* manager.reconnect("m")
        const ready = yield* statusWhere(manager, "m", (s) => s._tag === "Ready" && s.generation === 2)
        expect(ready._tag).toBe("Ready")
        expect((yield* Fiber.join(events))[0]).toMatchObject({ reason: "manual" })
        expect(servers.opened()).toBe(2)
      }))
  })

  describe("slow start and the tool cache", () => {
    it.effect("a slow server's tools come from the cache, marked cached, until it is ready", () =>
      Effect.gen(function*() {
        const release = yield* Deferred.make<void>()
        const cache = ToolCache.memory()
        // A first life fills the cache.
        const servers = inMemoryServers({ slow: makeServer(), quick: makeServer() })
        yield* Effect.scoped(McpManager.make({ config: servers.config, transport: servers.factory, toolCache: cache }))
        const manager = yield* McpManager.make({
          config: servers.config,
          transport: (name, config) =>
            name === "slow"
              ? Effect.andThen(Deferred.await(release), servers.factory(name, config))
              : servers.factory(name, config),
          toolCache: cache,
          slowStartThreshold: "2 seconds"
        }).pipe(Effect.forkChild({ startImmediately: true }))
        yield* settle
        expect(manager.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust("2 seconds")
        const m = yield* Fiber.join(manager)
        const tools = yield* m.tools
        const slowTools = tools.filter((t) => t.server === "slow")
        expect(slowTools.length).toBe(13)
        expect(slowTools.every((t) => t.cached)).toBe(true)
        expect(tools.filter((t) => t.server === "quick").every((t) => !t.cached)).toBe(true)
        // Calling a cached tool waits for its server.
        const call = yield* m.callTool("slow__echo", { text: "patience" }).pipe(Effect.forkChild({ startImmediately: true }))
        yield* Deferred.succeed(release, undefined)
        const result = yield* Fiber.join(call)
        expect(result.content[0]).toMatchObject({ text: "patience" })
        expect((yield* m.tools).filter((t) => t.server === "slow").every((t) => !t.cached)).toBe(true)
      }))

    it.effect("the cache file round-trips listings per server and tolerates a missing or corrupt file", () =>
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped()
        const path = `${dir}/nested/tools.json`
        const cache = yield* ToolCache.file(path)
        expect(Option.isNone(yield* cache.load("a"))).toBe(true)
        const servers = inMemoryServers({ a: makeServer(), b: makeServer({ toolsPage: 3 }) })
        yield* Effect.scoped(McpManager.make({ config: servers.config, transport: servers.factory, toolCache: cache }))
        const a = Option.getOrThrow(yield* cache.load("a"))
        expect(a.tools.map((t) => t.name)).toContain("echo")
        expect(Option.getOrThrow(yield* cache.load("b")).tools.length).toBe(13)
        const text = yield* fs.readFileString(path)
        expect(JSON.parse(text)).toMatchObject({ version: 1, servers: { a: { tools: expect.any(Array) } } })
        yield* fs.writeFileString(path, "{ corrupt")
        expect(Option.isNone(yield* cache.load("a"))).toBe(true)
      }).pipe(Effect.provide(NodeServices.layer)))
  })

  describe("session expiry (Streamable HTTP)", { timeout: 60_000 }, () => {
    it.live("an expired session is re-initialized for the next call, with its log level and subscriptions restored", () =>
      Effect.gen(function*() {
        const handle = yield* McpServer.toHandler(makeServer({ name: "remote" }))
        const services = yield* Layer.build(HttpServerTransport.layer(handle.handler, { port: 0 }))
        const server = Context.get(services, HttpServerTransport.HttpServerTransport)
        const manager = yield* McpManager.make({
          config: { mcpServers: { remote: { type: "http", url: Option.getOrThrow(server.url), protocol: "2025-11-25" } } },
          // Without the standalone stream only a call can discover the expiry: this test is about that call.
          transport: (_, config) =>
            Config.isStdio(config)
              ? Effect.die("http only here")
              : StreamableHttpClientTransport.make({ url: config.url, listen: false }),
          reconnectSchedule: Schedule.spaced("1 hour")
        })
        const changed = yield* manager.events.pipe(
          Stream.filter((e) => e._tag === "SessionChanged"),
          Stream.runHead,
          Effect.forkChild({ startImmediately: true })
        )
        yield* manager.setLoggingLevel("remote", "critical")
        yield* manager.subscribeResource("remote", "fixture://hello")
        const [first] = yield* server.sessionIds
        expect(first).toBeDefined()

        // The server forgets the session: the call that finds out fails, typed, and is not replayed.
        yield* server.closeSession(first!)
        const error = yield* Effect.flip(manager.callTool("remote__echo", { text: "lost" }))
        expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "SessionExpired" } })
        // The next call gets a new session.
        const result = yield* manager.callTool("remote__echo", { text: "again" })
        expect(result.content[0]).toMatchObject({ text: "again" })
        expect(Option.getOrThrow(yield* Fiber.join(changed))).toMatchObject({
          server: "remote",
          generation: 2,
          reason: "session-expired"
        })
        const [second] = yield* server.sessionIds
        expect(second).not.toBe(first)
        const session = (yield* handle.sessions).find((s) => s.sessionId === second)
        expect(session?.logLevel).toBe("critical")
        const subs = yield* manager.callTool("remote__subscriptions")
        expect(subs.content[0]).toMatchObject({ text: "fixture://hello" })
      }).pipe(Effect.scoped, Effect.provide([NodeHttpClient.layerUndici, NodeServices.layer])))

    it.live("with the default transport (standalone stream open) an expiry is noticed without a call", () =>
      Effect.gen(function*() {
        const handle = yield* McpServer.toHandler(makeServer({ name: "remote" }))
        const services = yield* Layer.build(HttpServerTransport.layer(handle.handler, { port: 0 }))
        const server = Context.get(services, HttpServerTransport.HttpServerTransport)
        const manager = yield* McpManager.make({
          config: { mcpServers: { remote: { type: "http", url: Option.getOrThrow(server.url), protocol: "2025-11-25" } } },
          reconnectSchedule: Schedule.spaced("1 hour")
        })
        yield* manager.setLoggingLevel("remote", "alert")
        const [first] = yield* server.sessionIds
        const statuses: Array<string> = []
        const ready = yield* manager.status("remote").pipe(
          Stream.tap((s) => Effect.sync(() => void statuses.push(s._tag))),
          Stream.filter((s) => s._tag === "Ready" && s.generation === 2),
          Stream.runHead,
          Effect.forkChild({ startImmediately: true })
        )
        yield* server.closeSession(first!)
        expect(Option.isSome(yield* Fiber.join(ready))).toBe(true)
        expect(statuses).toContain("Expired")
        const second = (yield* server.sessionIds).find((id) => id !== first)
        expect((yield* handle.sessions).find((s) => s.sessionId === second)?.logLevel).toBe("alert")
      }).pipe(Effect.scoped, Effect.provide([NodeHttpClient.layerUndici, NodeServices.layer])))
  })
})
