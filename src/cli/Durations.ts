/**
 * Durations as the flags take them: `500ms`, `10s`, `2m`, or a bare number of
 * milliseconds.
 */
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import { Flag } from "effect/cli"

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m)?$/

/** `500`, `500ms`, `2s`, `1m` → a duration (a bare number is milliseconds). */
export const parse = (text: string): Option.Option<Duration.Duration> => {
  const m = DURATION.exec(text.trim())
  if (m === null) return Option.none()
  const n = Number(m[1])
  switch (m[2]) {
    case "s":
      return Option.some(Duration.seconds(n))
    case "m":
      return Option.some(Duration.minutes(n))
    default:
      return Option.some(Duration.millis(n))
  }
}

/** The examples a duration flag shows: in its help after the description (none without `help`), and in its error. */
export interface Examples {
  readonly help?: string | undefined
  readonly error: string
}

/** For durations of seconds to minutes. */
const MINUTES: Examples = { help: "90s, 5m", error: "90s or 5m" }

/** A flag taking a duration, `defaultValue` when it is not given. */
export const flag = (name: string, defaultValue: string, description: string, examples: Examples = MINUTES) =>
  Flag.String(name).pipe(
    Flag.withDescription(`${description}${examples.help === undefined ? "" : ` (e.g. ${examples.help})`}. Default ${defaultValue}`),
    Flag.withDefault(defaultValue),
    Flag.filterMap(parse, (text) => `expected a duration such as ${examples.error}, got "${text}"`)
  )
