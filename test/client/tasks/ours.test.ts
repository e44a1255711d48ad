/**
 * McpClient against our own McpServer running tools as tasks (`Tool.add`'s
 * `taskSupport`): over Streamable HTTP on loopback in the stateless era (our
 * server checks `Mcp-Name` against `params.taskId` on `tasks/*`), and in
 * memory in the handshake era, where the extension is declared at
 * `initialize`. A question the task asks (an elicitation inside the task)
 * reaches the client's handler through `inputRequests`.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Layer, Option, Stream } from "effect"
import * as InMemoryTransport from "../../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../../../src/client/StreamableHttpClientTransport.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import * as Tool from "../../../src/server/Tool.ts"

const NAME_FORM = { message: "Your name?", requestedSchema: { type: "object" as const, properties: { name: { type: "string" as const } } } }

const makeServer = (release: Deferred.Deferred<void>) =>
  McpServer.make({ serverInfo: { name: "our-tasks", version: "1.0.0" } }).pipe(
    Tool.add("wait", { taskSupport: "optional" }, () => Effect.as(Deferred.await(release), "released")),
    Tool.add("ask", { taskSupport: "optional" }, (_, ctx) =>
      Effect.map(ctx.elicit(NAME_FORM), (answer) => `hello ${String(answer.action === "accept" ? answer.content?.name : answer.action)}`))
  )

const handlers: McpClient.ServerRequestHandlers = {
  elicit: () => Effect.succeed({ action: "accept" as const, content: { name: "Ada" } })
}

const textOf = (result: { readonly content: ReadonlyArray<unknown> }) =>
  result.content.map((c) => (c as { text?: string }).text ?? "").join("")

describe("tasks against our McpServer", () => {
  it.live("stateless era over Streamable HTTP: a task followed to its result, a question inside it answered", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      const handle = yield* McpServer.toHandler(makeServer(release))
      const context = yield* Layer.build(HttpServerTransport.layer(handle.handler, { port: 0 }))
      const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
      const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: "2026-07-28", handlers })

      const task = yield* client.callToolTask("wait")
      if (task._tag !== "Task") return expect.unreachable("the server runs wait as a task")
      expect((yield* task.get).status).toBe("working")
      yield* Deferred.succeed(release, undefined)
      const states = yield* Stream.runCollect(task.states)
      expect(states.at(-1)?.status).toBe("completed")
      expect(textOf(yield* task.result)).toBe("released")

      // The question comes through the task's inputRequests: the call is a task.
      expect((yield* client.callToolTask("ask"))._tag).toBe("Task")
      expect(textOf(yield* client.callTool({ name: "ask" }))).toBe("hello Ada")
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici))), 60_000)

  it.live("handshake era in memory: declared at initialize, the call becomes a task and is followed", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      const handle = yield* McpServer.toHandler(makeServer(release))
      const pair = yield* InMemoryTransport.makePair(handle.handler)
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "2025-11-25", handlers })
      const task = yield* client.callToolTask("wait")
      if (task._tag !== "Task") return expect.unreachable("the server runs wait as a task")
      yield* Deferred.succeed(release, undefined)
      expect(textOf(yield* client.task(task.taskId).result)).toBe("released")
      expect(textOf(yield* client.callTool({ name: "ask" }))).toBe("hello Ada")
      // Without the declaration the same tool answers at once.
      const plain = yield* McpClient.fromTransport((yield* InMemoryTransport.makePair(handle.handler)).client, {
        protocol: "2025-11-25",
        tasks: false
      })
      expect((yield* plain.callToolTask("wait"))._tag).toBe("Answered")
    }).pipe(Effect.scoped), 60_000)
})
