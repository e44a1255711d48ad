/**
 * `effect-mcp-transport prompt [url] <name> [key=value…]` (or the server's
 * command after `--`): gets one prompt (`prompts/get`) with its arguments and
 * prints its messages.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as McpSchema from "effect/ai/McpSchema"
import { Argument, Command } from "effect/cli"
import * as ArgsFlag from "../ArgsFlag.ts"
import * as Content from "../Content.ts"
import * as Output from "../Output.ts"
import * as ServerFlags from "../ServerFlags.ts"
import * as Session from "../Session.ts"

/**
 * `--args` (a JSON object of strings) first, then each key=value over it.
 * Prompt arguments are strings: a value is taken as written, never as JSON.
 */
export const buildArguments = (
  argsJson: Option.Option<string>,
  pairs: ReadonlyArray<string>
): Effect.Effect<Record<string, string>, Output.UsageError> =>
  Effect.gen(function*() {
    const result: Record<string, string> = {}
    for (const [key, value] of Object.entries(yield* ArgsFlag.parse(argsJson))) {
      if (typeof value !== "string") {
        return yield* new Output.UsageError({ message: `--args: prompt arguments are strings; "${key}" is not` })
      }
      result[key] = value
    }
    for (const pair of pairs) {
      const eq = pair.indexOf("=")
      if (eq <= 0) {
        return yield* new Output.UsageError({ message: `expected key=value after the prompt name, got "${pair}"` })
      }
      result[pair.slice(0, eq)] = pair.slice(eq + 1)
    }
    return result
  })

/** The description (when there is one), then each message as `role: content`. */
export const render = (result: McpSchema.GetPromptResult): string => {
  const lines = result.description === undefined || result.description === "" ? [] : [`# ${result.description}`]
  for (const message of result.messages) {
    lines.push(`${message.role}: ${Content.describe(message.content as Content.Content)}`)
  }
  return lines.join("\n")
}

export const command = Command.make(
  "prompt",
  {
    words: Argument.String("url|name|key=value").pipe(
      Argument.withDescription("[url] <name> [key=value …]; a stdio server's command goes after --"),
      Argument.variadic()
    ),
    args: ArgsFlag.flag("The prompt's arguments as one JSON object of strings (key=value pairs are laid over it)"),
    timeout: Session.timeoutFlag("30s", "Timeout of the request"),
    connectTimeout: Session.connectTimeoutFlag,
    protocol: Session.protocolFlag,
    connection: ServerFlags.flags
  },
  ({ args, connection, connectTimeout, protocol, timeout, words }) =>
    Output.run(Effect.scoped(Effect.gen(function*() {
      const resolved = yield* ServerFlags.resolve(connection, words)
      const [name, ...pairs] = resolved.rest
      if (name === undefined) {
        return yield* new Output.UsageError({ message: "no prompt name given (prompt [url] <name> [key=value …])" })
      }
      const promptArguments = yield* buildArguments(args, pairs)
      const session = yield* Session.openResolved(resolved, { timeout, connectTimeout, protocol })
      yield* Output.result(yield* session.client.getPrompt({ name, arguments: promptArguments }), render)
    })))
).pipe(
  Command.withDescription("Get a prompt (prompts/get) with its arguments and print its messages"),
  Command.withExamples([
    { command: "effect-mcp-transport prompt http://127.0.0.1:8421/mcp greet name=Ada", description: "Arguments as key=value (strings)" },
    { command: "effect-mcp-transport prompt --json greet name=Ada -- node server.js", description: "The raw result, of a stdio server" }
  ])
)
