/**
 * Following a task of the `io.modelcontextprotocol/tasks` extension to its
 * end: `tasks/get` at the interval the server asks for (`pollIntervalMs`,
 * on the Clock, so a TestClock drives it), the task's `inputRequests`
 * answered once each with the client's own handlers and sent back with
 * `tasks/update`, and the terminal state turned into the call's outcome
 * (`completed` → the result, `failed` → its JSON-RPC error, `cancelled` →
 * `TaskCancelled`). Loaded by `McpClient` when the first task arrives: it
 * brings TaskWire's Schemas.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as McpSchema from "effect/ai/McpSchema"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as JsonRpc from "../../JsonRpc.ts"
import { InvalidPayload, RpcError, TaskCancelled } from "../../McpError.ts"
import * as TaskWire from "../../TaskWire.ts"
import type { RequestHandler } from "../ClientTransport.ts"
import type { CallOptions, Decode, FlatError } from "./McpCallEngine.ts"
import type { ModernError } from "./ModernCalls.ts"

/** How long to wait between polls when the server suggests nothing: one second. */
export const DEFAULT_POLL_INTERVAL_MS = 1_000

/** How long a `tasks/cancel` sent on the way out (interruption, timeout) may take before it is given up. */
const CANCEL_TIMEOUT = Duration.seconds(5)

type Params = Readonly<Record<string, unknown>>

/** What following a task fails with, before `McpClient` puts it in its group. */
export type FollowError = FlatError | ModernError | RpcError | TaskCancelled

/** What a follower needs from its client. */
export interface Deps {
  /** One request in the client's era (the stateless era's `_meta` and headers included). */
  readonly send: <A>(
    method: string,
    params: Params | undefined,
    callOptions: CallOptions | undefined,
    decode: Decode<A>
  ) => Effect.Effect<A, FlatError | ModernError>
  /** The client's answers to server requests (elicitation, sampling, roots). */
  readonly answer: RequestHandler
  readonly decodeCallTool: Decode<McpSchema.CallToolResult>
}

/** A task's state, as created (no status payload) or as `tasks/get` answered it. */
export type State = TaskWire.Task | TaskWire.DetailedTask

const decodeDetailed = Schema.decodeUnknownEffect(TaskWire.DetailedTask)
const decodeCreatedTask = Schema.decodeUnknownEffect(TaskWire.CreateTaskResult)

/** The task of a `CreateTaskResult` (`method`: the request it answered). */
export const created = (method: string, raw: unknown): Effect.Effect<TaskWire.Task, InvalidPayload> =>
  decodeCreatedTask(raw).pipe(
    Effect.map(({ _meta: _, resultType: __, ...task }) => task as TaskWire.Task),
    Effect.mapError((e) => new InvalidPayload({ method, kind: "result", reason: e.message }))
  )

const detailedOf = (taskId: string): Decode<TaskWire.DetailedTask> => (raw) =>
  decodeDetailed(raw).pipe(
    Effect.mapError((e) => new InvalidPayload({ method: TaskWire.Method.get, kind: "result", reason: e.message })),
    Effect.filterOrFail(
      (task) => task.taskId === taskId,
      (task) =>
        new InvalidPayload({
          method: TaskWire.Method.get,
          kind: "result",
          reason: `asked for task ${taskId}, the answer is about task ${task.taskId}`
        })
    )
  )

const ignored: Decode<void> = () => Effect.void

/** Only the per-request part of a call's options: the whole call's limits are the caller's. */
const perRequest = (options: CallOptions | undefined): CallOptions | undefined =>
  options?.timeout === undefined ? undefined : { timeout: options.timeout }

/** `tasks/get`: the task's state now. */
export const get = (deps: Deps, taskId: string, options?: CallOptions) =>
  deps.send(TaskWire.Method.get, { taskId }, perRequest(options), detailedOf(taskId))

/** `tasks/update`: answers to some of the task's `inputRequests`, by key. */
export const update = (deps: Deps, taskId: string, inputResponses: Params, options?: CallOptions) =>
  deps.send(TaskWire.Method.update, { taskId, inputResponses }, perRequest(options), ignored)

/** `tasks/cancel`: asks the server to stop the task (it may finish anyway). */
export const cancel = (deps: Deps, taskId: string, options?: CallOptions) =>
  deps.send(TaskWire.Method.cancel, { taskId }, perRequest(options), ignored)

/** Runs the client's handler on each request, keyed as the server keyed them. */
const answerAll = (deps: Deps, requests: ReadonlyArray<readonly [string, typeof TaskWire.InputRequest.Type]>) =>
  Effect.forEach(
    requests,
    ([key, request]) =>
      Effect.map(
        deps.answer(JsonRpc.request(key, request.method, request.params) as JsonRpc.JsonRpcRequest),
        (answer) => [key, answer] as const
      ),
    { concurrency: "unbounded" }
  ).pipe(Effect.map((entries) => Object.fromEntries(entries)))

