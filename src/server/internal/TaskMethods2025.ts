/**
 * The 2025-11-25 experimental core tasks, served from the same runner and
 * store as the extension (one task model, two wire dialects) to
 * handshake-era sessions of that revision that did not declare the
 * extension: task-augmented `tools/call` (`params.task`), `tasks/get`,
 * `tasks/result`, `tasks/list`, `tasks/cancel`, and
 * `notifications/tasks/status` on each status change.
 *
 * An ask made inside a task (elicitation, sampling, roots) sets the task
 * `input_required`, as in the extension; here it reaches the client as a
 * request tied to the task (`_meta["io.modelcontextprotocol/related-task"]`)
 * sent while a `tasks/result` waits, and its answer goes to the task as a
 * `tasks/update` would deliver it.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as JsonRpc from "../../JsonRpc.ts"
import { RpcError } from "../../McpError.ts"
import * as TaskWire from "../../TaskWire.ts"
import type { HandlerContext } from "../Handler.ts"
import type { RequestContext } from "../RequestContext.ts"
import type { TaskRecord } from "../TaskStore.ts"
import { update } from "./TaskMethods.ts"
import { ownerKey, type Runner, type TaskSupport } from "./TaskRunner.ts"

type Json = Record<string, unknown>

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const METHODS: ReadonlySet<string> = new Set(Object.values(TaskWire.CoreMethod).filter((m) => m.startsWith("tasks/")))

/** Whether the method is one of the 2025-11-25 tasks requests. */
export const handles = (method: string): boolean => METHODS.has(method)

/**
 * Whether a session speaks the 2025-11-25 tasks: a handshake-era session of
 * that revision whose client did not declare the extension (one that did is
 * served the extension).
 */
export const speaks = (
  session: Pick<RequestContext["session"], "era" | "protocolVersion" | "clientCapabilities">
): boolean =>
  session.era === "legacy" &&
  session.protocolVersion === TaskWire.CORE_TASKS_VERSION &&
  !TaskWire.declares(session.clientCapabilities)

/** The `params.task` of a `tools/call`: augmentation asked for (with a TTL or not), or not. */
export interface Augmentation {
  readonly requested: boolean
  readonly ttlMs?: number | undefined
}

/**
 * The augmentation of the `tools/call` being served, provided by the server
 * around the call on a session that speaks the 2025-11-25 tasks;
 * `undefined` elsewhere.
 */
export const CurrentAugmentation = Context.Reference<Augmentation | undefined>(
  "effect-mcp-transport/server/TaskAugmentation2025",
  { defaultValue: () => undefined }
)

/** The augmentation a `tools/call`'s params ask for. */
export const augmentationOf = (params: unknown): Augmentation => {
  const task = isRecord(params) ? params.task : undefined
  if (!isRecord(task)) return { requested: false }
  return { requested: true, ttlMs: typeof task.ttl === "number" && Number.isInteger(task.ttl) ? task.ttl : undefined }
}

const iso = (ms: number) => new Date(ms).toISOString()

/** A task in the 2025-11-25 shape. */
export const coreTask = (r: TaskRecord): Json => ({
  taskId: r.taskId,
  status: r.status,
  ...(r.statusMessage === undefined ? {} : { statusMessage: r.statusMessage }),
  createdAt: iso(r.createdAt),
  lastUpdatedAt: iso(r.lastUpdatedAt),
  ttl: r.ttlMs,
  ...(r.pollIntervalMs === undefined ? {} : { pollInterval: r.pollIntervalMs })
})

/** The 2025-11-25 `CreateTaskResult` of the extension's one. */
const nested = (created: Json): Json => {
  const { resultType: _r, ttlMs, pollIntervalMs, ...rest } = created
  return { task: { ...rest, ttl: ttlMs, ...(pollIntervalMs === undefined ? {} : { pollInterval: pollIntervalMs }) } }
}

/** The -32601 the 2025-11-25 spec prescribes for a call against the tool's `taskSupport`. */
const methodNotFound = (message: string) =>
  new RpcError({ code: JsonRpc.ErrorCode.MethodNotFound, rpcMessage: message })

/**
 * Runs a tool call on a session that speaks the 2025-11-25 tasks: as a task
 * when `params.task` asks for one and the tool allows it (answering the
 * nested `CreateTaskResult` at once and sending
 * `notifications/tasks/status` on each status change after); -32601 when
 * `params.task` asks for one the tool forbids, or a tool that requires one
 * is called without; else `inline`.
 */
