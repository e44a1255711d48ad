/**
 * The 2025-11-25 experimental core tasks, through the handler, on
 * handshake-era sessions of that revision: capabilities.tasks at
 * initialize, params.task on tools/call and the nested CreateTaskResult,
 * -32601 for a call against the tool's taskSupport, tasks/get, tasks/result
 * (waiting, the related-task _meta, the JSON-RPC error of a failed task,
 * asks sent to the client tied to the task), tasks/list (paged, the
 * caller's tasks only), tasks/cancel, notifications/tasks/status, and the
 * unknown and foreign task alike.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Queue } from "effect"
import { TestClock } from "effect/testing"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import { RequestTimeout } from "../../../src/McpError.ts"
import type { HandlerContext } from "../../../src/server/Handler.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import * as TaskStore from "../../../src/server/TaskStore.ts"
import * as TaskWire from "../../../src/TaskWire.ts"
import { makeProbes, makeServer, PLAIN, TASKS } from "./harness.ts"

let nextId = 1

interface Asked {
  readonly method: string
  readonly params: any
}

interface Setup {
  /** A store in place of the in-memory one. */
  readonly store?: TaskStore.TaskStoreShape | undefined
  /** The client answers sampling with an error (a timeout). */
  readonly refuseSampling?: boolean | undefined
}

const setup = (options: Partial<McpServer.McpServerOptions> = {}, setupOptions: Setup = {}) =>
  Effect.gen(function*() {
    const probes = yield* makeProbes
    const built = McpServer.toHandler(makeServer(probes, options))
    const handle = yield* (setupOptions.store === undefined ? built : Effect.provideService(built, TaskStore.TaskStore, setupOptions.store))
    const notes = yield* Queue.unbounded<{ readonly method: string; readonly params: any }>()
    const asked = yield* Queue.unbounded<Asked>()
    const context = (sessionId: string, id: JsonRpc.RequestId | undefined, principal?: string): HandlerContext => ({
      sessionId,
      requestId: id,
      principal,
      notify: (method, params) => Queue.offer(notes, { method, params }).pipe(Effect.asVoid),
      // The client answers every elicitation with "ada" and every sampling with "hello".
      request: (method, params) =>
        method === "sampling/createMessage" && setupOptions.refuseSampling === true
          ? Effect.andThen(Queue.offer(asked, { method, params }), Effect.fail(new RequestTimeout({ method, id: 0, timeoutMs: 1 })))
          : Effect.as(
          Queue.offer(asked, { method, params }),
          method === "elicitation/create"
            ? { action: "accept", content: { name: "ada" } }
            : { role: "assistant", content: { type: "text", text: "hello" }, model: "m" }
        )
    })
    const send = (method: string, params: Record<string, unknown>, sessionId = "s", principal?: string) =>
      Effect.suspend(() => {
        const id = nextId++
        return Effect.map(
          handle.handler(JsonRpc.request(id, method, params) as JsonRpc.JsonRpcRequest, context(sessionId, id, principal)),
          (r) => r as any
        )
      })
    const result = (method: string, params: Record<string, unknown>, sessionId = "s", principal?: string) =>
      Effect.map(send(method, params, sessionId, principal), (r) => {
        if (!("result" in r)) throw new Error(`${method} failed: ${JSON.stringify(r.error)}`)
        return r.result as Record<string, any>
      })
    const open = (sessionId = "s", capabilities: Record<string, unknown> = PLAIN, protocolVersion = "2025-11-25", principal?: string) =>
      Effect.gen(function*() {
        const init = yield* result("initialize", { protocolVersion, capabilities, clientInfo: { name: "c", version: "1" } }, sessionId, principal)
        yield* handle.handler({ jsonrpc: "2.0", method: "notifications/initialized" } as JsonRpc.JsonRpcNotification, context(sessionId, undefined, principal))
        return init
      })
    return { probes, handle, send, result, open, notes, asked }
  })

