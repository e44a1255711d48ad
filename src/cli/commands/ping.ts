/**
 * `effect-mcp-transport ping <url> | -- <command…>`: N pings over one session, then a
 * round-trip summary. A failed ping is counted and the run goes on; the exit
 * code is that of the first failure (0 when every ping succeeded).
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Argument, Command, Flag } from "effect/cli"
import * as Output from "../Output.ts"
import * as ServerFlags from "../ServerFlags.ts"
import * as Session from "../Session.ts"
import * as Target from "../Target.ts"

export interface PingSummary {
  readonly count: number
  readonly ok: number
  readonly failed: number
  /** Round trips of the successful pings, in order, in milliseconds. */
  readonly samples: ReadonlyArray<number>
  readonly minMs?: number | undefined
  readonly medianMs?: number | undefined
  readonly p99Ms?: number | undefined
  readonly maxMs?: number | undefined
  readonly errors: ReadonlyArray<string>
}

/** Nearest-rank percentile of sorted samples. */
const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!

const median = (sorted: ReadonlyArray<number>): number => {
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000

export const summarize = (count: number, samples: ReadonlyArray<number>, errors: ReadonlyArray<string>): PingSummary => {
  const sorted = [...samples].sort((a, b) => a - b)
  const stats = sorted.length === 0 ? {} : {
    minMs: round(sorted[0]!),
    medianMs: round(median(sorted)),
    p99Ms: round(percentile(sorted, 99)),
    maxMs: round(sorted.at(-1)!)
  }
  return { count, ok: samples.length, failed: errors.length, samples: samples.map(round), ...stats, errors }
}

const fmt = (ms: number | undefined): string => (ms === undefined ? "-" : ms.toFixed(3))

export const command = Command.make(
  "ping",
  {
    url: Argument.String("url").pipe(
      Argument.withDescription("Streamable HTTP (or legacy SSE) URL; or give the server's command after --"),
      Argument.optional
    ),
    count: Flag.Int("count").pipe(
      Flag.withAlias("c"),
      Flag.withDescription("How many pings. Default 5"),
      Flag.withDefault(5),
      Flag.filter((n) => n >= 1, (n) => `expected a count of at least 1, got ${n}`)
    ),
    interval: Flag.Int("interval").pipe(
      Flag.withAlias("i"),
      Flag.withDescription("Milliseconds between pings. Default 200"),
      Flag.withDefault(200),
      Flag.filter((n) => n >= 0, (n) => `expected a non-negative interval, got ${n}`)
    ),
    timeout: Session.timeoutFlag("10s", "Timeout of each ping"),
    connectTimeout: Session.connectTimeoutFlag,
    protocol: Session.protocolFlag,
    connection: ServerFlags.flags
  },
  ({ connection, connectTimeout, count, interval, protocol, timeout, url }) =>
    Output.run(Effect.scoped(Effect.gen(function*() {
      const json = yield* Output.Json
      const resolved = yield* ServerFlags.resolve(connection, Option.toArray(url))
      const session = yield* Session.openResolved(resolved, { timeout, connectTimeout, protocol })
      const samples: Array<number> = []
      const errors: Array<string> = []
      let firstFailure: unknown = undefined
      for (let i = 1; i <= count; i++) {
        if (i > 1 && interval > 0) yield* Effect.sleep(Duration.millis(interval))
        const started = performance.now()
        const result = yield* Effect.result(session.client.ping({ timeout }))
        const elapsed = performance.now() - started
        if (result._tag === "Success") {
          samples.push(elapsed)
          if (!json) yield* Output.line(`ping ${i}: ${elapsed.toFixed(3)} ms`)
        } else {
          firstFailure ??= result.failure
          errors.push(result.failure.message)
          if (!json) yield* Output.line(`ping ${i}: failed: ${result.failure.message.split("\n")[0]}`)
        }
      }
      const summary = summarize(count, samples, errors)
      if (json) {
        yield* Output.json({ target: Target.describe(resolved.target), transport: session.transport, ...summary })
      } else {
        yield* Output.line(
          `${summary.ok}/${count} ok, ${summary.failed} failed; ` +
            `min ${fmt(summary.minMs)} / median ${fmt(summary.medianMs)} / p99 ${fmt(summary.p99Ms)} / max ${fmt(summary.maxMs)} ms`
        )
      }
      if (firstFailure !== undefined) return yield* new Output.Exit({ code: Output.exitCodeOf(firstFailure) })
    })))
).pipe(
  Command.withDescription("Measure round trips: N pings, then min / median / p99 / max in milliseconds"),
  Command.withExamples([
    { command: "effect-mcp-transport ping --count 20 --interval 0 -- node server.js", description: "20 back-to-back pings over stdio" }
  ])
)
