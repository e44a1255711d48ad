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

/** A flag taking a duration, `defaultValue` when it is not given. */
export const flag = (name: string, defaultValue: string, description: string) =>
  Flag.String(name).pipe(
    Flag.withDescription(`${description} (e.g. 90s, 5m). Default ${defaultValue}`),
    Flag.withDefault(defaultValue),
    Flag.filterMap(parse, (text) => `expected a duration such as 90s or 5m, got "${text}"`)
  )
