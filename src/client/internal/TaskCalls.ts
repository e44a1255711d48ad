/**
 * The tasks part of `McpClient` (the `io.modelcontextprotocol/tasks`
 * extension): `callTool` that follows a task to its result, `callToolTask`
 * that hands the task over, and task handles. The following itself is
 * TaskFollower's, imported when the first task needs it (it loads TaskWire's
 * Schemas); building these costs nothing.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as McpSchema from "effect/ai/McpSchema"
import * as Stream from "effect/Stream"
import { RequestTimeout } from "../../McpError.ts"
import { group } from "../../McpErrorGroup.ts"
import type { TaskError, TaskHandle, TaskState, ToolCallTask } from "../TaskHandle.ts"
import type * as TaskWire from "../../TaskWire.ts"
import type { CallOptions } from "./McpCallEngine.ts"
import type * as TaskFollower from "./TaskFollower.ts"
import * as TaskResults from "./TaskResults.ts"

type Params = Readonly<Record<string, unknown>>

let loading: Promise<typeof TaskFollower> | undefined
const follower = (): Effect.Effect<typeof TaskFollower> => {
  const module = loading ??= import("./TaskFollower.ts")
  return Effect.promise(() => module)
}

export interface TaskCallsOptions {
  readonly deps: TaskFollower.Deps
  /** `tools/call` as sent today, its answer a result or a task as it came. */
  readonly call: (
    params: Params,
    options: CallOptions | undefined
  ) => Effect.Effect<McpSchema.CallToolResult | TaskResults.Created, TaskFollower.FollowError>
}

/** A call's options, and who hears the states of the task it becomes. */
export interface TaskCallOptions extends CallOptions {
  readonly onTaskState?: ((state: TaskState) => Effect.Effect<void>) | undefined
}

const millis = (d: Duration.Duration): number => (Duration.isFinite(d) ? Duration.toMillis(d) : Number.POSITIVE_INFINITY)

/** A whole call (the request, then its task) under the caller's `maxTotalTimeout`. */
const capped = <A, E>(effect: Effect.Effect<A, E>, options: CallOptions | undefined) => {
  if (options?.maxTotalTimeout === undefined) return effect
  const max = Duration.fromInputUnsafe(options.maxTotalTimeout)
  return Effect.timeoutOrElse(effect, {
    duration: max,
    orElse: () =>
      Effect.fail(
        new RequestTimeout({ method: "tools/call", id: "task", timeoutMs: millis(max), phase: "Maximum total time exceeded" })
      )
  })
}

export const make = (options: TaskCallsOptions) => {
  const { deps } = options

  /** Follows a task the server made (`onTaskState` sees its states); the result as it is otherwise. */
  const callTool = (params: Params, callOptions: TaskCallOptions | undefined) =>
    capped(
      Effect.flatMap(options.call(params, callOptions), (answer) =>
        TaskResults.isCreated(answer)
          ? Effect.flatMap(follower(), (f) => f.followCall(deps, answer.raw, callOptions, callOptions?.onTaskState))
          : Effect.succeed(answer)),
      callOptions
    )

  /**
   * A handle on a task, its failures in their groups. The flat errors of
   * this client become `TaskError<A>` here, as `McpClient` types its own
   * methods (its transport's sign-in errors are `A`).
   */
  const handle = <A>(taskId: string, created: TaskFollower.State | undefined): TaskHandle<A> => {
    const grouped = <X>(effect: Effect.Effect<X, TaskFollower.FollowError>) =>
      Effect.mapError(effect, group) as Effect.Effect<X, TaskError<A>>
    return {
      _tag: "Task",
      taskId,
      created: created as TaskWire.Task | undefined,
      get: grouped(Effect.flatMap(follower(), (f) => f.get(deps, taskId))),
      states: Stream.mapError(
        Stream.unwrap(Effect.map(follower(), (f) => f.states(deps, taskId, created))),
        group
      ) as Stream.Stream<TaskState, TaskError<A>>,
      result: grouped(Effect.flatMap(follower(), (f) => f.result(deps, taskId, created))),
      update: (inputResponses) => grouped(Effect.flatMap(follower(), (f) => Effect.asVoid(f.update(deps, taskId, inputResponses)))),
      cancel: grouped(Effect.flatMap(follower(), (f) => Effect.asVoid(f.cancel(deps, taskId))))
    }
  }

  /** The call, and the task it made if the server made one. */
  const callToolTask = <A>(params: Params, callOptions: CallOptions | undefined) =>
    Effect.flatMap(options.call(params, callOptions), (answer): Effect.Effect<ToolCallTask<A>, TaskFollower.FollowError> =>
      TaskResults.isCreated(answer)
        ? Effect.flatMap(follower(), (f) =>
          Effect.map(f.created("tools/call", answer.raw), (task) => handle<A>(task.taskId, task)))
        : Effect.succeed({ _tag: "Answered", result: answer }))

  return { callTool, callToolTask, handle }
}