/** What tells one state from the next: a poll that changes none of these is not reported again. */
const fingerprint = (state: State): string => `${state.status}\u0000${state.statusMessage ?? ""}\u0000${state.lastUpdatedAt}`

/**
 * Follows the task from `initial` (or from a first `tasks/get` without one) to
 * a terminal state, which it returns; `onState` sees each state that differs
 * from the one before, the terminal one included. An `input_required`
 * task's requests are answered once each, across polls. One generator
 * function for every task followed (docs/design.md, "Per-request code and the old generation").
 */
export const follow = Effect.fnUntraced(function*(
  deps: Deps,
  taskId: string,
  initial: State | undefined,
  options: CallOptions | undefined,
  onState: (state: State) => Effect.Effect<void>
): Effect.fn.Return<TaskWire.DetailedTask, FollowError> {
  const answered = new Set<string>()
  // The state as created carries no status payload: a task created already terminal is read once for its result or error.
  let state: State = initial === undefined || TaskWire.isTerminal(initial.status)
    ? yield* get(deps, taskId, options)
    : initial
  let interval = state.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS
  let seen: string | undefined
  for (;;) {
    const print = fingerprint(state)
    if (print !== seen) {
      seen = print
      yield* onState(state)
    }
    if (TaskWire.isTerminal(state.status)) return state as TaskWire.DetailedTask
    if (state.status === "input_required" && "inputRequests" in state) {
      const fresh = Object.entries(state.inputRequests).filter(([key]) => !answered.has(key))
      if (fresh.length > 0) {
        for (const [key] of fresh) answered.add(key)
        const inputResponses = yield* answerAll(deps, fresh)
        yield* update(deps, taskId, inputResponses, options)
      }
    }
    // The interval may change over the task's life: the latest one the server gave holds.
    interval = state.pollIntervalMs ?? interval
    yield* Effect.sleep(Duration.millis(Math.max(0, interval)))
    state = yield* get(deps, taskId, options)
  }
})

/** A terminal state as the outcome of the `tools/call` it ran. */
export const outcome = (
  deps: Deps,
  state: TaskWire.DetailedTask
): Effect.Effect<McpSchema.CallToolResult, FollowError> => {
  switch (state.status) {
    case "completed":
      return deps.decodeCallTool(state.result)
    case "failed":
      return Effect.fail(
        new RpcError({ code: state.error.code, rpcMessage: state.error.message, data: state.error.data, method: "tools/call" })
      )
    case "cancelled":
      return Effect.fail(new TaskCancelled({ method: "tools/call", taskId: state.taskId, statusMessage: state.statusMessage }))
    default:
      return Effect.fail(
        new InvalidPayload({ method: TaskWire.Method.get, kind: "result", reason: `task ${state.taskId} is still ${state.status}` })
      )
  }
}

/** The task's result: followed to its end, then its outcome. */
export const result = (deps: Deps, taskId: string, initial: State | undefined, options?: CallOptions) =>
  Effect.flatMap(follow(deps, taskId, initial, options, () => Effect.void), (state) => outcome(deps, state))

/** Each state of the task, to its terminal one (see `follow`). */
export const states = (
  deps: Deps,
  taskId: string,
  initial: State | undefined,
  options?: CallOptions
): Stream.Stream<State, FollowError> =>
  Stream.callback<State, FollowError>((queue) =>
    follow(deps, taskId, initial, options, (state) => Effect.asVoid(Queue.offer(queue, state))).pipe(
      Effect.andThen(Queue.end(queue))
    )
  )

/**
 * `callTool`'s part once the server answered with a task: follows it to the
 * result. A call that ends before the task does (interrupted, timed out, a
 * broken connection) sends `tasks/cancel` on its way out, and stops there.
 */
export const followCall = (
  deps: Deps,
  raw: unknown,
  options: CallOptions | undefined,
  onState: (state: State) => Effect.Effect<void> = () => Effect.void
): Effect.Effect<McpSchema.CallToolResult, FollowError> =>
  Effect.flatMap(created("tools/call", raw), (task) => {
    let ended = false
    return follow(deps, task.taskId, task, options, onState).pipe(
      Effect.tap(() => Effect.sync(() => void (ended = true))),
      Effect.onExit((exit) =>
        exit._tag === "Success" || ended
          ? Effect.void
          : Effect.ignore(cancel(deps, task.taskId, { timeout: CANCEL_TIMEOUT }))
      ),
      Effect.flatMap((state) => outcome(deps, state))
    )
  })
