/**
 * `--args` (`-a`): a command's arguments as one JSON object, which the
 * command's key=value words are then laid over (`call`, `prompt`).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Flag } from "effect/cli"
import * as Output from "./Output.ts"

/** The flag; `description` says what the object holds for this command. */
export const flag = (description: string) =>
  Flag.String("args").pipe(
    Flag.withAlias("a"),
    Flag.withDescription(description),
    Flag.optional
  )

/** The object `--args` gives (none when absent); anything but a JSON object is a usage error. */
export const parse = (argsJson: Option.Option<string>): Effect.Effect<Record<string, unknown>, Output.UsageError> =>
  Effect.gen(function*() {
    if (Option.isNone(argsJson)) return {}
    let parsed: unknown
    try {
      parsed = JSON.parse(argsJson.value)
    } catch (e) {
      return yield* new Output.UsageError({ message: `--args is not valid JSON: ${(e as Error).message}` })
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      return yield* new Output.UsageError({ message: "--args must be a JSON object" })
    }
    return parsed as Record<string, unknown>
  })
