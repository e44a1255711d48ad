/**
 * `effect-mcp-transport task get [url] <taskId>` and `task cancel [url] <taskId>`
 * (or the server's command after `--`): a task of the tasks extension, known
 * by the id `call` printed for it. `get` shows its state (`tasks/get`: the
 * result of a completed task, the error of a failed one), `cancel` asks the
 * server to stop it (`tasks/cancel`, cooperative: the task may still finish).
 */
import * as Effect from "effect/Effect"
import type * as McpSchema from "effect/ai/McpSchema"
import { Argument, Command } from "effect/cli"
import type * as TaskWire from "../../TaskWire.ts"
import * as Output from "../Output.ts"
import * as ServerFlags from "../ServerFlags.ts"
import * as Session from "../Session.ts"
import * as TaskStatus from "../TaskStatus.ts"
import { renderResult } from "./call.ts"

/** A task's state in words: its status, then what the status carries. */
export const render = (task: TaskWire.DetailedTask): string => {
  const head = `${task.taskId}: ${TaskStatus.describe(task)}`
  switch (task.status) {
    case "completed": {
      const text = renderResult(task.result as unknown as McpSchema.CallToolResult)
      return text === "" ? head : `${head}\n${text}`
    }
    case "failed":
      return `${head}\nerror ${task.error.code}: ${task.error.message}`
    case "input_required":
      return `${head}\nwaiting on: ${Object.keys(task.inputRequests).join(", ")}`
    default:
      return head
  }
}

const operands = Argument.String("url|taskId").pipe(
  Argument.withDescription("[url] <taskId>: the server's URL first (or its command after --), then the task's id"),
  Argument.variadic()
)

/** The session and the task id from the command line. */
const open = (
  connection: ServerFlags.Parsed,
  words: ReadonlyArray<string>,
  options: Session.OpenOptions,
  usage: string
) =>
  Effect.gen(function*() {
    const resolved = yield* ServerFlags.resolveOperands(connection, words)
    if (resolved.rest.length !== 1) return yield* new Output.UsageError({ message: `expected one task id (${usage})` })
    const session = yield* Session.openResolved(resolved, options)
    return session.client.task(resolved.rest[0]!)
  })

/** What both subcommands take: where the server is, the task's id, and how long to wait. */
const flags = {
  words: operands,
  timeout: Session.timeoutFlag("30s", "Timeout of the request"),
  connectTimeout: Session.connectTimeoutFlag,
  protocol: Session.protocolFlag,
  connection: ServerFlags.flags
}

/** A subcommand that opens the session, finds the task and does `act` with it. */
const subcommand = <E, R>(
  name: "get" | "cancel",
  act: (task: Effect.Success<ReturnType<typeof open>>) => Effect.Effect<void, E, R>,
  description: string
) =>
  Command.make(
    name,
    flags,
    ({ connection, connectTimeout, protocol, timeout, words }) =>
      Output.run(Effect.scoped(Effect.gen(function*() {
        const task = yield* open(connection, words, { timeout, connectTimeout, protocol }, `task ${name} [url] <taskId>`)
        yield* act(task)
      })))
  ).pipe(Command.withDescription(description))

const get = subcommand(
  "get",
  (task) => Effect.flatMap(task.get, (state) => Output.result(state, render)),
  "Show a task's state (tasks/get): its status, and its result or error once it has one"
)

const cancel = subcommand(
  "cancel",
  (task) =>
    Effect.andThen(
      task.cancel,
      Output.result({ taskId: task.taskId, cancelRequested: true }, () => `cancel requested for task ${task.taskId}`)
    ),
  "Ask the server to cancel a task (tasks/cancel); the task may still finish"
)

export const command = Command.make("task").pipe(
  Command.withDescription("Show or cancel a task a tool call became, by the id call printed (tasks/get, tasks/cancel)"),
  Command.withSubcommands([get, cancel]),
  Command.withExamples([
    { command: "effect-mcp-transport task get http://127.0.0.1:8421/mcp 786512e2-9e0d-44bd-8f29-789f320fe840", description: "A task's state" },
    { command: "effect-mcp-transport task cancel http://127.0.0.1:8421/mcp 786512e2-9e0d-44bd-8f29-789f320fe840", description: "Cancel it" }
  ])
)
