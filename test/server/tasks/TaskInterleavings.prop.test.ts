/**
 * Tasks under any interleaving of polls, answers, cancellations, handler
 * completions and failures, and time passing past the TTL: a task shows at
 * most one terminal status and keeps it, a task that ends cancelled had its
 * handler interrupted (it never completed), no handler or record outlives
 * the TTL, and another principal's view never differs from an unknown id.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Deferred, Effect, Exit, Schema } from "effect"
import { TestClock } from "effect/testing"
import { RpcError } from "../../../src/McpError.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import * as Tool from "../../../src/server/Tool.ts"
import { ACK, ackOf, makeDriver, NAME_FORM, TASKS } from "./harness.ts"

const TTL_SECONDS = 10

const Op = Schema.Union([
  Schema.Struct({ op: Schema.Literals(["poll", "foreign", "answer", "cancel"]), task: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 })) }),
  Schema.Struct({ op: Schema.Literal("finish"), task: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 })), ok: Schema.Boolean }),
  Schema.Struct({ op: Schema.Literal("advance"), seconds: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 4 })) })
])
type Op = typeof Op.Type

interface Job {
  readonly finish: Deferred.Deferred<boolean>
  readonly ended: Deferred.Deferred<"interrupted" | "done">
}

const TERMINAL = ["completed", "failed", "cancelled"]
const OWNER = { principal: "owner", capabilities: TASKS }
const OTHER = { principal: "other", capabilities: TASKS }

/** Lets the task fibers run what they can. */
const settle = Effect.forEach(Array.from({ length: 20 }), () => Effect.yieldNow, { discard: true })

describe("tasks: interleavings", () => {
  it.effect.prop("one terminal status, cancelled handlers interrupted, nothing outlives the TTL, nothing told to another principal", {
    // Which tasks ask the client first (1 to 4 tasks), then what happens, in order.
    asks: Arbitrary.schema(Schema.Array(Schema.Boolean).check(Schema.isMinLength(1), Schema.isMaxLength(4))),
    ops: Arbitrary.schema(Schema.Array(Op).check(Schema.isMinLength(8), Schema.isMaxLength(24)))
  }, ({ asks, ops }) =>
    Effect.gen(function*() {
      const jobs = new Map<number, Job>()
      const server = McpServer.make({ serverInfo: { name: "p", version: "1" }, tasks: { ttl: `${TTL_SECONDS} seconds` } }).pipe(
        Tool.add("job", { taskSupport: "required", parameters: { k: Schema.Number, ask: Schema.Boolean } }, ({ k, ask }, ctx) =>
          Effect.gen(function*() {
            const job = jobs.get(k)!
            if (ask) yield* ctx.elicit(NAME_FORM)
            const ok = yield* Deferred.await(job.finish)
            if (!ok) return yield* Effect.fail(new RpcError({ code: -32603, rpcMessage: "failed on purpose" }))
            return `job ${k}`
          }).pipe(Effect.onExit((exit) => {
            const job = jobs.get(k)!
            return Deferred.succeed(job.ended, Exit.hasInterrupts(exit) ? "interrupted" : "done")
          })))
      )
      const handle = yield* McpServer.toHandler(server)
      const { send, result } = yield* makeDriver(handle.handler)
      const unknown = (method: string) => Effect.map(send(method, { taskId: "never-issued", inputResponses: {} }, OWNER), (r) => r.error)

      const tasks: Array<{ readonly taskId: string; readonly k: number; terminal: string | undefined; cancelledWhileOpen: boolean }> = []
      for (const [k, ask] of asks.entries()) {
        jobs.set(k, { finish: yield* Deferred.make<boolean>(), ended: yield* Deferred.make<"interrupted" | "done">() })
        const created = yield* result("tools/call", { name: "job", arguments: { k, ask } }, OWNER)
        expect(created.resultType).toBe("task")
        tasks.push({ taskId: created.taskId, k, terminal: undefined, cancelledWhileOpen: false })
        yield* settle
      }
      for (const op of ops) {
        if (op.op === "advance") {
          yield* TestClock.adjust(`${op.seconds} seconds`)
        } else {
          const task = tasks[op.task]
          if (task === undefined) continue
          const job = jobs.get(task.k)!
          const reply = yield* send("tasks/get", { taskId: task.taskId }, OWNER)
          const seen = "result" in reply ? reply.result : undefined
          if (seen !== undefined && TERMINAL.includes(seen.status)) {
            // A terminal status never changes.
            expect(task.terminal ?? seen.status).toBe(seen.status)
            task.terminal = seen.status
          }
          switch (op.op) {
            case "poll":
              break
            case "foreign":
              for (const method of ["tasks/get", "tasks/update", "tasks/cancel"]) {
                const foreign = yield* send(method, { taskId: task.taskId, inputResponses: {} }, OTHER)
                expect(foreign.error).toEqual(yield* unknown(method))
              }
              break
            case "answer":
              if (seen?.status === "input_required") {
                const answers = Object.fromEntries(Object.keys(seen.inputRequests).map((key) => [key, { action: "decline" }]))
                expect(ackOf((yield* send("tasks/update", { taskId: task.taskId, inputResponses: answers }, OWNER)).result)).toEqual(ACK)
              }
              break
            case "cancel": {
              const ack = yield* send("tasks/cancel", { taskId: task.taskId }, OWNER)
              if (seen !== undefined && !TERMINAL.includes(seen.status) && !(yield* Deferred.isDone(job.ended))) {
                task.cancelledWhileOpen = true
              }
              if (seen !== undefined) expect(ackOf(ack.result)).toEqual(ACK)
              break
            }
            case "finish":
              yield* Deferred.succeed(job.finish, op.ok)
              break
          }
        }
        yield* settle
      }

      for (const task of tasks) {
        const job = jobs.get(task.k)!
        const reply = yield* send("tasks/get", { taskId: task.taskId }, OWNER)
        if ("result" in reply) {
          const status = reply.result.status
          if (task.terminal !== undefined) expect(status).toBe(task.terminal)
          // A cancel that found the task open wins: the handler was interrupted, never completed.
          if (task.cancelledWhileOpen) {
            expect(status).toBe("cancelled")
            expect(yield* Deferred.await(job.ended)).toBe("interrupted")
          }
          if (status === "cancelled") expect(yield* Deferred.await(job.ended)).toBe("interrupted")
        }
      }
      // Past every TTL: every handler has ended and every task is forgotten.
      yield* TestClock.adjust(`${TTL_SECONDS} seconds`)
      yield* settle
      for (const task of tasks) {
        const job = jobs.get(task.k)!
        expect(yield* Deferred.isDone(job.ended)).toBe(true)
        expect((yield* send("tasks/get", { taskId: task.taskId }, OWNER)).error).toEqual(yield* unknown("tasks/get"))
      }
    }).pipe(Effect.scoped))
})
