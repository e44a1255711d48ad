/**
 * A task of the `io.modelcontextprotocol/tasks` extension, seen from the
 * client: what `McpClient.callToolTask` answers when the server runs a tool
 * call as a task, and what `McpClient.task(id)` rebuilds from a task id kept
 * across a restart. `McpClient.callTool` follows tasks by itself; a handle is
 * for callers that want the task's id and lifecycle.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type * as McpSchema from "effect/ai/McpSchema"
import type * as Stream from "effect/Stream"
import type { AuthError } from "../AuthError.ts"
import type { McpAuthError, McpProtocolError, McpServerError, McpTransportError } from "../McpErrorGroup.ts"
import type * as TaskWire from "../TaskWire.ts"

/**
 * What a handle's members fail with: the same as `McpClient`'s `McpClientError<A>`, the
 * groups of `McpErrorGroup` (`McpAuthError` only when the transport signs in).
 *
 * @since 0.1.0
 * @category errors
 */
export type TaskError<A = AuthError> =
  | McpTransportError
  | McpServerError
  | McpProtocolError
  | ([A] extends [never] ? never : McpAuthError)

/**
 * A task's state: as the server created it (no status payload), or as
 * `tasks/get` answered it (an `input_required` task with its
 * `inputRequests`, a `completed` one with its `result`, a `failed` one with
 * its `error`).
 *
 * @since 0.1.0
 * @category models
 */
export type TaskState = TaskWire.Task | TaskWire.DetailedTask

/**
 * A task the server runs a tool call as. Every member is an effect or a
 * stream run anew each time; none of them cancels the task when it is
 * interrupted (that is `cancel`'s job), so a handle may be dropped and
 * rebuilt from its `taskId` later.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskHandle<A = AuthError> {
  readonly _tag: "Task"
  /** The server's id for the task: keep it to come back to the task after a restart (`McpClient.task`). */
  readonly taskId: string
  /** The state the server created the task in (`undefined` for a handle rebuilt from an id). */
  readonly created: TaskWire.Task | undefined
  /** One `tasks/get`: the task's state now. */
  readonly get: Effect.Effect<TaskWire.DetailedTask, TaskError<A>>
  /**
   * The task's states, polled at the server's `pollIntervalMs`, each one that
   * differs from the one before, up to and including the terminal one. The
   * task's `inputRequests` are answered with the client's handlers on the way
   * (once each), as `result` does.
   */
  readonly states: Stream.Stream<TaskState, TaskError<A>>
  /**
   * Follows the task to its end: the tool's result when it completes, the
   * task's JSON-RPC error (`McpServerError` with an `RpcError`) when it
   * fails, `McpServerError` with a `TaskCancelled` when it was cancelled.
   */
  readonly result: Effect.Effect<McpSchema.CallToolResult, TaskError<A>>
  /** `tasks/update`: answers to the task's `inputRequests`, by key (`result` and `states` send these themselves). */
  readonly update: (inputResponses: Readonly<Record<string, unknown>>) => Effect.Effect<void, TaskError<A>>
  /** `tasks/cancel`: asks the server to stop the task. Cooperative: the task may still complete. */
  readonly cancel: Effect.Effect<void, TaskError<A>>
}

/**
 * What `McpClient.callToolTask` answers when the server did not make a task
 * and answered the call at once.
 *
 * @since 0.1.0
 * @category models
 */
export interface Answered {
  readonly _tag: "Answered"
  readonly result: McpSchema.CallToolResult
}

/**
 * The answer to `McpClient.callToolTask`: a task, or the result itself (the
 * server decides, call by call).
 *
 * @since 0.1.0
 * @category models
 */
export type ToolCallTask<A = AuthError> = TaskHandle<A> | Answered
