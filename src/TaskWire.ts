/**
 * The wire of the tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663)
 * as Schemas and types, for the server that creates tasks and the client
 * that polls them: the `Task` shape and its status, the detailed variants
 * `tasks/get` and `notifications/tasks` carry (an `input_required` task with
 * its `inputRequests`, a `completed` one with its `result`, a `failed` one
 * with its JSON-RPC `error`), the flat `CreateTaskResult` (`resultType:
 * "task"`), the params and results of `tasks/get`, `tasks/update` and
 * `tasks/cancel`, the `-32021` error data naming the extension, and the
 * `Mcp-Name` routing rule (`params.taskId`).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as RequestMeta from "./RequestMeta.ts"

/**
 * The extension's identifier, the key under `capabilities.extensions`.
 *
 * @since 0.1.0
 * @category constants
 */
export const EXTENSION_ID = "io.modelcontextprotocol/tasks"

/**
 * The extension's methods and its notification.
 *
 * @since 0.1.0
 * @category constants
 */
export const Method = {
  get: "tasks/get",
  update: "tasks/update",
  cancel: "tasks/cancel",
  statusNotification: "notifications/tasks"
} as const

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/**
 * A task's status.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskStatus = Schema.Literals(["working", "input_required", "completed", "failed", "cancelled"])

/**
 * The type of a task's status.
 *
 * @since 0.1.0
 * @category models
 */
export type TaskStatus = typeof TaskStatus.Type

/**
 * The statuses a task never leaves.
 *
 * @since 0.1.0
 * @category constants
 */
export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set<TaskStatus>(["completed", "failed", "cancelled"])

/**
 * Whether a task in `status` is done for good (`completed`, `failed`, `cancelled`).
 *
 * @since 0.1.0
 * @category predicates
 */
export const isTerminal = (status: TaskStatus): boolean => TERMINAL_STATUSES.has(status)

const taskFields = {
  taskId: Schema.String,
  status: TaskStatus,
  statusMessage: Schema.optionalKey(Schema.String),
  /** ISO 8601. */
  createdAt: Schema.String,
  /** ISO 8601. */
  lastUpdatedAt: Schema.String,
  /** Integer milliseconds from creation; `null` for unlimited. */
  ttlMs: Schema.NullOr(Schema.Int),
  /** Integer milliseconds. */
  pollIntervalMs: Schema.optionalKey(Schema.Int)
}

/**
 * A task's metadata.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Task = Schema.Struct(taskFields)

/**
 * A task's metadata.
 *
 * @since 0.1.0
 * @category models
 */
export interface Task extends Schema.Schema.Type<typeof Task> {}

/**
 * One server-to-client request a task waits on (an `elicitation/create`,
 * `sampling/createMessage` or `roots/list`), as in an `input_required` result.
 *
 * @since 0.1.0
 * @category schemas
 */
export const InputRequest = Schema.Struct({ method: Schema.String, params: Schema.optionalKey(JsonObject) })

/**
 * The outstanding requests of a task, by key; a key is never reused within the task's life.
 *
 * @since 0.1.0
 * @category schemas
 */
export const InputRequests = Schema.Record(Schema.String, InputRequest)

/**
 * The client's answers, by the key of the request each answers (the result of that request).
 *
 * @since 0.1.0
 * @category schemas
 */
export const InputResponses = Schema.Record(Schema.String, Schema.Unknown)

/**
 * The `error` of a failed task: a JSON-RPC error object.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskError = Schema.Struct({ code: Schema.Int, message: Schema.String, data: Schema.optionalKey(Schema.Unknown) })

const detailed = {
  working: { ...taskFields, status: Schema.Literal("working") },
  input_required: { ...taskFields, status: Schema.Literal("input_required"), inputRequests: InputRequests },
  completed: { ...taskFields, status: Schema.Literal("completed"), result: JsonObject },
  failed: { ...taskFields, status: Schema.Literal("failed"), error: TaskError },
  cancelled: { ...taskFields, status: Schema.Literal("cancelled") }
}

/**
 * A task being worked on.
 *
 * @since 0.1.0
 * @category schemas
 */
