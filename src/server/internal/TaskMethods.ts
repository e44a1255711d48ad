/**
 * The methods of the tasks extension a server answers: `tasks/get`,
 * `tasks/update`, `tasks/cancel`, and the task part of `subscriptions/listen`
 * (`notifications/tasks`). Each is refused with -32021 for a client that did
 * not declare the extension; a task that is unknown, expired or another
 * principal's is answered with one and the same -32602, so its existence is
 * never told.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as JsonRpc from "../../JsonRpc.ts"
import { withSubscriptionId } from "../../RequestMeta.ts"
import * as TaskWire from "../../TaskWire.ts"
import type { TaskRecord } from "../TaskStore.ts"
import { detailed, missingExtension, type Runner } from "./TaskRunner.ts"
import { isRecord } from "../../internal/Records.ts"

const METHODS: ReadonlySet<string> = new Set([TaskWire.Method.get, TaskWire.Method.update, TaskWire.Method.cancel])

/** Whether the method is one of the extension's requests. */
export const handles = (method: string): boolean => METHODS.has(method)

const ACK = { resultType: "complete" }

const notFound = (id: JsonRpc.RequestId) =>
  JsonRpc.failure(id, JsonRpc.ErrorCode.InvalidParams, "Failed to retrieve task: Task not found")

/** The task when `owner` may see it; an unknown, expired or foreign task alike is `undefined`. */
const visible = (runner: Runner, taskId: string, owner: string | undefined) =>
  Effect.map(Effect.orDie(runner.store.get(taskId)), (r) => (r !== undefined && r.owner === owner ? r : undefined))

/**
 * Answers `tasks/get`, `tasks/update` or `tasks/cancel` for `owner` (see
 * `TaskRunner.ownerKey`); `declared`: the client declared the extension.
 */
export const serve = (
  runner: Runner,
  request: JsonRpc.JsonRpcRequest,
  declared: boolean,
  owner: string | undefined
): Effect.Effect<JsonRpc.JsonRpcResponse> => {
  if (!declared) {
    const e = missingExtension()
    return Effect.succeed(JsonRpc.failure(request.id, e.code, e.rpcMessage, e.data))
  }
  const params = isRecord(request.params) ? request.params : {}
  const taskId = params.taskId
  if (typeof taskId !== "string") {
    return Effect.succeed(JsonRpc.failure(request.id, JsonRpc.ErrorCode.InvalidParams, "Invalid params: taskId must be a string"))
  }
  return Effect.flatMap(visible(runner, taskId, owner), (record): Effect.Effect<JsonRpc.JsonRpcResponse> => {
    if (record === undefined) return Effect.succeed(notFound(request.id))
    switch (request.method) {
      case TaskWire.Method.get:
        return Effect.succeed(JsonRpc.success(request.id, { resultType: "complete", ...detailed(record) }))
      case TaskWire.Method.cancel:
        return Effect.as(runner.cancel(taskId), JsonRpc.success(request.id, ACK))
      default: {
        const responses = params.inputResponses
        if (!isRecord(responses)) {
          return Effect.succeed(
            JsonRpc.failure(request.id, JsonRpc.ErrorCode.InvalidParams, "Invalid params: inputResponses must be an object")
          )
        }
        return Effect.as(update(runner, taskId, responses), JsonRpc.success(request.id, ACK))
      }
    }
  })
}

/**
 * Takes the answers to outstanding requests (others are ignored: never
 * issued, answered already, or superseded); the task is back to `working`
 * once none is outstanding.
 */
export const update = (runner: Runner, taskId: string, responses: Record<string, unknown>) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.orDie(runner.store.compareAndSet(taskId, ["input_required"], (r): TaskRecord => {
    const outstanding = { ...r.inputRequests }
    const received = { ...r.inputResponses }
    let taken = 0
    for (const [key, answer] of Object.entries(responses)) {
      if (!Object.hasOwn(outstanding, key) || answer === undefined) continue
      delete outstanding[key]
      received[key] = answer
      taken++
    }
    if (taken === 0) return r
    return {
      ...r,
      status: Object.keys(outstanding).length === 0 ? "working" : "input_required",
      inputRequests: outstanding,
      inputResponses: received,
      lastUpdatedAt: now
    }
  })))

/** The task ids a `subscriptions/listen` asks notifications for, if it asks for any. */
export const requestedTaskIds = (notifications: unknown): ReadonlyArray<string> | undefined => {
  if (!isRecord(notifications) || !Array.isArray(notifications.taskIds)) return undefined
  return notifications.taskIds.filter((id): id is string => typeof id === "string")
}

/** The task part of a listen (see `listen`). */
export interface TaskListen {
  readonly agreed: ReadonlyArray<string>
  readonly feed: Effect.Effect<void>
}

/**
 * The task part of a listen: the ids it agrees to (the tasks `owner` may
 * see), and the feed that sends each one's `notifications/tasks` (its
 * current state first) until it is terminal or gone, to run alongside the
 * listen.
 */
export const listen = (
  runner: Runner,
  taskIds: ReadonlyArray<string>,
  owner: string | undefined,
  subscriptionId: JsonRpc.RequestId,
  notify: (method: string, params?: unknown) => Effect.Effect<void, unknown>
): Effect.Effect<TaskListen> =>
  Effect.map(
    Effect.forEach(taskIds, (id) => Effect.map(visible(runner, id, owner), (r) => (r === undefined ? [] : [id]))),
    (found) => {
      const agreed = found.flat()
      const feed = Effect.forEach(
        agreed,
        (id) =>
          runner.store.changes(id).pipe(
            Stream.runForEach((r) =>
              Effect.ignore(notify(TaskWire.Method.statusNotification, {
                ...detailed(r),
                _meta: withSubscriptionId(undefined, subscriptionId)
              }))
            ),
            Effect.ignore
          ),
        { concurrency: "unbounded", discard: true }
      )
      return { agreed, feed }
    }
  )

/** The -32021 a listen asking for task notifications gets from a client that did not declare the extension. */
export const listenRefused = (id: JsonRpc.RequestId): JsonRpc.JsonRpcResponse => {
  const e = missingExtension()
  return JsonRpc.failure(id, e.code, e.rpcMessage, e.data)
}
