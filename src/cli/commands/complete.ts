/**
 * `effect-mcp-transport complete [url] <ref> <argument>=[partial] [key=value…]`
 * (or the server's command after `--`): asks the server for completions of
 * one argument (`completion/complete`) of a prompt or of a resource
 * template, and prints the values, one a line.
 *
 * The reference is a prompt's name, or a resource template's URI template
 * (a word with `://` or a `{`); the words after the argument are the values of
 * the other arguments already given (the request's `context.arguments`).
 */
import * as Effect from "effect/Effect"
import type * as McpSchema from "effect/ai/McpSchema"
import { Argument, Command } from "effect/cli"
import type { CompleteParams } from "../../client/McpClient.ts"
import * as Output from "../Output.ts"
import * as ServerFlags from "../ServerFlags.ts"
import * as Session from "../Session.ts"

/** A resource template's URI (`file:///{path}`, `users://{id}`), else a prompt's name. */
export const referenceOf = (word: string): CompleteParams["ref"] =>
  word.includes("://") || word.includes("{") ? { type: "ref/resource", uri: word } : { type: "ref/prompt", name: word }

const pair = (word: string, what: string): Effect.Effect<readonly [string, string], Output.UsageError> => {
  const eq = word.indexOf("=")
  return eq <= 0
    ? Effect.fail(new Output.UsageError({ message: `expected ${what}, got "${word}"` }))
    : Effect.succeed([word.slice(0, eq), word.slice(eq + 1)] as const)
}

/** The request from the operands: `<ref> <argument>=[partial] [key=value …]`. */
export const buildParams = (operands: ReadonlyArray<string>): Effect.Effect<CompleteParams, Output.UsageError> =>
  Effect.gen(function*() {
    const [ref, argument, ...context] = operands
    if (ref === undefined || argument === undefined) {
      return yield* new Output.UsageError({
        message: "expected a prompt name or resource template and an argument (complete [url] <ref> <argument>=[partial])"
      })
    }
    const [name, value] = yield* pair(argument, "<argument>=[partial] after the reference")
    const given: Record<string, string> = {}
    for (const word of context) {
      const [key, text] = yield* pair(word, "key=value for the arguments already given")
      given[key] = text
    }
    return {
      ref: referenceOf(ref),
      argument: { name, value },
      ...(context.length === 0 ? {} : { context: { arguments: given } })
    }
  })

/** How many of the matches were sent, when the server says there are more; undefined when it sent them all. */
export const remainder = (completion: McpSchema.CompleteResult["completion"]): string | undefined => {
  const shown = completion.values.length
  if (completion.total !== undefined && completion.total > shown) return `${shown} of ${completion.total} matches shown`
  return completion.hasMore === true ? `${shown} matches shown, the server has more` : undefined
}

export const command = Command.make(
  "complete",
  {
    words: Argument.String("url|ref|argument=partial|key=value").pipe(
      Argument.withDescription(
        "[url] <prompt-name|uri-template> <argument>=[partial] [key=value …]; a stdio server's command goes after --"
      ),
      Argument.variadic()
    ),
    timeout: Session.timeoutFlag("30s", "Timeout of the request"),
    connectTimeout: Session.connectTimeoutFlag,
    protocol: Session.protocolFlag,
    connection: ServerFlags.flags
  },
  ({ connection, connectTimeout, protocol, timeout, words }) =>
    Output.run(Effect.scoped(Effect.gen(function*() {
      const resolved = yield* ServerFlags.resolveOperands(connection, words)
      const params = yield* buildParams(resolved.rest)
      const session = yield* Session.openResolved(resolved, { timeout, connectTimeout, protocol })
      const result = yield* session.client.complete(params)
      if (yield* Output.Json) return yield* Output.json(result)
      if (result.completion.values.length > 0) yield* Output.line(result.completion.values.join("\n"))
      const more = remainder(result.completion)
      if (more !== undefined) yield* Output.note(`(${more})`)
    })))
).pipe(
  Command.withDescription(
    "Ask for completions of a prompt's or resource template's argument (completion/complete) and print them, one a line"
  ),
  Command.withExamples([
    { command: "effect-mcp-transport complete http://127.0.0.1:8421/mcp greet name=A", description: "A prompt's argument" },
    { command: "effect-mcp-transport complete 'users://{id}/posts/{post}' post=1 id=7 -- node server.js", description: "A template's argument, with another already given" }
  ])
)