export const WorkingTask = Schema.Struct(detailed.working)
/**
 * A task waiting on the client, with its outstanding `inputRequests`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const InputRequiredTask = Schema.Struct(detailed.input_required)
/**
 * A task that completed, with the request's `result` (a tool error is a completed task whose result has `isError: true`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const CompletedTask = Schema.Struct(detailed.completed)
/**
 * A task whose request failed with a JSON-RPC error, carried in `error`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FailedTask = Schema.Struct(detailed.failed)
/**
 * A task that was cancelled.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CancelledTask = Schema.Struct(detailed.cancelled)

/**
 * A task with what its status carries inlined: what `tasks/get` answers and
 * `notifications/tasks` sends.
 *
 * @since 0.1.0
 * @category schemas
 */
export const DetailedTask = Schema.Union([WorkingTask, InputRequiredTask, CompletedTask, FailedTask, CancelledTask])

/**
 * The type of a detailed task.
 *
 * @since 0.1.0
 * @category models
 */
export type DetailedTask = typeof DetailedTask.Type

const Meta = Schema.optionalKey(JsonObject)
const complete = { resultType: Schema.Literal("complete"), _meta: Meta }

/**
 * The answer to a request the server chose to run as a task: the task's
 * metadata, flat, with `resultType: "task"` (no `result`, `error` or
 * `inputRequests`: those are for `tasks/get`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const CreateTaskResult = Schema.Struct({ ...taskFields, resultType: Schema.Literal("task"), _meta: Meta })

/**
 * The type of a `CreateTaskResult`.
 *
 * @since 0.1.0
 * @category models
 */
export type CreateTaskResult = typeof CreateTaskResult.Type

/**
 * Params of `tasks/get` and `tasks/cancel`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskIdParams = Schema.Struct({ taskId: Schema.String })

/**
 * Params of `tasks/get`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const GetTaskParams = TaskIdParams

/**
 * `tasks/get`'s result: the detailed task with `resultType: "complete"`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const GetTaskResult = Schema.Union([
  Schema.Struct({ ...detailed.working, ...complete }),
  Schema.Struct({ ...detailed.input_required, ...complete }),
  Schema.Struct({ ...detailed.completed, ...complete }),
  Schema.Struct({ ...detailed.failed, ...complete }),
  Schema.Struct({ ...detailed.cancelled, ...complete })
])

/**
 * The type of `tasks/get`'s result.
 *
 * @since 0.1.0
 * @category models
 */
export type GetTaskResult = typeof GetTaskResult.Type

/**
 * Params of `tasks/update`: answers to the task's outstanding `inputRequests`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const UpdateTaskParams = Schema.Struct({ taskId: Schema.String, inputResponses: InputResponses })

/**
 * Params of `tasks/cancel`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CancelTaskParams = TaskIdParams

/**
 * The empty acknowledgement of `tasks/update` and `tasks/cancel`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AckResult = Schema.Struct(complete)

/**
 * `tasks/update`'s result: an empty acknowledgement.
 *
 * @since 0.1.0
 * @category schemas
 */
export const UpdateTaskResult = AckResult

/**
 * `tasks/cancel`'s result: an empty acknowledgement.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CancelTaskResult = AckResult

/**
 * The params of `notifications/tasks`: the detailed task, as `tasks/get` would answer at that moment.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskStatusNotificationParams = DetailedTask

/**
 * The tasks part of `subscriptions/listen`'s `notifications` and of the
 * acknowledgement's: the task ids to hear `notifications/tasks` for.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskSubscription = Schema.Struct({ taskIds: Schema.optionalKey(Schema.Array(Schema.String)) })

/**
 * The `data` of the `-32021` error for a client that did not declare the
 * extension: the capability it must declare, shaped like the client's
 * capabilities object.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MissingCapabilityData = Schema.Struct({
  requiredCapabilities: Schema.Struct({
    extensions: Schema.Struct({ [EXTENSION_ID]: JsonObject })
  })
})

/**
 * That `data`, ready to send.
 *
 * @since 0.1.0
 * @category constants
 */
export const missingCapabilityData: typeof MissingCapabilityData.Type = {
  requiredCapabilities: { extensions: { [EXTENSION_ID]: {} } }
}