export const offer = <R>(
  runner: Runner,
  support: TaskSupport,
  augmentation: Augmentation,
  body: (ctx: RequestContext) => Effect.Effect<Json, unknown, R>,
  inline: Effect.Effect<Json, unknown, R>,
  ctx: RequestContext
): Effect.Effect<Json, unknown, R> => {
  if (!augmentation.requested) {
    return support === "required"
      ? Effect.fail(methodNotFound("Method not found: this tool must be called as a task (params.task)"))
      : inline
  }
  if (support === "forbidden") return Effect.fail(methodNotFound("Method not found: this tool cannot be called as a task"))
  const owner = ownerKey(ctx.principal, ctx.sessionId)
  return Effect.flatMap(runner.start(owner, (c) => body(withProgress(c, ctx)), ctx, augmentation.ttlMs), (created) => {
    const taskId = created.taskId as string
    return Effect.as(runner.detach(statusFeed(runner, taskId, ctx.notify)), nested(created))
  })
}

/**
 * The task's context with its progress also sent as `notifications/progress`
 * under the creating request's token: a task-augmented request keeps its
 * token for the task's life (2025-11-25). The handler runs only while the
 * task is not terminal, so none is sent after.
 */
const withProgress = (task: RequestContext, request: RequestContext): RequestContext => {
  const token = request.progressToken
  if (token === undefined) return task
  const progress: RequestContext["progress"] = (value, o) =>
    Effect.andThen(
      task.progress(value, o),
      Effect.ignore(request.notify("notifications/progress", {
        progressToken: token,
        progress: value,
        ...(o?.total === undefined ? {} : { total: o.total }),
        ...(o?.message === undefined ? {} : { message: o.message })
      }))
    )
  // A proxy, not a copy: the context's members are getters over its private state.
  return new Proxy(task, {
    get: (target, key) => (key === "progress" ? progress : Reflect.get(target, key, target))
  })
}

/** Sends the task's status to the session each time it changes, until it is terminal or gone. */
const statusFeed = (runner: Runner, taskId: string, notify: HandlerContext["notify"]): Effect.Effect<void> => {
  // The status the CreateTaskResult told: the feed may start after the task moved on.
  let last: TaskWire.TaskStatus = "working"
  return runner.store.changes(taskId).pipe(
    Stream.runForEach((r) => {
      const previous = last
      last = r.status
      if (previous === r.status) return Effect.void
      return Effect.ignore(notify(TaskWire.CoreMethod.statusNotification, coreTask(r)))
    }),
    Effect.ignore
  )
}

const notFound = (id: JsonRpc.RequestId) =>
  JsonRpc.failure(id, JsonRpc.ErrorCode.InvalidParams, "Failed to retrieve task: Task not found")

const related = (taskId: string) => ({ [TaskWire.RELATED_TASK_META_KEY]: { taskId } })

const PAGE_SIZE = 50

/** The asks of a task being sent to its client now, by `taskId/key`: each is sent once whatever `tasks/result`s wait. */
const inFlight = new WeakMap<Runner, Set<string>>()

/**
 * Answers a 2025-11-25 `tasks/get`, `tasks/result`, `tasks/list` or
 * `tasks/cancel`. A task that is unknown, expired or another owner's is
 * answered with one and the same -32602, so its existence is never told.
 */
export const serve = (
  runner: Runner,
  request: JsonRpc.JsonRpcRequest,
  hctx: HandlerContext
): Effect.Effect<JsonRpc.JsonRpcResponse> => {
  const owner = ownerKey(hctx.principal, hctx.ephemeral === true ? undefined : hctx.sessionId)
  const params = isRecord(request.params) ? request.params : {}
  if (request.method === TaskWire.CoreMethod.list) return list(runner, request.id, params.cursor, owner, hctx)
  const taskId = params.taskId
  if (typeof taskId !== "string") {
    return Effect.succeed(JsonRpc.failure(request.id, JsonRpc.ErrorCode.InvalidParams, "Invalid params: taskId must be a string"))
  }
  return Effect.flatMap(Effect.orDie(runner.store.get(taskId)), (record): Effect.Effect<JsonRpc.JsonRpcResponse> => {
    if (record === undefined || record.owner !== owner) return Effect.succeed(notFound(request.id))
    switch (request.method) {
      case TaskWire.CoreMethod.get:
        return Effect.succeed(JsonRpc.success(request.id, coreTask(record)))
      case TaskWire.CoreMethod.cancel:
        if (TaskWire.isTerminal(record.status)) {
          return Effect.succeed(
            JsonRpc.failure(request.id, JsonRpc.ErrorCode.InvalidParams, `Cannot cancel task in terminal status: ${record.status}`)
          )
        }
        return Effect.andThen(
          runner.cancel(taskId),
          Effect.map(Effect.orDie(runner.store.get(taskId)), (after) =>
            after === undefined ? notFound(request.id) : JsonRpc.success(request.id, coreTask(after)))
        )
      default:
        return result(runner, request.id, taskId, hctx)
    }
  })
}

