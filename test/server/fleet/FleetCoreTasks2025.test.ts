/**
 * The 2025-11-25 core tasks in a fleet: two server handles (two instances)
 * each on a Redis task store of its own connection, one real Redis. A task
 * made by a `tools/call` with `params.task` on A is read with `tasks/get`
 * on B, cancelled with `tasks/cancel` on B (A's handler is interrupted),
 * and `tasks/result` on B sends the task's asks to B's client and hands the
 * answers to the handler running on A. The caller is one principal, with a
 * session on each instance.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Layer } from "effect"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import type { HandlerContext } from "../../../src/server/Handler.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import * as RedisFleet from "../../../src/server/RedisFleet.ts"
import * as RedisTaskStore from "../../../src/server/RedisTaskStore.ts"
import * as TaskStore from "../../../src/server/TaskStore.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"
import { makeProbes, makeServer, PLAIN } from "../tasks/harness.ts"

const PRINCIPAL = "ada@example.com"
let nextId = 1

/** One instance: a handle on a Redis task store of its own, and a session of the principal opened on it. */
const instance = (redisUrl: string, sessionId: string) =>
  Effect.gen(function*() {
    const connection = yield* Layer.build(RedisFleet.layerConnection({ url: redisUrl }))
    const store = yield* Effect.provideContext(RedisTaskStore.make({ prefix: "c:" }), connection)
    const probes = yield* makeProbes
    const handle = yield* Effect.provideService(McpServer.toHandler(makeServer(probes)), TaskStore.TaskStore, store)
    const asked: Array<string> = []
    const context = (id: JsonRpc.RequestId | undefined): HandlerContext => ({
      sessionId,
      requestId: id,
      principal: PRINCIPAL,
      notify: () => Effect.void,
      // The client answers every elicitation with "ada" and every sampling with "hello".
      request: (method) =>
        Effect.sync(() => {
          asked.push(method)
          return method === "elicitation/create"
            ? { action: "accept", content: { name: "ada" } }
            : { role: "assistant", content: { type: "text", text: "hello" }, model: "m" }
        })
    })
    const send = (method: string, params: Record<string, unknown>) =>
      Effect.suspend(() => {
        const id = nextId++
        return Effect.map(handle.handler(JsonRpc.request(id, method, params) as JsonRpc.JsonRpcRequest, context(id)), (r) => r as any)
      })
    const result = (method: string, params: Record<string, unknown>) =>
      Effect.map(send(method, params), (r) => {
        if (!("result" in r)) throw new Error(`${method} failed: ${JSON.stringify(r.error)}`)
        return r.result as Record<string, any>
      })
    yield* result("initialize", { protocolVersion: "2025-11-25", capabilities: PLAIN, clientInfo: { name: "c", version: "1" } })
    yield* handle.handler({ jsonrpc: "2.0", method: "notifications/initialized" } as JsonRpc.JsonRpcNotification, context(undefined))
    return { probes, result, asked }
  })

describe.skipIf(!RedisServer.present)("2025-11-25 core tasks in a fleet", () => {
  it.live("made on A: tasks/get and tasks/cancel on B (A's handler is interrupted); tasks/result on B answers A's asks", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* instance(redis.url, "session-on-a")
      const b = yield* instance(redis.url, "session-on-b")

      const held = yield* a.result("tools/call", { name: "wait", arguments: {}, task: {} })
      const taskId: string = held.task.taskId
      yield* Deferred.await(a.probes.started)
      expect(yield* b.result("tasks/get", { taskId })).toMatchObject({ taskId, status: "working" })
      expect(yield* b.result("tasks/cancel", { taskId })).toMatchObject({ taskId, status: "cancelled" })
      yield* Deferred.await(a.probes.interrupted)
      expect(yield* a.result("tasks/get", { taskId })).toMatchObject({ status: "cancelled" })

      const asking = yield* a.result("tools/call", { name: "ask", arguments: {}, task: {} })
      const answered = yield* b.result("tasks/result", { taskId: asking.task.taskId })
      expect(answered.content).toEqual([{ type: "text", text: "name=ada said=hello" }])
      expect(b.asked).toEqual(["elicitation/create", "sampling/createMessage"])
      expect(a.asked).toEqual([])
    }).pipe(Effect.scoped), 60_000)
})
