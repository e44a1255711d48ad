/**
 * A server as a layer: `McpServer.layerHttp` on a real loopback server and
 * `McpServer.layerStdio` in a real child process, the handle as the
 * `McpServer.Handle` service of other layers, and `toHandler`'s state
 * released with its scope.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Ref, Schema, Scope, Stream, SubscriptionRef } from "effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as SessionState from "../../src/server/SessionState.ts"
import * as Tool from "../../src/server/Tool.ts"

const Env = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)
const layeredFixture = new URL("../fixtures/layer-stdio-server.ts", import.meta.url).pathname

const textOf = (result: McpClient.McpClientShape extends { callTool: (...a: any) => Effect.Effect<infer A, any> } ? A : never) =>
  result.content.map((c) => ("text" in c ? c.text : "")).join("")

const server = McpServer.make({
  serverInfo: { name: "layered", version: "1.0.0" },
  capabilities: { tools: { listChanged: true } }
}).pipe(
  Tool.add("echo", { parameters: { text: Schema.String } }, ({ text }) => Effect.succeed(text))
)

/** Another layer of the application: adds a tool through the served handle. */
const AddLate = Layer.effectDiscard(Effect.gen(function*() {
  const handle = yield* McpServer.Handle
  yield* handle.definitions.add(Tool.add("late", { parameters: {} }, () => Effect.succeed("added by a layer")))
}))

const urlOf = (context: Context.Context<HttpServerTransport.HttpServerTransport>) =>
  Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)

describe("McpServer.layerHttp", () => {
  it.live("serves while the layer lives; closing it ends the sessions and the listener", () =>
    Effect.gen(function*() {
      const layerScope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(McpServer.layerHttp(server, { port: 0 }), layerScope)
      const url = urlOf(context)
      const clientScope = yield* Scope.make()
      const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: "2025-11-25" }).pipe(
        Scope.provide(clientScope)
      )
      expect(textOf(yield* client.callTool({ name: "echo", arguments: { text: "hi" } }))).toBe("hi")
      expect((yield* Context.get(context, McpServer.Handle).sessions).map((s) => s.era)).toEqual(["legacy"])

      yield* Scope.close(layerScope, Exit.void)
      // The session is gone with the server: the client's next call fails, and nothing listens on the port.
      const after = yield* Effect.exit(client.callTool({ name: "echo", arguments: { text: "again" } }))
      expect(Exit.isFailure(after)).toBe(true)
      const refused = yield* Effect.exit(Effect.tryPromise(() => fetch(url, { method: "POST", body: "{}" })))
      expect(Exit.isFailure(refused)).toBe(true)
      yield* Scope.close(clientScope, Exit.void)
    }).pipe(Effect.provide(Env)))

  it.live("its Handle is a service another layer uses: a tool added at start-up is served", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(AddLate.pipe(Layer.provideMerge(McpServer.layerHttp(server, { port: 0 }))))
      for (const protocol of ["2025-11-25", "2026-07-28"] as const) {
        const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url: urlOf(context) }), { protocol })
        expect((yield* client.listAllTools()).map((t) => t.name)).toEqual(["echo", "late"])
        expect(textOf(yield* client.callTool({ name: "late", arguments: {} }))).toBe("added by a layer")
      }
    }).pipe(Effect.scoped, Effect.provide(Env)))
})

describe("McpServer.layerStdio", () => {
  it.live("a child process served by the layer, with a layer using its Handle; the end of stdin closes the layers", () =>
    Effect.gen(function*() {
      const clientScope = yield* Scope.make()
      const client = yield* McpClient.connect(
        StdioClientTransport.make({
          command: process.execPath,
          args: [layeredFixture],
          shutdown: { gracePeriod: "5 seconds", killAfter: "1 second" }
        }),
        { protocol: "2025-11-25" }
      ).pipe(Scope.provide(clientScope))
      expect((yield* client.listAllTools()).map((t) => t.name)).toEqual(["echo", "late"])
      expect(textOf(yield* client.callTool({ name: "late", arguments: {} }))).toBe("sessions: 1")
      const stderr = yield* client.connection.stderr.pipe(
        Stream.takeUntil((line) => line === "released"),
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      // Closing the client closes the child's stdin: the program ends and its layers close before it exits.
      yield* Scope.close(clientScope, Exit.void)
      expect(yield* Fiber.join(stderr)).toContain("released")
    }).pipe(Effect.provide(Env)), 60_000)
})

describe("McpServer.toHandler", () => {
  it.live("its scope's end releases every session's state and ends every open listen", () =>
    Effect.gen(function*() {
      const released = yield* Ref.make<Array<string>>([])
      const connection = SessionState.make(
        "connection",
        Effect.acquireRelease(Effect.succeed("open"), () => Ref.update(released, (r) => [...r, "connection"]))
      )
      const stateful = McpServer.make({
        serverInfo: { name: "stateful", version: "1.0.0" },
        capabilities: { tools: { listChanged: true } }
      }).pipe(
        McpServer.method("tools/call", {}, (_, ctx) =>
          Effect.as(ctx.sessionState(connection), { content: [{ type: "text", text: "used" }] }))
      )
      const handleScope = yield* Scope.make()
      const handle = yield* McpServer.toHandler(stateful).pipe(Scope.provide(handleScope))

      // A handshake-era session that uses the slot, and a stateless-era client holding a listen.
      const session = yield* McpClient.connect(InMemoryTransport.make(handle.handler), { protocol: "2025-11-25" })
      yield* session.callTool({ name: "any" })
      const listening = yield* McpClient.connect(InMemoryTransport.make(handle.handler), { protocol: "2026-07-28", listen: true })
      yield* SubscriptionRef.changes(listening.subscription).pipe(
        Stream.filter((s) => s._tag === "Listening"),
        Stream.runHead
      )
      expect(yield* handle.sessions).toHaveLength(1)
      expect(yield* Ref.get(released)).toEqual([])

      // The transports are still open: only the handle's scope closes.
      yield* Scope.close(handleScope, Exit.void)
      expect(yield* Ref.get(released)).toEqual(["connection"])
      expect(yield* handle.sessions).toEqual([])
      const after = yield* SubscriptionRef.changes(listening.subscription).pipe(
        Stream.filter((s) => s._tag === "Retrying"),
        Stream.runHead,
        Effect.map(Option.getOrThrow)
      )
      expect(after._tag).toBe("Retrying")
    }).pipe(Effect.scoped))
})
