/**
 * `effect-mcp-transport call <url> <tool> [key=value…] [--args JSON]` (or the server's
 * command after `--`): calls one tool and prints its result.
 *
 * Progress notifications are shown on stderr while the call runs: a
 * redrawn bar when stderr is a terminal, otherwise one line per update.
 * Ctrl-C interrupts the call; the transport then sends
 * `notifications/cancelled` for it, the scope closes (child stopped, HTTP
 * session deleted) and the runtime exits with 130.
 *
 * The server's questions during the call (form elicitation, in either era)
 * are answered from `--answer field=value` and the terminal
 * (ServerQuestions); one that cannot be answered cancels the call the same
 * way and exits with 6.
 *
 * A call the server runs as a task (the tasks extension) is followed to its
 * result: the task's id and each status go to stderr (TaskStatus), and Ctrl-C
 * sends `tasks/cancel` for it before the program exits.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as McpSchema from "effect/ai/McpSchema"
import { Argument, Command, Flag } from "effect/cli"
import type { Progress } from "../../client/McpClient.ts"
import * as ArgsFlag from "../ArgsFlag.ts"
import * as Content from "../Content.ts"
import * as Output from "../Output.ts"
import * as ServerFlags from "../ServerFlags.ts"
import * as ServerQuestions from "../ServerQuestions.ts"
import * as Session from "../Session.ts"
import * as TaskStatus from "../TaskStatus.ts"

// ---------------------------------------------------------------------------
// Arguments

/** A value that parses as JSON is taken as JSON (`n=3`, `ok=true`, `xs=[1,2]`), anything else as a string. */
export const parseValue = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** `--answer` values by field name; a repeated field keeps the last value. */
export const parseAnswers = (
  pairs: ReadonlyArray<string>
): Effect.Effect<Record<string, string>, Output.UsageError> =>
  Effect.gen(function*() {
    const answers: Record<string, string> = {}
    for (const pair of pairs) {
      const eq = pair.indexOf("=")
      if (eq <= 0) return yield* new Output.UsageError({ message: `--answer expects field=value, got "${pair}"` })
      answers[pair.slice(0, eq)] = pair.slice(eq + 1)
    }
    return answers
  })

/** `--args` first, then each key=value over it. */
export const buildArguments = (
  argsJson: Option.Option<string>,
  pairs: ReadonlyArray<string>
): Effect.Effect<Record<string, unknown>, Output.UsageError> =>
  Effect.gen(function*() {
    const result: Record<string, unknown> = { ...(yield* ArgsFlag.parse(argsJson)) }
    for (const pair of pairs) {
      const eq = pair.indexOf("=")
      if (eq <= 0) {
        return yield* new Output.UsageError({ message: `expected key=value after the tool name, got "${pair}"` })
      }
      result[pair.slice(0, eq)] = parseValue(pair.slice(eq + 1))
    }
    return result
  })

// ---------------------------------------------------------------------------
// Progress

const BAR_WIDTH = 24

const progressText = (p: Progress): string => {
  const amount = p.total === undefined ? `${p.progress}` : `${p.progress}/${p.total}`
  return p.message === undefined ? amount : `${amount} ${p.message}`
}

/** Renders progress on stderr; `done` clears the bar. */
export const progressReporter = (tty: boolean) => {
  let drawn = false
  // A terminal that reports no size (0 columns, e.g. a bare pty) gets a conventional 80.
  const columns = () => (process.stderr.columns > 0 ? process.stderr.columns : 80)
  return {
    update: (p: Progress): Effect.Effect<void> =>
      Effect.sync(() => {
        if (!tty) {
          const pct = p.total !== undefined && p.total > 0 ? ` (${Math.round((100 * p.progress) / p.total)}%)` : ""
          process.stderr.write(`progress: ${progressText(p)}${pct}\n`)
          return
        }
        let bar = ""
        if (p.total !== undefined && p.total > 0) {
          const ratio = Math.max(0, Math.min(1, p.progress / p.total))
          const filled = Math.round(ratio * BAR_WIDTH)
          bar = `[${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}] ${String(Math.round(ratio * 100)).padStart(3)}% `
        }
        const text = `${bar}${progressText(p)}`.slice(0, Math.max(10, columns() - 1))
        process.stderr.write(`\r\x1b[2K${text}`)
        drawn = true
      }),
    done: Effect.sync(() => {
      if (drawn) process.stderr.write("\r\x1b[2K")
      drawn = false
    })
  }
}

