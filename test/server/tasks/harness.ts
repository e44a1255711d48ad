/**
 * A server with task tools, driven through its handler as a transport would
 * drive it: raw JSON-RPC requests of the stateless era (2026-07-28) or of a
 * handshake-era session, with the principal and session a transport would
 * name, and the notifications it sends recorded in a queue.
 */
import { Deferred, Effect, Queue, Schema } from "effect"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import { RpcError } from "../../../src/McpError.ts"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import type { HandlerContext } from "../../../src/server/Handler.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import * as Task from "../../../src/server/Task.ts"
import * as Tool from "../../../src/server/Tool.ts"
import * as TaskWire from "../../../src/TaskWire.ts"

export const TASKS = { extensions: { [TaskWire.EXTENSION_ID]: {} }, elicitation: {}, sampling: {} }
export const PLAIN = { elicitation: {}, sampling: {} }

export const NAME_FORM = { message: "Your name?", requestedSchema: { type: "object" as const, properties: { name: { type: "string" as const } } } }

/** What the tools report: `wait` started, was interrupted; `wait` finishes when `release` is done. */
export interface Probes {
  readonly started: Deferred.Deferred<void>
  readonly release: Deferred.Deferred<void>
  readonly interrupted: Deferred.Deferred<void>
}

export const makeProbes = Effect.all({ started: Deferred.make<void>(), release: Deferred.make<void>(), interrupted: Deferred.make<void>() })

export const makeServer = (probes: Probes, options: Partial<McpServer.McpServerOptions> = {}) =>
  McpServer.make({ serverInfo: { name: "tasks", version: "1.0.0" }, stateless: true, ...options }).pipe(
    Tool.add("instant", { description: "never a task" }, () => Effect.succeed("instant")),
    Tool.add("wait", { taskSupport: "optional" }, () =>
      Deferred.succeed(probes.started, undefined).pipe(
        Effect.andThen(Deferred.await(probes.release)),
        Effect.as("released"),
        Effect.onInterrupt(() => Deferred.succeed(probes.interrupted, undefined))
      )),
    Tool.add("must", { taskSupport: "required" }, () => Effect.succeed("ran as a task")),
    Tool.add("tool_error", { taskSupport: "optional" }, () => Effect.succeed({ isError: true, content: [{ type: "text", text: "no" }] })),
    Tool.add("rpc_error", { taskSupport: "optional" }, () =>
      Effect.fail(new RpcError({ code: -32603, rpcMessage: "exploded", data: { why: "test" } }))),
    Tool.add("defect", { taskSupport: "optional" }, () => Effect.die("boom")),
    Tool.add("ask", { taskSupport: "optional" }, (_, ctx) =>
      Effect.gen(function*() {
        const answer = yield* ctx.elicit(NAME_FORM)
        const sampled = yield* ctx.sample({ messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 5 })
        const said = (sampled.content as { text?: string }).text
        return `name=${String(answer.action === "accept" ? answer.content?.name : answer.action)} said=${said}`
      })),
    Tool.add("two", { taskSupport: "optional" }, (_, ctx) =>
      Effect.all([ctx.elicit(NAME_FORM), ctx.elicit({ ...NAME_FORM, message: "Again?" })], { concurrency: 2 }).pipe(
        Effect.map(([a, b]) => `${String(a.action)} ${String(b.action)}`)
      )),
    Tool.add("progress", { taskSupport: "optional" }, (_, ctx) =>
      ctx.progress(1, { total: 2, message: "half way" }).pipe(Effect.andThen(Deferred.await(probes.release)), Effect.as("done"))),
    Tool.add("later", { taskSupport: "required", taskStart: "escalate", parameters: { n: Schema.Number } }, ({ n }, ctx) =>
      Effect.gen(function*() {
        const answer = yield* McpServer.inputKey("who")(ctx.elicit(NAME_FORM))
        const who = String(answer.action === "accept" ? answer.content?.name : "?")
        return yield* Task.escalate(ctx, () => Effect.succeed(`${who} x${n}`))
      }))
  )

export interface Caller {
  readonly principal?: string | undefined
  readonly sessionId?: string | undefined
  /** The client's capabilities on a stateless request; `undefined` sends a handshake-era request. */
  readonly capabilities?: Record<string, unknown> | undefined
}

let nextId = 1

/** A transport's view: notifications land in `notes`. */
export const makeDriver = (handler: McpServer.ServerHandle<never>["handler"]) =>
  Effect.gen(function*() {
    const notes = yield* Queue.unbounded<{ readonly method: string; readonly params: any }>()
    const context = (caller: Caller, id: JsonRpc.RequestId): HandlerContext => ({
      sessionId: caller.sessionId,
      requestId: id,
      principal: caller.principal,
      notify: (method, params) => Queue.offer(notes, { method, params }).pipe(Effect.asVoid),
      request: (method) => Effect.die(`unexpected request ${method}`)
    })
    const send = (method: string, params: Record<string, unknown>, caller: Caller = { capabilities: TASKS }) =>
      Effect.suspend(() => {
        const id = nextId++
        const withMeta = caller.capabilities === undefined
          ? params
          : {
            ...params,
            _meta: {
              ...(params._meta as object | undefined),
              ...RequestMeta.requestMeta({ protocolVersion: "2026-07-28", clientCapabilities: caller.capabilities })
            }
          }
        return Effect.map(handler(JsonRpc.request(id, method, withMeta) as JsonRpc.JsonRpcRequest, context(caller, id)), (r) => r as any)
      })
    const notify = (method: string, params: Record<string, unknown>, caller: Caller) =>
      handler({ jsonrpc: "2.0", method, params } as JsonRpc.JsonRpcNotification, context(caller, undefined as never))
    /** The result of a call, failing the test on an error reply. */
    const result = (method: string, params: Record<string, unknown>, caller?: Caller) =>
      Effect.map(send(method, params, caller), (r) => {
        if (!("result" in r)) throw new Error(`${method} failed: ${JSON.stringify(r.error)}`)
        return r.result as Record<string, any>
      })
    /** Polls tasks/get (yielding between polls) until the task's status is one of `statuses`. */
    const until = (taskId: string, statuses: ReadonlyArray<string>, caller?: Caller) =>
      Effect.gen(function*() {
        for (let i = 0; i < 100_000; i++) {
          const task = yield* result("tasks/get", { taskId }, caller)
          if (statuses.includes(task.status)) return task
          yield* Effect.yieldNow
        }
        throw new Error(`task ${taskId} never reached ${statuses.join("|")}`)
      })
    return { send, notify, result, until, notes }
  })

/** An empty acknowledgement (`tasks/update`, `tasks/cancel`): `resultType: "complete"` and nothing of a task; `_meta` allowed. */
export const ackOf = (result: Record<string, unknown> | undefined) =>
  result === undefined ? undefined : { resultType: result.resultType, other: Object.keys(result).filter((k) => k !== "resultType" && k !== "_meta") }

export const ACK = { resultType: "complete", other: [] }
