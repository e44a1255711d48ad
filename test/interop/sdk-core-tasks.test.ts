/**
 * The official SDK client's experimental tasks (2025-11-25 core tasks)
 * against our stdio server in a real child process: task-augmented
 * `tools/call` through `callToolStream`, an elicitation asked inside the
 * task reaching the client tied to the task, `tasks/get`, `tasks/result`,
 * `tasks/list` and `tasks/cancel` interrupting the child's handler; and over
 * Streamable HTTP, where the asks travel on the `tasks/result` POST's stream.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import { Context, Effect, Layer, Option } from "effect"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import { awaitEvent } from "../cli/runCli.ts"
import { makeProbes, makeServer } from "../server/tasks/harness.ts"

const fixture = fileURLToPath(new URL("../fixtures/tasks-stdio-server.ts", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "sdk-core-tasks-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const RELATED = "io.modelcontextprotocol/related-task"

describe("interop: the SDK client's experimental tasks against our server", { timeout: 60_000 }, () => {
  it.live("over stdio: create with task augmentation, an ask inside the task, get, result, list, cancel", () =>
    Effect.gen(function*() {
      const events = join(dir, "events.jsonl")
      const client = new Client({ name: "sdk-tasks", version: "1.0.0" }, { capabilities: { elicitation: {} } })
      const asked: Array<unknown> = []
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params._meta?.[RELATED])
        return { action: "accept", content: { name: "Io" } }
      })
      const transport = new StdioClientTransport({ command: process.execPath, args: [fixture, `--events=${events}`], stderr: "pipe" })
      yield* Effect.acquireRelease(Effect.promise(() => client.connect(transport)), () => Effect.promise(() => client.close()))

      expect(client.getServerCapabilities()?.tasks).toMatchObject({ list: {}, cancel: {}, requests: { tools: { call: {} } } })
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]))).toEqual({ block: "required", greet: "optional" })

      // greet: created as a task, asks for a name (input_required), completes.
      const messages = yield* Effect.promise(async () => {
        const seen: Array<any> = []
        for await (const m of client.experimental.tasks.callToolStream({ name: "greet", arguments: {} }, undefined, { task: { ttl: 60_000 } })) {
          seen.push(m)
        }
        return seen
      })
      expect(messages[0].type).toBe("taskCreated")
      const greetId: string = messages[0].task.taskId
      expect(messages.at(-1)).toMatchObject({ type: "result", result: { content: [{ type: "text", text: "Hello, Io!" }] } })
      expect(asked).toEqual([{ taskId: greetId }])
      const greet = yield* Effect.promise(() => client.experimental.tasks.getTask(greetId))
      expect(greet).toMatchObject({ taskId: greetId, status: "completed", ttl: 60_000 })
      const again = yield* Effect.promise(() => client.experimental.tasks.getTaskResult(greetId, CallToolResultSchema))
      expect(again).toMatchObject({ content: [{ type: "text", text: "Hello, Io!" }], _meta: { [RELATED]: { taskId: greetId } } })

      // block: required, so a task; listed; cancelled, which interrupts the handler in the child.
      const block = yield* Effect.promise(() =>
        client.request(
          { method: "tools/call", params: { name: "block", arguments: {}, task: { ttl: 60_000 } } },
          CreateTaskResultSchema
        )
      )
      const blockId: string = (block as any).task.taskId
      yield* awaitEvent(events, (e) => e.event === "started")
      const listed = yield* Effect.promise(() => client.experimental.tasks.listTasks())
      expect(listed.tasks.map((t) => t.taskId).sort()).toEqual([greetId, blockId].sort())
      expect((yield* Effect.promise(() => client.experimental.tasks.getTask(blockId))).status).toBe("working")
      const cancelled = yield* Effect.promise(() => client.experimental.tasks.cancelTask(blockId))
      expect(cancelled).toMatchObject({ taskId: blockId, status: "cancelled" })
      yield* awaitEvent(events, (e) => e.event === "interrupted")
      yield* Effect.promise(() => expect(client.experimental.tasks.cancelTask(blockId)).rejects.toThrow())
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("over Streamable HTTP: an elicitation and a sampling inside the task reach the client while tasks/result waits", () =>
    Effect.gen(function*() {
      const probes = yield* makeProbes
      const handle = yield* McpServer.toHandler(makeServer(probes))
      const context = yield* Layer.build(HttpServerTransport.layer(handle.handler, { port: 0 }))
      const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
      const client = new Client({ name: "sdk-tasks-http", version: "1.0.0" }, { capabilities: { elicitation: {}, sampling: {} } })
      const asked: Array<[string, unknown]> = []
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(["elicitation/create", request.params._meta?.[RELATED]])
        return { action: "accept", content: { name: "ada" } }
      })
      client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
        asked.push(["sampling/createMessage", request.params._meta?.[RELATED]])
        return { role: "assistant", content: { type: "text", text: "hello" }, model: "m" }
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => client.connect(new StreamableHTTPClientTransport(new URL(url)))),
        () => Effect.promise(() => client.close())
      )
      const messages = yield* Effect.promise(async () => {
        const seen: Array<any> = []
        for await (const m of client.experimental.tasks.callToolStream({ name: "ask", arguments: {} }, undefined, { task: { ttl: 60_000 } })) {
          seen.push(m)
        }
        return seen
      })
      expect(messages[0].type).toBe("taskCreated")
      const taskId: string = messages[0].task.taskId
      expect(messages.at(-1)).toMatchObject({ type: "result", result: { content: [{ type: "text", text: "name=ada said=hello" }] } })
      expect(asked).toEqual([["elicitation/create", { taskId }], ["sampling/createMessage", { taskId }]])
      expect((yield* Effect.promise(() => client.experimental.tasks.listTasks())).tasks.map((t) => t.taskId)).toEqual([taskId])
    }).pipe(Effect.scoped))
})
