/**
 * A notification stream subscribed before a call hears everything the call
 * makes the server say, however late the stream is run: 200 calls of a tool
 * that logs twice then answers, over a real child process (stdio) and a real
 * loopback server (Streamable HTTP), in the handshake era (`logging/setLevel`)
 * and the stateless one (the client's `logLevel`). Then the same for the
 * transport's notifications and the manager's events, and the end of a
 * subscription with its scope. In memory, a plain `client.logging` stream
 * forked just before the first call of a stateless-era client misses the
 * first line every time; the subscription made first never does.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Scope, Stream } from "effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as McpManager from "../../src/client/McpManager.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import { makeServer } from "../fixtures/router-stdio-server.ts"
import { openLoggingSession } from "../fixtures/stdio-helpers.ts"

const fixturePath = new URL("../fixtures/router-stdio-server.ts", import.meta.url).pathname
const RUNS = 200
const Env = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)

type Era = "2025-11-25" | "2026-07-28"

const fixtureProcess: StdioClientTransport.StdioClientConfig = {
  command: process.execPath,
  args: [fixturePath],
  shutdown: { gracePeriod: "300 millis", killAfter: "300 millis" }
}

/** The stateless era asks for debug logs on every request; the handshake era sets the level once. */
const eraOptions = (era: Era): McpClient.McpClientOptions =>
  era === "2026-07-28" ? { protocol: era, logLevel: "debug", listen: false } : { protocol: era }

const connectStdio = (era: Era) => McpClient.connect(StdioClientTransport.make(fixtureProcess), eraOptions(era))

const serveHttp = Effect.gen(function*() {
  const handle = yield* McpServer.toHandler(makeServer())
  const context = yield* Layer.build(HttpServerTransport.layer(handle.handler, { port: 0 }))
  return Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
})

const connectHttp = (era: Era) =>
  Effect.flatMap(serveHttp, (url) => McpClient.connect(StreamableHttpClientTransport.make({ url }), eraOptions(era)))

const logTwice = { name: "log", arguments: { level: "info", text: "line", count: 2 } }

/**
 * Each run: subscribe, call the tool that logs twice, then read the
 * subscription (only now), up to both lines. Returns the runs that did not
 * see exactly the two lines, in order.
 */
const subscribedRuns = (client: McpClient.McpClientShape) =>
  Effect.gen(function*() {
    if (client.era === "legacy") yield* client.setLoggingLevel("debug")
    const wrong: Array<string> = []
    for (let run = 0; run < RUNS; run++) {
      const lines = yield* Effect.scoped(Effect.gen(function*() {
        const logs = yield* client.subscribeLogging
        yield* client.callTool(logTwice)
        return yield* logs.pipe(Stream.map((m) => String(m.data)), Stream.take(2), Stream.runCollect)
      }))
      if (lines.join(",") !== "line 1,line 2") wrong.push(`${run}: ${lines.join(",")}`)
    }
    return wrong
  })