/**
 * `tasks/result`: waits until the task is terminal, sending the client the
 * task's asks meanwhile, and answers the tool's result (with the task tied
 * in `_meta`) or the JSON-RPC error it failed with. One generator function
 * for every `tasks/result` (docs/design.md, "Per-request code and the old
 * generation").
 */
const result = Effect.fnUntraced(function*(
  runner: Runner,
  id: JsonRpc.RequestId,
  taskId: string,
  hctx: HandlerContext
): Effect.fn.Return<JsonRpc.JsonRpcResponse, never, Scope.Scope> {
  const last = yield* runner.store.changes(taskId).pipe(
    Stream.tap((r) => r.status === "input_required" ? forwardAsks(runner, r, hctx) : Effect.void),
    Stream.runLast,
    Effect.orDie
  )
  if (Option.isNone(last) || !TaskWire.isTerminal(last.value.status)) return notFound(id)
  const r = last.value
  if (r.status === "completed") {
    const value = r.result ?? {}
    return JsonRpc.success(id, { ...value, _meta: { ...(isRecord(value._meta) ? value._meta : {}), ...related(taskId) } })
  }
  if (r.status === "failed") {
    const error = r.error ?? { code: JsonRpc.ErrorCode.InternalError, message: "Internal error" }
    return JsonRpc.failure(id, error.code, error.message, error.data)
  }
  return JsonRpc.failure(id, JsonRpc.ErrorCode.InvalidParams, "Task was cancelled", { taskId, status: r.status })
}, Effect.scoped)

/**
 * Sends each outstanding ask of the task to the client (once, while this
 * `tasks/result` waits) and hands the answer to the task. A client's error
 * answer is handed over as it is, so the task fails on it rather than wait
 * until its TTL.
 */
const forwardAsks = (runner: Runner, r: TaskRecord, hctx: HandlerContext) =>
  Effect.suspend(() => {
    let sending = inFlight.get(runner)
    if (sending === undefined) inFlight.set(runner, sending = new Set())
    const busy = sending
    const fresh = Object.entries(r.inputRequests).filter(([key]) => !busy.has(`${r.taskId}/${key}`))
    return Effect.forEach(fresh, ([key, ask]) => {
      const slot = `${r.taskId}/${key}`
      busy.add(slot)
      const params = isRecord(ask.params) ? ask.params : {}
      const meta = { ...(isRecord(params._meta) ? params._meta : {}), ...related(r.taskId) }
      const send = hctx.request(ask.method, { ...params, _meta: meta }).pipe(
        Effect.catch((e) => Effect.succeed<unknown>({ error: String(e) })),
        Effect.flatMap((answer) => update(runner, r.taskId, { [key]: answer })),
        Effect.ensuring(Effect.sync(() => busy.delete(slot)))
      )
      return Effect.forkScoped(send)
    }, { discard: true })
  })

const order = (a: TaskRecord, b: TaskRecord) =>
  a.createdAt - b.createdAt || (a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0)

/**
 * A cursor names the last task of its page (creation time and id), so a
 * task that expires between pages shifts nothing.
 */
const list = (
  runner: Runner,
  id: JsonRpc.RequestId,
  cursor: unknown,
  owner: string | undefined,
  hctx: HandlerContext
): Effect.Effect<JsonRpc.JsonRpcResponse> => {
  const all = runner.store.list
  if (all === undefined) {
    return Effect.succeed(JsonRpc.failure(id, JsonRpc.ErrorCode.MethodNotFound, "Method not found", { method: "tasks/list" }))
  }
  let after: TaskRecord | undefined
  if (cursor !== undefined) {
    const m = typeof cursor === "string" ? /^([0-9]+)\.(.+)$/.exec(cursor) : null
    if (m === null) return Effect.succeed(JsonRpc.failure(id, JsonRpc.ErrorCode.InvalidParams, "Invalid params: unknown cursor"))
    after = { taskId: m[2], createdAt: Number(m[1]) } as TaskRecord
  }
  // Unowned tasks of a sessionless, unauthenticated caller are anyone's: none is listed to it.
  if (owner === undefined && hctx.ephemeral === true) return Effect.succeed(JsonRpc.success(id, { tasks: [] }))
  return Effect.map(Effect.orDie(all()), (records) => {
    const mine = records.filter((r) => r.owner === owner && (after === undefined || order(after, r) < 0)).sort(order)
    const page = mine.slice(0, PAGE_SIZE)
    const last = page[page.length - 1]
    const next = mine.length > PAGE_SIZE && last !== undefined ? { nextCursor: `${last.createdAt}.${last.taskId}` } : {}
    return JsonRpc.success(id, { tasks: page.map(coreTask), ...next })
  })
}