describe("2025-11-25 core tasks", () => {
  it.effect("capabilities.tasks is declared at a 2025-11-25 initialize only", () =>
    Effect.gen(function*() {
      const { open } = yield* setup()
      const init = yield* open("a")
      expect(init.capabilities.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } })
      expect((yield* open("b", PLAIN, "2025-06-18")).capabilities.tasks).toBeUndefined()
    }).pipe(Effect.scoped))

  it.effect("params.task makes a task: the nested CreateTaskResult, tasks/get in the 2025 shape, tasks/result waiting for the result", () =>
    Effect.gen(function*() {
      const { probes, open, result } = yield* setup({ tasks: { ttl: "1 minute", pollInterval: "250 millis" } })
      yield* open()
      const created = yield* result("tools/call", { name: "wait", arguments: {}, task: { ttl: 30_000 } })
      expect(Object.keys(created)).toEqual(["task"])
      expect(created.task).toMatchObject({ status: "working", ttl: 30_000, pollInterval: 250 })
      expect(Buffer.from(created.task.taskId, "base64url").length).toBeGreaterThanOrEqual(16)
      const taskId: string = created.task.taskId
      yield* Deferred.await(probes.started)
      const got = yield* result("tasks/get", { taskId })
      expect(got).toMatchObject({ taskId, status: "working", ttl: 30_000, pollInterval: 250 })
      expect(Object.keys(got).filter((k) => ["ttlMs", "pollIntervalMs", "result", "resultType"].includes(k))).toEqual([])
      const waiting = yield* Effect.forkChild(result("tasks/result", { taskId }))
      yield* Deferred.succeed(probes.release, undefined)
      expect(yield* Fiber.join(waiting)).toEqual({
        content: [{ type: "text", text: "released" }],
        _meta: { [TaskWire.RELATED_TASK_META_KEY]: { taskId } }
      })
      expect((yield* result("tasks/get", { taskId })).status).toBe("completed")
    }).pipe(Effect.scoped))

  it.effect("a TTL asked above the server's is capped at the server's", () =>
    Effect.gen(function*() {
      const { open, result } = yield* setup({ tasks: { ttl: "1 minute" } })
      yield* open()
      expect((yield* result("tools/call", { name: "tool_error", arguments: {}, task: { ttl: 3_600_000 } })).task.ttl).toBe(60_000)
    }).pipe(Effect.scoped))

  it.effect("a shorter TTL asked after a longer one ends its task first: the handler is interrupted, the longer task goes on", () =>
    Effect.gen(function*() {
      const { open, probes, result, send } = yield* setup({ tasks: { ttl: "1 minute" } })
      yield* open()
      const long = (yield* result("tools/call", { name: "wait", arguments: {}, task: { ttl: 60_000 } })).task.taskId as string
      yield* Deferred.await(probes.started)
      const short = (yield* result("tools/call", { name: "wait", arguments: {}, task: { ttl: 1_000 } })).task.taskId as string
      yield* TestClock.adjust("2 seconds")
      yield* Deferred.await(probes.interrupted)
      expect((yield* send("tasks/get", { taskId: short })).error.code).toBe(-32602)
      expect((yield* result("tasks/get", { taskId: long })).status).toBe("working")
    }).pipe(Effect.scoped))

  it.effect("without params.task an optional tool runs inline and a required one is -32601; params.task on a tool never a task is -32601", () =>
    Effect.gen(function*() {
      const { open, result, send } = yield* setup()
      yield* open()
      expect(yield* result("tools/call", { name: "tool_error", arguments: {} })).toMatchObject({ isError: true })
      expect((yield* send("tools/call", { name: "must", arguments: {} })).error.code).toBe(-32601)
      expect((yield* send("tools/call", { name: "instant", arguments: {}, task: {} })).error.code).toBe(-32601)
      expect((yield* result("tools/call", { name: "must", arguments: {}, task: {} })).task.status).toBe("working")
    }).pipe(Effect.scoped))

  it.effect("tools/list shows execution.taskSupport", () =>
    Effect.gen(function*() {
      const { open, result } = yield* setup()
      yield* open()
      const tools = (yield* result("tools/list", {})).tools
      const byName = Object.fromEntries(tools.map((t: any) => [t.name, t.execution?.taskSupport]))
      expect(byName).toMatchObject({ wait: "optional", must: "required" })
    }).pipe(Effect.scoped))

  it.effect("tasks/result of a failed task is its JSON-RPC error", () =>
    Effect.gen(function*() {
      const { open, result, send } = yield* setup()
      yield* open()
      const { task } = yield* result("tools/call", { name: "rpc_error", arguments: {}, task: {} })
      expect((yield* send("tasks/result", { taskId: task.taskId })).error).toEqual({ code: -32603, message: "exploded", data: { why: "test" } })
    }).pipe(Effect.scoped))

  it.effect("asks inside a task set it input_required and reach the client tied to the task while tasks/result waits", () =>
    Effect.gen(function*() {
      const { open, result, asked } = yield* setup()
      yield* open()
      const { task } = yield* result("tools/call", { name: "ask", arguments: {}, task: {} })
      const taskId: string = task.taskId
      for (let i = 0; i < 100_000; i++) {
        if ((yield* result("tasks/get", { taskId })).status === "input_required") break
        yield* Effect.yieldNow
      }
      const done = yield* result("tasks/result", { taskId })
      expect(done.content).toEqual([{ type: "text", text: "name=ada said=hello" }])
      const first = yield* Queue.take(asked)
      const second = yield* Queue.take(asked)
      expect([first.method, second.method]).toEqual(["elicitation/create", "sampling/createMessage"])
      expect(first.params._meta).toEqual({ [TaskWire.RELATED_TASK_META_KEY]: { taskId } })
      expect(second.params._meta).toEqual({ [TaskWire.RELATED_TASK_META_KEY]: { taskId } })
    }).pipe(Effect.scoped))

  it.effect("tasks/cancel answers the cancelled task and interrupts the handler; a terminal task's cancel is -32602", () =>
    Effect.gen(function*() {
      const { probes, open, result, send } = yield* setup()
      yield* open()
      const { task } = yield* result("tools/call", { name: "wait", arguments: {}, task: {} })
      yield* Deferred.await(probes.started)
      const cancelled = yield* result("tasks/cancel", { taskId: task.taskId })
      expect(cancelled).toMatchObject({ taskId: task.taskId, status: "cancelled" })
      yield* Deferred.await(probes.interrupted)
      expect((yield* send("tasks/cancel", { taskId: task.taskId })).error.code).toBe(-32602)
      expect((yield* send("tasks/result", { taskId: task.taskId })).error.code).toBe(-32602)
    }).pipe(Effect.scoped))

  it.effect("notifications/tasks/status is sent on each status change", () =>
    Effect.gen(function*() {
      const { probes, open, result, notes } = yield* setup()
      yield* open()
      const { task } = yield* result("tools/call", { name: "wait", arguments: {}, task: {} })
      yield* Deferred.succeed(probes.release, undefined)
      const note = yield* Queue.take(notes)
      expect(note).toMatchObject({ method: "notifications/tasks/status", params: { taskId: task.taskId, status: "completed" } })
    }).pipe(Effect.scoped))

  it.effect("progress inside the task goes out under the creating request's token and sets the statusMessage", () =>
    Effect.gen(function*() {
      const { probes, open, result, notes } = yield* setup()
      yield* open()
      const { task } = yield* result("tools/call", { name: "progress", arguments: {}, task: {}, _meta: { progressToken: "p1" } })
      const note = yield* Queue.take(notes)
      expect(note).toEqual({ method: "notifications/progress", params: { progressToken: "p1", progress: 1, total: 2, message: "half way" } })
      expect((yield* result("tasks/get", { taskId: task.taskId })).statusMessage).toBe("half way")
      yield* Deferred.succeed(probes.release, undefined)
      expect((yield* result("tasks/result", { taskId: task.taskId })).content).toEqual([{ type: "text", text: "done" }])
    }).pipe(Effect.scoped))

  it.effect("tasks/list pages through the caller's tasks only", () =>
    Effect.gen(function*() {
      const { open, result, send } = yield* setup()
      yield* open("mine")
      yield* open("theirs")
      const ids = new Set<string>()
      for (let i = 0; i < 60; i++) ids.add((yield* result("tools/call", { name: "tool_error", arguments: {}, task: {} }, "mine")).task.taskId)
      yield* result("tools/call", { name: "tool_error", arguments: {}, task: {} }, "theirs")
      const first = yield* result("tasks/list", {}, "mine")
      expect(first.tasks.length).toBe(50)
      expect(typeof first.nextCursor).toBe("string")
      const second = yield* result("tasks/list", { cursor: first.nextCursor }, "mine")
      expect(second.nextCursor).toBeUndefined()
      const listed = [...first.tasks, ...second.tasks].map((t: any) => t.taskId)
      expect(new Set(listed)).toEqual(ids)
      expect((yield* result("tasks/list", {}, "theirs")).tasks.length).toBe(1)
      expect((yield* send("tasks/list", { cursor: "nonsense" }, "mine")).error.code).toBe(-32602)
    }).pipe(Effect.scoped))

  it.effect("an unknown task and another principal's task are the same -32602 on every method", () =>
    Effect.gen(function*() {
      const { probes, open, result, send } = yield* setup()
      yield* open("s", PLAIN, "2025-11-25", "alice")
      yield* open("s2", PLAIN, "2025-11-25", "bob")
      const { task } = yield* result("tools/call", { name: "wait", arguments: {}, task: {} }, "s", "alice")
      for (const method of ["tasks/get", "tasks/result", "tasks/cancel"]) {
        const unknown = yield* send(method, { taskId: "no-such-task" }, "s", "alice")
        const foreign = yield* send(method, { taskId: task.taskId }, "s2", "bob")
        expect(foreign.error).toEqual(unknown.error)
        expect(unknown.error.code).toBe(-32602)
      }
      expect((yield* result("tasks/list", {}, "s2", "bob")).tasks).toEqual([])
      expect((yield* result("tasks/get", { taskId: task.taskId }, "s", "alice")).status).toBe("working")
      yield* Deferred.succeed(probes.release, undefined)
    }).pipe(Effect.scoped))

  it.effect("a client's error answer to an ask fails the task rather than leave it waiting", () =>
    Effect.gen(function*() {
      const { open, result, send, asked } = yield* setup({}, { refuseSampling: true })
      yield* open()
      const { task } = yield* result("tools/call", { name: "ask", arguments: {}, task: {} })
      const reply = yield* send("tasks/result", { taskId: task.taskId })
      expect(reply.error.code).toBe(-32602)
      expect((yield* result("tasks/get", { taskId: task.taskId })).status).toBe("failed")
      expect((yield* Queue.take(asked)).method).toBe("elicitation/create")
      expect((yield* Queue.take(asked)).method).toBe("sampling/createMessage")
    }).pipe(Effect.scoped))

  it.effect("a store that cannot list its tasks: capabilities.tasks without list, and tasks/list is -32601", () =>
    Effect.gen(function*() {
      const { list: _list, ...store } = yield* TaskStore.makeMemory
      const { open, result, send } = yield* setup({}, { store })
      expect((yield* open()).capabilities.tasks).toEqual({ cancel: {}, requests: { tools: { call: {} } } })
      expect((yield* send("tasks/list", {})).error.code).toBe(-32601)
      const { task } = yield* result("tools/call", { name: "tool_error", arguments: {}, task: {} })
      expect((yield* result("tasks/result", { taskId: task.taskId })).isError).toBe(true)
    }).pipe(Effect.scoped))

  it.effect("a request without a string taskId is -32602", () =>
    Effect.gen(function*() {
      const { open, send } = yield* setup()
      yield* open()
      for (const method of ["tasks/get", "tasks/result", "tasks/cancel"]) {
        expect((yield* send(method, {})).error.code).toBe(-32602)
      }
    }).pipe(Effect.scoped))

  it.effect("a 2025-11-25 client that declares the extension is served the extension, not the core tasks", () =>
    Effect.gen(function*() {
      const { open, result } = yield* setup()
      const init = yield* open("s", TASKS)
      expect(init.capabilities.tasks).toBeDefined()
      const created = yield* result("tools/call", { name: "tool_error", arguments: {}, task: {} })
      expect(created.resultType).toBe("task")
    }).pipe(Effect.scoped))
})