describe("subscriptions that exist before the call", () => {
  for (const era of ["2025-11-25", "2026-07-28"] as const) {
    it.live(`stdio, ${era}: 200 runs of "log, log, return" see both lines every time`, () =>
      Effect.gen(function*() {
        const client = yield* connectStdio(era)
        expect(client.protocolVersion).toBe(era)
        expect(yield* subscribedRuns(client)).toEqual([])
      }).pipe(Effect.scoped, Effect.provide(Env)), 120_000)

    it.live(`Streamable HTTP, ${era}: 200 runs of "log, log, return" see both lines every time`, () =>
      Effect.gen(function*() {
        const client = yield* connectHttp(era)
        expect(client.protocolVersion).toBe(era)
        expect(yield* subscribedRuns(client)).toEqual([])
      }).pipe(Effect.scoped, Effect.provide(Env)), 120_000)

    // In memory the server runs in the client's process: a plain stream forked before the first call
    // of a fresh stateless-era client started after the first line went by, every time.
    it.live(`in memory, ${era}: the first call of each of 200 fresh clients, both lines every time`, () =>
      Effect.gen(function*() {
        const wrong: Array<string> = []
        for (let run = 0; run < RUNS; run++) {
          const lines = yield* Effect.scoped(Effect.gen(function*() {
            const handle = yield* McpServer.toHandler(makeServer())
            const client = yield* McpClient.connect(InMemoryTransport.make(handle.handler), eraOptions(era))
            if (client.era === "legacy") yield* client.setLoggingLevel("debug")
            const logs = yield* client.subscribeLogging
            yield* client.callTool(logTwice)
            return yield* logs.pipe(Stream.map((m) => String(m.data)), Stream.take(2), Stream.runCollect)
          }))
          if (lines.join(",") !== "line 1,line 2") wrong.push(`${run}: ${lines.join(",")}`)
        }
        expect(wrong).toEqual([])
      }), 120_000)
  }

  it.live("every typed subscription filters the one hub: a call's progress, its logs, and nothing else", () =>
    Effect.gen(function*() {
      const client = yield* connectStdio("2025-11-25")
      yield* client.setLoggingLevel("debug")
      const all = yield* client.subscribeNotifications
      const progress = yield* client.subscribeProgress
      const logs = yield* client.subscribeLogging
      const changed = yield* client.subscribeListChanged
      yield* client.callTool({ name: "progress", arguments: { steps: 2 } }, { onProgress: () => Effect.void })
      yield* client.callTool({ name: "list-changed" })
      yield* client.callTool({ name: "log", arguments: { level: "info", text: "after" } })
      expect((yield* progress.pipe(Stream.take(2), Stream.runCollect)).map((p) => p.progress)).toEqual([1, 2])
      expect((yield* logs.pipe(Stream.take(1), Stream.runCollect)).map((l) => l.data)).toEqual(["after"])
      expect((yield* changed.pipe(Stream.take(1), Stream.runCollect)).map((c) => c._tag)).toEqual(["ToolListChanged"])
      expect((yield* all.pipe(Stream.take(4), Stream.runCollect)).map((n) => n._tag)).toEqual([
        "Progress",
        "Progress",
        "ToolListChanged",
        "LoggingMessage"
      ])
    }).pipe(Effect.scoped, Effect.provide(Env)), 60_000)

  it.live("the transport's subscription, made before the request, holds what the request made the server say", () =>
    Effect.gen(function*() {
      const transport = yield* StdioClientTransport.make(fixtureProcess)
      yield* openLoggingSession(transport)
      const incoming = yield* transport.subscribeNotifications
      yield* transport.request("tools/call", logTwice)
      const received = yield* incoming.pipe(Stream.take(2), Stream.runCollect)
      expect(received.map((n) => [n.method, (n.params as { data?: unknown }).data])).toEqual([
        ["notifications/message", "line 1"],
        ["notifications/message", "line 2"]
      ])
    }).pipe(Effect.scoped, Effect.provide(Env)), 60_000)

  it.live("the manager's events, subscribed before a reconnect, hold its session change", () =>
    Effect.gen(function*() {
      const manager = yield* McpManager.make({
        config: { mcpServers: { srv: { command: process.execPath, args: [fixturePath], protocol: "2025-11-25" } } },
        slowStartThreshold: "25 seconds"
      })
      yield* manager.client("srv")
      const events = yield* manager.subscribeEvents
      yield* manager.reconnect("srv")
      const change = yield* events.pipe(
        Stream.filter(McpManager.ManagerEvent.$is("SessionChanged")),
        Stream.take(1),
        Stream.runCollect
      )
      expect(change).toMatchObject([{ server: "srv", generation: 2, reason: "manual" }])
    }).pipe(Effect.scoped, Effect.provide(Env)), 60_000)

  it.effect("a subscription ends with its scope, and with the client", () =>
    Effect.gen(function*() {
      const handle = yield* McpServer.toHandler(makeServer())
      const clientScope = yield* Scope.make()
      const client = yield* McpClient.connect(InMemoryTransport.make(handle.handler), { protocol: "2025-11-25" }).pipe(
        Scope.provide(clientScope)
      )
      // Closed with its own scope: a later notification no longer reaches it, and the stream ends.
      const shortLived = yield* Scope.make()
      const early = yield* client.subscribeLogging.pipe(Scope.provide(shortLived))
      yield* Scope.close(shortLived, Exit.void)
      yield* client.setLoggingLevel("debug")
      yield* client.callTool({ name: "log", arguments: { level: "info", text: "unheard" } })
      expect(yield* Stream.runCollect(early)).toEqual([])

      // Closed with the client: a reader waiting on it is let go.
      const late = yield* client.subscribeLogging
      const reading = yield* Stream.runCollect(late).pipe(Effect.forkChild({ startImmediately: true }))
      yield* Scope.close(clientScope, Exit.void)
      expect(yield* Fiber.join(reading)).toEqual([])
    }).pipe(Effect.scoped))
})
