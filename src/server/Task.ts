/**
 * Tools that run as tasks (the tasks extension, `io.modelcontextprotocol/tasks`).
 * A tool declares with `Tool.add`'s `taskSupport` whether a call may run as
 * a task; the server then decides per request: as a task when the client
 * declared the extension (answering `CreateTaskResult` at once, the handler
 * going on in a fiber the server owns), inline otherwise. A handler defined
 * with `taskStart: "escalate"` picks the moment itself with `escalate`, e.g.
 * after asking the client for what it needs in `input_required` rounds.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import * as TaskRunner from "./internal/TaskRunner.ts"
import type { RequestContext } from "./RequestContext.ts"

/**
 * Whether a tool's calls may run as tasks: never, when the client declared
 * the extension, or only as tasks (the words of `execution.taskSupport`).
 *
 * @since 0.1.0
 * @category models
 */
export type TaskSupport = TaskRunner.TaskSupport

/**
 * Runs the rest of a handler as a task: starts `body` with the task's
 * context and answers the call with the `CreateTaskResult` (the handler
 * stops here; `body`'s value becomes the task's result, finished as the
 * tool's result is). When the client did not declare the extension, `body`
 * runs inline with the request's context. For tools defined with
 * `taskStart: "escalate"`.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 * import * as Task from "effect-mcp-transport/server/Task"
 * import * as Tool from "effect-mcp-transport/server/Tool"
 *
 * const server = McpServer.make({ serverInfo: { name: "reports", version: "1.0.0" } }).pipe(
 *   Tool.add("report", { taskSupport: "optional", taskStart: "escalate" }, (_, ctx) =>
 *     Effect.gen(function*() {
 *       // Asked in the request, before any task exists.
 *       const answer = yield* ctx.elicit({ message: "Which year?", requestedSchema: { type: "object", properties: { year: { type: "number" } } } })
 *       return yield* Task.escalate(ctx, () => Effect.succeed(`Report for ${String(answer.content?.year)}`))
 *     }))
 * )
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const escalate: <A, E, R>(
  ctx: RequestContext,
  body: (ctx: RequestContext) => Effect.Effect<A, E, R>
) => Effect.Effect<A, E, R> = TaskRunner.escalate