/**
 * Whether a capabilities object (a request's `_meta` client capabilities, or
 * the ones a session declared at `initialize`) declares the extension.
 *
 * @since 0.1.0
 * @category predicates
 */
export const declares = (capabilities: unknown): boolean => {
  if (typeof capabilities !== "object" || capabilities === null) return false
  const extensions = (capabilities as Record<string, unknown>).extensions
  return typeof extensions === "object" && extensions !== null && Object.hasOwn(extensions, EXTENSION_ID)
}

/**
 * The methods whose Streamable HTTP POST carries `Mcp-Name: <params.taskId>`
 * (the routing rule of the extension; `RequestMeta.nameOf` applies it).
 *
 * @since 0.1.0
 * @category constants
 */
export const ROUTED_BY_TASK_ID: ReadonlyArray<string> = [Method.get, Method.update, Method.cancel]

/**
 * The `Mcp-Name` value of a tasks request, before encoding: its `params.taskId`.
 *
 * @since 0.1.0
 * @category getters
 */
export const routingName = (method: string, params: unknown): string | undefined =>
  ROUTED_BY_TASK_ID.includes(method) ? RequestMeta.nameOf(method, params) : undefined

// ---------------------------------------------------------------------------
// The 2025-11-25 experimental core tasks: the older dialect of the same task
// model, served to handshake-era sessions of that revision which did not
// declare the extension (`params.task` on `tools/call`, a nested
// `CreateTaskResult`, `tasks/result`, `tasks/list`, `ttl`/`pollInterval`).

/**
 * The protocol revision whose core carries the experimental tasks.
 *
 * @since 0.1.0
 * @category constants
 */
export const CORE_TASKS_VERSION = "2025-11-25"

/**
 * The `_meta` key tying a message to a task (2025-11-25): `{ taskId }`.
 *
 * @since 0.1.0
 * @category constants
 */
export const RELATED_TASK_META_KEY = "io.modelcontextprotocol/related-task"

/**
 * The methods of the 2025-11-25 tasks and their notification.
 *
 * @since 0.1.0
 * @category constants
 */
export const CoreMethod = {
  get: "tasks/get",
  result: "tasks/result",
  list: "tasks/list",
  cancel: "tasks/cancel",
  statusNotification: "notifications/tasks/status"
} as const

/**
 * A task as the 2025-11-25 schema has it (`Task`): `ttl` and `pollInterval`
 * in milliseconds, no result or input requests inlined.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CoreTask = Schema.Struct({
  taskId: Schema.String,
  status: TaskStatus,
  statusMessage: Schema.optionalKey(Schema.String),
  createdAt: Schema.String,
  lastUpdatedAt: Schema.String,
  ttl: Schema.NullOr(Schema.Int),
  pollInterval: Schema.optionalKey(Schema.Int)
})

/**
 * A 2025-11-25 task.
 *
 * @since 0.1.0
 * @category models
 */
export interface CoreTask extends Schema.Schema.Type<typeof CoreTask> {}

/**
 * The `params.task` of a task-augmented request (2025-11-25): the TTL asked for.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CoreTaskMetadata = Schema.Struct({ ttl: Schema.optionalKey(Schema.Int) })

/**
 * The answer to a task-augmented request (2025-11-25).
 *
 * @since 0.1.0
 * @category schemas
 */
export const CoreCreateTaskResult = Schema.Struct({ task: CoreTask, _meta: Schema.optionalKey(JsonObject) })

/**
 * The answer to `tasks/list` (2025-11-25).
 *
 * @since 0.1.0
 * @category schemas
 */
export const CoreListTasksResult = Schema.Struct({
  tasks: Schema.Array(CoreTask),
  nextCursor: Schema.optionalKey(Schema.String),
  _meta: Schema.optionalKey(JsonObject)
})

/**
 * The server capability of the 2025-11-25 tasks (`capabilities.tasks`):
 * `tasks/cancel`, task-augmented `tools/call`, and `tasks/list` when the
 * server can list its tasks.
 *
 * @since 0.1.0
 * @category constructors
 */
export const coreCapability = (list: boolean): Record<string, unknown> => ({
  ...(list ? { list: {} } : {}),
  cancel: {},
  requests: { tools: { call: {} } }
})
