/**
 * Tasks on the server (io.modelcontextprotocol/tasks), through the handler:
 * creation and polling, results and errors, cancellation and the TTL
 * interrupting the handler, a request's end not stopping it, input_required
 * round trips (elicitation, sampling, partial answers), principals that
 * cannot see each other's tasks, -32021 for clients without the extension,
 * notifications/tasks on subscriptions/listen, and the handshake era.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as McpServer from "../../../src/server/McpServer.ts"
import * as TaskStore from "../../../src/server/TaskStore.ts"
import * as TaskWire from "../../../src/TaskWire.ts"
import { ACK, ackOf, makeDriver, makeProbes, makeServer, PLAIN, TASKS } from "./harness.ts"

const setup = (options: Partial<McpServer.McpServerOptions> = {}) =>
  Effect.gen(function*() {
    const probes = yield* makeProbes
    const handle = yield* McpServer.toHandler(makeServer(probes, options))
    const driver = yield* makeDriver(handle.handler)
    return { probes, handle, ...driver }
  })

const ACCEPT = (name: string) => ({ action: "accept", content: { name } })
const SAMPLED = { role: "assistant", content: { type: "text", text: "hello" }, model: "m" }

describe("tasks: lifecycle", () => {
  it.effect("a task tool answers CreateTaskResult at once; tasks/get shows it working, then completed with the tool's result", () =>
    Effect.gen(function*() {
      const { probes, result, until } = yield* setup({ tasks: { ttl: "1 minute", pollInterval: "250 millis" } })
      const created = yield* result("tools/call", { name: "wait", arguments: {} })
      expect(created).toMatchObject({ resultType: "task", status: "working", ttlMs: 60_000, pollIntervalMs: 250 })
      expect(Object.keys(created).filter((k) => ["result", "error", "inputRequests", "requestState", "task"].includes(k))).toEqual([])
      expect(Buffer.from(created.taskId, "base64url").length).toBeGreaterThanOrEqual(16)
      expect(new Date(created.createdAt).toISOString()).toBe(created.createdAt)
      yield* Deferred.await(probes.started)
      const working = yield* result("tasks/get", { taskId: created.taskId })
      expect(working).toMatchObject({ resultType: "complete", taskId: created.taskId, status: "working" })
      expect("result" in working).toBe(false)
      yield* Deferred.succeed(probes.release, undefined)
      const done = yield* until(created.taskId, ["completed"])
      // The tool's result as a 2026-07-28 result, naming its resultType (the official requester requires it).
      expect(done.result).toEqual({ resultType: "complete", content: [{ type: "text", text: "released" }] })
    }).pipe(Effect.scoped))

  it.effect("a tool error completes the task (isError); an RpcError or a defect fails it with the JSON-RPC error", () =>
    Effect.gen(function*() {
      const { result, until } = yield* setup()
      const toolError = yield* result("tools/call", { name: "tool_error", arguments: {} })
      expect(yield* until(toolError.taskId, ["completed", "failed"])).toMatchObject({ status: "completed", result: { isError: true } })
      const rpc = yield* result("tools/call", { name: "rpc_error", arguments: {} })
      const failed = yield* until(rpc.taskId, ["completed", "failed"])
      expect(failed).toMatchObject({ status: "failed", statusMessage: "exploded", error: { code: -32603, message: "exploded", data: { why: "test" } } })
      expect("result" in failed).toBe(false)
      const defect = yield* result("tools/call", { name: "defect", arguments: {} })
      expect(yield* until(defect.taskId, ["completed", "failed"])).toMatchObject({ status: "failed", error: { code: -32603, message: "Internal error" } })
    }).pipe(Effect.scoped))

  it.effect("tools/list lists execution.taskSupport in the handshake era only", () =>
    Effect.gen(function*() {
      const { result, send, notify } = yield* setup()
      const modern = yield* result("tools/list", {})
      expect(modern.tools.some((t: Record<string, unknown>) => "execution" in t)).toBe(false)
      yield* send("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "c", version: "1" } }, { sessionId: "s" })
      yield* notify("notifications/initialized", {}, { sessionId: "s" })
      const legacy = yield* result("tools/list", {}, { sessionId: "s" })
      const byName = Object.fromEntries(legacy.tools.map((t: any) => [t.name, t.execution]))
      expect(byName).toMatchObject({ wait: { taskSupport: "optional" }, must: { taskSupport: "required" }, instant: undefined })
    }).pipe(Effect.scoped))

  it.effect("server/discover declares the extension under capabilities.extensions", () =>
    Effect.gen(function*() {
      const { result } = yield* setup()
      const discovered = yield* result("server/discover", {})
      expect(discovered.capabilities.extensions).toEqual({ [TaskWire.EXTENSION_ID]: {} })
      expect(discovered.capabilities.tasks).toBeUndefined()
    }).pipe(Effect.scoped))
})

describe("tasks: cancellation, TTL, the request's end", () => {
  it.effect("tasks/cancel acknowledges, interrupts the handler, settles cancelled; again on a terminal task it still acknowledges", () =>
    Effect.gen(function*() {
      const { probes, result, until } = yield* setup()
      const created = yield* result("tools/call", { name: "wait", arguments: {} })
      yield* Deferred.await(probes.started)
      expect(ackOf(yield* result("tasks/cancel", { taskId: created.taskId }))).toEqual(ACK)
      yield* Deferred.await(probes.interrupted)
      expect(yield* until(created.taskId, ["cancelled"])).toMatchObject({ status: "cancelled" })
      expect(ackOf(yield* result("tasks/cancel", { taskId: created.taskId }))).toEqual(ACK)
      // The handler's late completion cannot overwrite the terminal status.
      yield* Deferred.succeed(probes.release, undefined)
      expect((yield* result("tasks/get", { taskId: created.taskId })).status).toBe("cancelled")
    }).pipe(Effect.scoped))

  it.effect("the TTL interrupts the handler and the task is forgotten (-32602 like an unknown id)", () =>
    Effect.gen(function*() {
      const { probes, result, send } = yield* setup({ tasks: { ttl: "10 seconds" } })
      const created = yield* result("tools/call", { name: "wait", arguments: {} })
      yield* Deferred.await(probes.started)
      yield* TestClock.adjust("9 seconds")
      expect((yield* result("tasks/get", { taskId: created.taskId })).status).toBe("working")
      yield* TestClock.adjust("1 second")
      yield* Deferred.await(probes.interrupted)
      const gone = yield* send("tasks/get", { taskId: created.taskId })
      const unknown = yield* send("tasks/get", { taskId: "no-such-task" })
      expect(gone.error).toEqual(unknown.error)
      expect(gone.error.code).toBe(-32602)
    }).pipe(Effect.scoped))

  it.effect("at the TTL the store forgets the task as well: a follower of its changes ends there", () =>
    Effect.gen(function*() {
      const store = yield* TaskStore.makeMemory
      const probes = yield* makeProbes
      const handle = yield* Effect.provideService(
        McpServer.toHandler(makeServer(probes, { tasks: { ttl: "10 seconds" } })),
        TaskStore.TaskStore,
        store
      )
      const { result } = yield* makeDriver(handle.handler)
      const created = yield* result("tools/call", { name: "wait", arguments: {} })
      yield* Deferred.await(probes.started)
      const followed = yield* Effect.forkChild(Stream.runCollect(store.changes(created.taskId)), { startImmediately: true })
      yield* TestClock.adjust("10 seconds")
      yield* Deferred.await(probes.interrupted)
      expect(Array.from(yield* Fiber.join(followed), (r) => r.status)).toEqual(["working"])
      expect(yield* store.list!()).toEqual([])
    }).pipe(Effect.scoped))

  it.effect("the request's end does not stop its task: the call is answered and the handler goes on to complete", () =>
    Effect.gen(function*() {
      const { probes, send, until } = yield* setup()
      // The request runs in its own fiber, as a transport runs it; it is over once answered.
      const request = yield* Effect.forkChild(send("tools/call", { name: "wait", arguments: {} }))
      const answered = yield* Fiber.join(request)
      yield* Fiber.interrupt(request)
      yield* Deferred.await(probes.started)
      yield* Deferred.succeed(probes.release, undefined)
      expect(yield* until(answered.result.taskId, ["completed", "cancelled", "failed"])).toMatchObject({ status: "completed" })
      expect(yield* Deferred.isDone(probes.interrupted)).toBe(false)
    }).pipe(Effect.scoped))

  it.effect("progress inside a task becomes its statusMessage, and no notifications/progress is sent", () =>
    Effect.gen(function*() {
      const { probes, result, notes } = yield* setup({ tasks: { ttl: null } })
      const created = yield* result("tools/call", { name: "progress", arguments: {}, _meta: { progressToken: "p" } })
      expect(created.ttlMs).toBeNull()
      let task = yield* result("tasks/get", { taskId: created.taskId })
      for (let i = 0; i < 1000 && task.statusMessage === undefined; i++) {
        yield* Effect.yieldNow
        task = yield* result("tasks/get", { taskId: created.taskId })
      }
      expect(task).toMatchObject({ status: "working", statusMessage: "half way" })
      expect(yield* Queue.size(notes)).toBe(0)
      yield* Deferred.succeed(probes.release, undefined)
    }).pipe(Effect.scoped))
})

describe("tasks: input_required", () => {
  it.effect("an elicitation then a sampling request are surfaced as inputRequests and answered with tasks/update", () =>
    Effect.gen(function*() {
      const { result, until } = yield* setup()
      const { taskId } = yield* result("tools/call", { name: "ask", arguments: {} })
      const first = yield* until(taskId, ["input_required"])
      const [elicitKey, ...rest] = Object.keys(first.inputRequests)
      expect(rest).toEqual([])
      expect(first.inputRequests[elicitKey!]).toMatchObject({ method: "elicitation/create", params: { message: "Your name?" } })
      // Unknown keys are ignored and acknowledged; the task stays input_required.
      expect(ackOf(yield* result("tasks/update", { taskId, inputResponses: { nope: ACCEPT("x") } }))).toEqual(ACK)
      expect((yield* result("tasks/get", { taskId })).status).toBe("input_required")
      yield* result("tasks/update", { taskId, inputResponses: { [elicitKey!]: ACCEPT("Ada") } })
      let second = yield* until(taskId, ["input_required"])
      for (let i = 0; i < 1000 && Object.hasOwn(second.inputRequests, elicitKey!); i++) {
        yield* Effect.yieldNow
        second = yield* until(taskId, ["input_required"])
      }
      const [sampleKey] = Object.keys(second.inputRequests)
      expect(sampleKey).not.toBe(elicitKey)
      expect(second.inputRequests[sampleKey!].method).toBe("sampling/createMessage")
      // An answered key is not taken twice.
      yield* result("tasks/update", { taskId, inputResponses: { [elicitKey!]: ACCEPT("Eve"), [sampleKey!]: SAMPLED } })
      const done = yield* until(taskId, ["completed", "failed"])
      expect(done.result.content[0].text).toBe("name=Ada said=hello")
    }).pipe(Effect.scoped))

  it.effect("two asks at once are both outstanding; a partial answer keeps the task input_required with the other key only", () =>
    Effect.gen(function*() {
      const { result, until } = yield* setup()
      const { taskId } = yield* result("tools/call", { name: "two", arguments: {} })
      let task = yield* until(taskId, ["input_required"])
      for (let i = 0; i < 1000 && Object.keys(task.inputRequests).length < 2; i++) {
        yield* Effect.yieldNow
        task = yield* until(taskId, ["input_required"])
      }
      const [a, b] = Object.keys(task.inputRequests)
      yield* result("tasks/update", { taskId, inputResponses: { [a!]: ACCEPT("one") } })
      const partial = yield* result("tasks/get", { taskId })
      expect(partial.status).toBe("input_required")
      expect(Object.keys(partial.inputRequests)).toEqual([b])
      yield* result("tasks/update", { taskId, inputResponses: { [b!]: { action: "decline" } } })
      expect((yield* until(taskId, ["completed", "failed"])).result.content[0].text).toBe("accept decline")
    }).pipe(Effect.scoped))

  it.effect("a handler that escalates asks in input_required rounds first, then answers CreateTaskResult", () =>
    Effect.gen(function*() {
      const { result, until } = yield* setup()
      const round = yield* result("tools/call", { name: "later", arguments: { n: 3 } })
      expect(round.resultType).toBe("input_required")
      expect(Object.keys(round.inputRequests)).toEqual(["who"])
      const created = yield* result("tools/call", {
        name: "later",
        arguments: { n: 3 },
        inputResponses: { who: ACCEPT("Bo") },
        requestState: round.requestState
      })
      expect(created).toMatchObject({ resultType: "task", status: "working" })
      expect("requestState" in created).toBe(false)
      expect((yield* until(created.taskId, ["completed", "failed"])).result.content[0].text).toBe("Bo x3")
    }).pipe(Effect.scoped))
})

describe("tasks: who may see a task", () => {
  it.effect("another principal gets exactly the unknown-id error on tasks/get, tasks/update and tasks/cancel; the owner is served", () =>
    Effect.gen(function*() {
      const { probes, send, result } = yield* setup()
      const alice = { principal: "alice", capabilities: TASKS }
      const bob = { principal: "bob", capabilities: TASKS }
      const { taskId } = yield* result("tools/call", { name: "wait", arguments: {} }, alice)
      for (const [method, extra] of [["tasks/get", {}], ["tasks/update", { inputResponses: {} }], ["tasks/cancel", {}]] as const) {
        const foreign = yield* send(method, { taskId, ...extra }, bob)
        const unknown = yield* send(method, { taskId: "unknown-task-id", ...extra }, alice)
        expect(foreign.error).toEqual(unknown.error)
      }
      // Bob's cancel changed nothing.
      expect((yield* result("tasks/get", { taskId }, alice)).status).toBe("working")
      // A caller with no principal is someone else too.
      expect((yield* send("tasks/get", { taskId })).error.code).toBe(-32602)
      yield* Deferred.succeed(probes.release, undefined)
    }).pipe(Effect.scoped))

  it.effect("in the handshake era a task's asks wait in inputRequests too, not as requests to the client", () =>
    Effect.gen(function*() {
      const { send, notify, result, until } = yield* setup()
      yield* send("initialize", { protocolVersion: "2025-11-25", capabilities: TASKS, clientInfo: { name: "c", version: "1" } }, { sessionId: "s" })
      yield* notify("notifications/initialized", {}, { sessionId: "s" })
      const session = { sessionId: "s" }
      const { taskId } = yield* result("tools/call", { name: "two", arguments: {} }, session)
      let task = yield* until(taskId, ["input_required"], session)
      for (let i = 0; i < 1000 && Object.keys(task.inputRequests).length < 2; i++) {
        yield* Effect.yieldNow
        task = yield* until(taskId, ["input_required"], session)
      }
      const answers = Object.fromEntries(Object.keys(task.inputRequests).map((k) => [k, ACCEPT("x")]))
      yield* result("tasks/update", { taskId, inputResponses: answers }, session)
      expect((yield* until(taskId, ["completed", "failed"], session)).result.content[0].text).toBe("accept accept")
    }).pipe(Effect.scoped))

  it.effect("in the handshake era a task belongs to its session", () =>
    Effect.gen(function*() {
      const { probes, send, notify, result } = yield* setup()
      for (const sessionId of ["s1", "s2"]) {
        yield* send("initialize", { protocolVersion: "2025-11-25", capabilities: TASKS, clientInfo: { name: "c", version: "1" } }, { sessionId })
        yield* notify("notifications/initialized", {}, { sessionId })
      }
      const created = yield* result("tools/call", { name: "wait", arguments: {} }, { sessionId: "s1" })
      expect(created.resultType).toBe("task")
      expect((yield* result("tasks/get", { taskId: created.taskId }, { sessionId: "s1" })).status).toBe("working")
      expect((yield* send("tasks/get", { taskId: created.taskId }, { sessionId: "s2" })).error.code).toBe(-32602)
      yield* Deferred.succeed(probes.release, undefined)
    }).pipe(Effect.scoped))
})

describe("tasks: clients without the extension", () => {
  it.effect("tasks/get, tasks/update, tasks/cancel answer -32021 naming the extension; optional tools run inline; required ones -32021", () =>
    Effect.gen(function*() {
      const { send, result } = yield* setup()
      const plain = { capabilities: PLAIN }
      for (const [method, params] of [["tasks/get", { taskId: "x" }], ["tasks/update", { taskId: "x", inputResponses: {} }], ["tasks/cancel", { taskId: "x" }]] as const) {
        const reply = yield* send(method, params, plain)
        expect(reply.error).toMatchObject({ code: -32021, data: TaskWire.missingCapabilityData })
      }
      expect(yield* result("tools/call", { name: "tool_error", arguments: {} }, plain)).toMatchObject({ resultType: "complete", isError: true })
      expect((yield* send("tools/call", { name: "must", arguments: {} }, plain)).error).toMatchObject({
        code: -32021,
        data: TaskWire.missingCapabilityData
      })
      // Declared on this request only: a task.
      expect((yield* result("tools/call", { name: "must", arguments: {} })).resultType).toBe("task")
      // A tool that is never a task stays inline for a declaring client.
      expect(yield* result("tools/call", { name: "instant", arguments: {} })).toMatchObject({ resultType: "complete" })
    }).pipe(Effect.scoped))
})

describe("tasks: the store", () => {
  it.effect("a TaskStore in context when the handle is built holds the tasks", () =>
    Effect.gen(function*() {
      const store = yield* TaskStore.makeMemory
      const created: Array<string> = []
      const counting: TaskStore.TaskStoreShape = {
        ...store,
        create: (record) => Effect.andThen(Effect.sync(() => created.push(record.taskId)), store.create(record))
      }
      const probes = yield* makeProbes
      const handle = yield* McpServer.toHandler(makeServer(probes)).pipe(Effect.provideService(TaskStore.TaskStore, counting))
      const { result } = yield* makeDriver(handle.handler)
      const { taskId } = yield* result("tools/call", { name: "must", arguments: {} })
      expect(created).toEqual([taskId])
      expect((yield* store.get(taskId))?.owner).toBeUndefined()
    }).pipe(Effect.scoped))
})

describe("tasks: notifications/tasks", () => {
  it.effect("a listen naming a task acknowledges it and carries its detailed states until terminal; -32021 without the extension", () =>
    Effect.gen(function*() {
      const { probes, send, result, notes } = yield* setup()
      const { taskId } = yield* result("tools/call", { name: "wait", arguments: {} })
      const refused = yield* send("subscriptions/listen", { notifications: { taskIds: [taskId] } }, { capabilities: PLAIN })
      expect(refused.error).toMatchObject({ code: -32021, data: TaskWire.missingCapabilityData })
      const listen = yield* Effect.forkChild(send("subscriptions/listen", { notifications: { taskIds: [taskId, "someone-elses"] } }))
      const ack = yield* Queue.take(notes)
      expect(ack).toMatchObject({ method: "notifications/subscriptions/acknowledged", params: { notifications: { taskIds: [taskId] } } })
      const first = yield* Queue.take(notes)
      expect(first).toMatchObject({ method: "notifications/tasks", params: { taskId, status: "working" } })
      yield* Deferred.succeed(probes.release, undefined)
      let last = first
      while (last.params.status === "working") last = yield* Queue.take(notes)
      expect(last.params).toMatchObject({ taskId, status: "completed", result: { content: [{ type: "text", text: "released" }] } })
      expect(last.params._meta["io.modelcontextprotocol/subscriptionId"]).toBeDefined()
      yield* Fiber.interrupt(listen)
    }).pipe(Effect.scoped))
})
