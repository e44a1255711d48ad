/**
 * `--header 'Name: value'` (repeatable) and `--bearer TOKEN`: extra headers
 * on every HTTP request to the server, for servers behind a static token or
 * an API gateway. They apply to URL targets only.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Flag } from "effect/cli"
import * as Output from "./Output.ts"
import type * as Target from "./Target.ts"

export const headerFlag = Flag.String("header").pipe(
  Flag.withAlias("H"),
  Flag.withDescription("An HTTP header sent with every request to a URL server, as 'Name: value'; repeatable"),
  Flag.withMetavar("Name: value"),
  Flag.atLeast(0)
)

export const bearerFlag = Flag.String("bearer").pipe(
  Flag.withDescription("Send 'Authorization: Bearer TOKEN' with every request to a URL server"),
  Flag.withMetavar("TOKEN"),
  Flag.optional
)

const NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/** The headers the flags give, lower-cased names; a usage error for a malformed one or a stdio target. */
export const resolve = (
  target: Target.Target,
  headers: ReadonlyArray<string>,
  bearer: Option.Option<string>
): Effect.Effect<Record<string, string> | undefined, Output.UsageError> =>
  Effect.gen(function*() {
    if (headers.length === 0 && Option.isNone(bearer)) return undefined
    if (target._tag !== "Url") {
      return yield* new Output.UsageError({ message: "--header and --bearer apply to URL servers only" })
    }
    const out: Record<string, string> = {}
    for (const header of headers) {
      const colon = header.indexOf(":")
      const name = colon === -1 ? "" : header.slice(0, colon).trim()
      const value = colon === -1 ? "" : header.slice(colon + 1).trim()
      // A value is never echoed: it may be a credential.
      if (!NAME.test(name)) {
        return yield* new Output.UsageError({ message: `--header expects 'Name: value'; got a header without a valid name` })
      }
      if (/[\r\n\0]/.test(value)) {
        return yield* new Output.UsageError({ message: `--header ${name}: the value contains a line break` })
      }
      out[name.toLowerCase()] = value
    }
    if (Option.isSome(bearer)) {
      const token = bearer.value.trim()
      if (token === "" || /[\s\0]/.test(token)) {
        return yield* new Output.UsageError({ message: "--bearer expects one token without spaces" })
      }
      out.authorization = `Bearer ${token}`
    }
    return out
  })