// ---------------------------------------------------------------------------
// Result

/** The human-readable result: text blocks as text, other blocks summarised, structuredContent as JSON. */
export const renderResult = (result: McpSchema.CallToolResult): string => {
  const parts = result.content.map(Content.describe)
  if (result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent, null, 2))
  return parts.join("\n")
}

// ---------------------------------------------------------------------------
// Command

export const command = Command.make(
  "call",
  {
    words: Argument.String("url|tool|key=value").pipe(
      Argument.withDescription("[url] <tool> [key=value …]; a stdio server's command goes after --"),
      Argument.variadic()
    ),
    args: ArgsFlag.flag("The tool's arguments as one JSON object (key=value pairs are laid over it)"),
    timeout: Session.timeoutFlag(
      "60s",
      "How long the call may go without an answer or a progress notification"
    ),
    answer: Flag.String("answer").pipe(
      Flag.withDescription(
        "Answer a field the server asks for during the call (form elicitation) without the terminal; repeatable"
      ),
      Flag.withMetavar("field=value"),
      Flag.atLeast(0)
    ),
    connectTimeout: Session.connectTimeoutFlag,
    protocol: Session.protocolFlag,
    connection: ServerFlags.flags
  },
  ({ answer, args, connection, connectTimeout, protocol, timeout, words }) =>
    Output.run(Effect.scoped(Effect.gen(function*() {
      const json = yield* Output.Json
      const resolved = yield* ServerFlags.resolve(connection, words)
      const [name, ...pairs] = resolved.rest
      if (name === undefined) return yield* new Output.UsageError({ message: "no tool name given (call [url] <tool> [key=value …])" })
      const toolArguments = yield* buildArguments(args, pairs)
      const questions = yield* ServerQuestions.make({
        answers: yield* parseAnswers(answer),
        interactive: process.stdin.isTTY === true
      })
      const session = yield* Session.openResolved(resolved, {
        timeout,
        connectTimeout,
        listen: true,
        protocol,
        handlers: questions.handlers
      })
      const progress = progressReporter(process.stderr.isTTY === true)
      // An unanswerable question leaves its handler waiting; the call is cancelled in its favour.
      const result = yield* session.client.callTool(
        { name, arguments: toolArguments },
        { timeout, onProgress: progress.update, onTaskState: TaskStatus.reporter(progress.done) }
      ).pipe(Effect.raceFirst(questions.unanswered), Effect.ensuring(progress.done))
      if (json) yield* Output.json(result)
      else {
        const text = renderResult(result)
        if (text !== "") yield* Output.line(text)
      }
      if (result.isError === true) {
        if (!json) yield* Output.note(`${Output.PROGRAM}: tool ${name} reported an error (isError: true)`)
        return yield* new Output.Exit({ code: Output.ExitCode.Failure })
      }
    })))
).pipe(
  Command.withDescription("Call a tool and print its result; progress and task status are shown on stderr, Ctrl-C cancels the call"),
  Command.withExamples([
    { command: "effect-mcp-transport call http://127.0.0.1:8421/mcp add a=1 b=2", description: "Arguments as key=value (JSON values)" },
    { command: "effect-mcp-transport call echo --args '{\"text\":\"hi\"}' -- node server.js", description: "A stdio server" },
    { command: "effect-mcp-transport call book --answer date=2026-08-01 --answer seats=2 -- node server.js", description: "Answer the server's form without a terminal" }
  ])
)
