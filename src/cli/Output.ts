/**
 * What every `effect-mcp-transport` command shares about output: the global `--json`
 * and `--verbose` flags, stdout/stderr printing, one-line error messages
 * from our typed errors, and the exit-code table.
 *
 * A command handler wraps its body in `Output.run`: failures are printed as
 * one line on stderr (the cause chain, stderr tails and stacks only with
 * `--verbose`) and become an `Exit` carrying the exit code, which the
 * runtime turns into the process's exit status without printing it again.
 * Interruption (Ctrl-C) is left alone so the runtime exits with 130 after
 * the scopes have closed.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as References from "effect/References"
import { CliError, CliOutput, Flag, GlobalFlag } from "effect/cli"
import * as Runtime from "effect/Runtime"
import { isAuthReason, reasonOf } from "../McpErrorGroup.ts"

export const PROGRAM = "effect-mcp-transport"

// ---------------------------------------------------------------------------
// Global flags

/** `--json`: machine-readable stdout (one JSON document per command). */
export const Json = GlobalFlag.Setting("json")({
  flag: Flag.Boolean("json").pipe(
    Flag.withDescription("Print one JSON document on stdout instead of human-readable text"),
    Flag.withDefault(false)
  )
})

/** `--verbose`: debug logs (server stderr, transport choices) and full error details on stderr. */
export const Verbose = GlobalFlag.Setting("verbose")({
  flag: Flag.Boolean("verbose").pipe(
    Flag.withDescription("Log transport details and the server's stderr; print full error details"),
    Flag.withDefault(false)
  )
})

/** The levels of `logging/setLevel`, least severe first (RFC 5424, as MCP names them). */
export const LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] as const
export type LogLevel = typeof LOG_LEVELS[number]

/**
 * `--log-level`: asks the server for its log messages from this level up
 * (`logging/setLevel` in the handshake era, the `logLevel` of every request in
 * the stateless era) and prints them on stderr. It replaces effect/cli's
 * built-in flag of the same name, whose levels are not the protocol's; this
 * program's own logs follow `--verbose`.
 */
export const LogLevel = GlobalFlag.Setting("log-level")({
  flag: Flag.Literals("log-level", LOG_LEVELS).pipe(
    Flag.withDescription(
      "Ask the server for its log messages from this level up and print them on stderr"
    ),
    Flag.withMetavar("<debug|info|notice|warning|error|critical|alert|emergency>"),
    Flag.optional
  )
})

/** `--output FILE`: the command's result goes to FILE (replaced) instead of stdout. */
export const OutputFile = GlobalFlag.Setting("output")({
  flag: Flag.String("output").pipe(
    Flag.withAlias("o"),
    Flag.withDescription("Write the command's result to this file (replaced) instead of stdout"),
    Flag.withMetavar("FILE"),
    Flag.optional
  )
})

/** Give these to the root command with `Command.withGlobalFlags`. */
export const globalFlags = [Json, Verbose, LogLevel, OutputFile] as const

/** effect/cli's built-in global flags but its `--log-level`, which `LogLevel` replaces. */
export const builtIns = GlobalFlag.BuiltIns.filter((flag) => flag !== GlobalFlag.LogLevel)

// ---------------------------------------------------------------------------
// Exit codes

export const ExitCode = {
  /** Success. */
  Ok: 0,
  /** The tool answered `isError: true`, or another failure not listed below. */
  Failure: 1,
  /** Bad flags or arguments, or no target. */
  Usage: 2,
  /** Could not connect or complete the handshake, or the connection broke. */
  Connect: 3,
  /** The server answered with a JSON-RPC error (or the task it ran the call as failed or was cancelled). */
  Rpc: 4,
  /** A request (or the handshake) timed out. */
  Timeout: 5,
  /** The server asked a question (elicitation) that could not be answered: stdin is not a terminal and `--answer` did not cover it. */
  InputRequired: 6,
  /** OAuth failed: the sign-in was refused or could not be had, or the token store is unusable. */
  Auth: 7,
  /** Interrupted (SIGINT / SIGTERM), after teardown. */
  Interrupted: 130
} as const

/**
 * Ends the program with `code`. Its message has already been printed (or
 * there is none), so the runtime does not report it.
 */
export class Exit extends Data.TaggedError("CliExit")<{ readonly code: number }> {
  override get [Runtime.errorExitCode](): number {
    return this.code
  }
  override get [Runtime.errorReported](): boolean {
    return false
  }
}

/** A command line that cannot work (bad `--args`, malformed key=value, …). */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

/** The connect phase failed: spawning, HTTP, or the handshake. */
export class ConnectError extends Data.TaggedError("ConnectError")<{
  readonly target: string
  readonly cause: unknown
  /** What the user might do about it, appended to the message. */
  readonly hint?: string | undefined
}> {
  override get message(): string {
    const hint = this.hint === undefined ? "" : ` (${this.hint})`
    return `cannot connect to ${this.target}: ${messageOf(this.cause)}${hint}`
  }
}

const tagOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
    ? error._tag
    : undefined

const USAGE = new Set([
  "UsageError",
  "TargetError",
  "ShowHelp",
  "UnrecognizedOption",
  "DuplicateOption",
  "MissingOption",
  "MissingArgument",
  "UnexpectedArgument",
  "InvalidValue",
  "UnknownSubcommand",
  "ValidationError"
])
const CONNECTION = new Set([
  "SpawnError",
  "TransportClosed",
  "HttpError",
  "RedirectRefused",
  "SessionExpired",
  "NoResponse",
  "UnsupportedProtocolVersion"
])

/** The exit code for a failure (see `ExitCode`); a group of `McpErrorGroup` is judged by its reason. */
export const exitCodeOf = (failure: unknown): number => {
  const error = reasonOf(failure)
  const tag = tagOf(error)
  if (tag === undefined) return ExitCode.Failure
  if (error instanceof Exit) return error.code
  if (error instanceof ConnectError) {
    const inner = exitCodeOf(error.cause)
    return inner === ExitCode.Timeout || inner === ExitCode.Auth ? inner : ExitCode.Connect
  }
  if (USAGE.has(tag)) return ExitCode.Usage
  if (CONNECTION.has(tag)) return ExitCode.Connect
  if (tag === "RpcError" || tag === "TaskCancelled") return ExitCode.Rpc
  if (tag === "RequestTimeout" || tag === "TimeoutError" || tag === "LoginTimeout") return ExitCode.Timeout
  // Every authorization failure the client has, and the CLI's own loopback listener.
  if (isAuthReason(tag) || tag === "LoopbackUnavailable") return ExitCode.Auth
  if (tag === "InputRequired") return ExitCode.InputRequired
  return ExitCode.Failure
}

// ---------------------------------------------------------------------------
// Error text

const oneLine = (text: string, max = 400): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length <= max ? flat : `${flat.slice(0, max)}…`
}

const messageOf = (failure: unknown): string => {
  if (failure instanceof ConnectError) return failure.message
  const error = reasonOf(failure)
  const tag = tagOf(error)
  if (tag === "TransportClosed") {
    // The first line says why; the server's last stderr line usually says what went wrong.
    const e = error as { message: string; stderrTail?: ReadonlyArray<string> | undefined }
    const head = e.message.split("\n")[0]!
    const last = e.stderrTail?.filter((l) => l.trim() !== "").at(-1)
    return last === undefined ? head : `${head}; server stderr: ${oneLine(last, 200)}`
  }
  if (tag === "ShowHelp") {
    const errors = (error as CliError.ShowHelp).errors
    return errors.length === 0 ? "a subcommand is required" : errors.map((e) => e.message.split("\n")[0]).join("; ")
  }
  if (error instanceof Error) return oneLine(error.message)
  if (typeof error === "string") return oneLine(error)
  return oneLine(String(error))
}

/** Everything `--verbose` adds: the full message, data, stderr tail, causes and stacks. */
const details = (error: unknown): Array<string> => {
  const lines: Array<string> = []
  let current: unknown = reasonOf(error)
  for (let depth = 0; current !== undefined && current !== null && depth < 6; depth++) {
    if (current instanceof Error) {
      lines.push(`${tagOf(current) ?? current.name}: ${current.message}`)
      const data = (current as { data?: unknown }).data
      if (data !== undefined) lines.push(`  data: ${JSON.stringify(data)}`)
      if (current.stack !== undefined) lines.push(...current.stack.split("\n").slice(1))
    } else {
      lines.push(typeof current === "object" ? JSON.stringify(current) : String(current))
    }
    current = typeof current === "object" && current !== null && "cause" in current ? current.cause : undefined
  }
  return lines
}

/** The one line printed for a failure. */
export const describe = (error: unknown): string => `${PROGRAM}: ${messageOf(error)}`

/** Prints a failure on stderr: one line, or the full details with `verbose`. */
export const printError = (error: unknown, verbose: boolean): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* Console.error(describe(error))
    if (verbose) {
      for (const line of details(error instanceof ConnectError ? error.cause : error)) yield* Console.error(line)
    }
  })

// ---------------------------------------------------------------------------
// Running a command body

/**
 * Runs a command's body: sets the log level (`Warn`, or `Debug` with
 * `--verbose`), sends stdout to `--output`'s file, prints any
 * failure or defect as one line on stderr and turns it into `Exit` with its
 * exit code. Interruption passes through untouched.
 */
export const run = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exit, R | GlobalFlag.Setting.Identifier<"verbose" | "output">> =>
  Effect.gen(function*() {
    const verbose = yield* Verbose
    const file = yield* OutputFile
    return yield* (Option.isSome(file)
      ? Effect.flatMap(toFile(file.value), (sink) => Effect.provideService(effect, ResultSink, sink))
      : effect).pipe(
      Effect.provideService(
        References.MinimumLogLevel,
        verbose ? "Debug" : "Warn"
      ),
      Effect.catchCause((cause): Effect.Effect<never, Exit> => {
        if (Cause.hasInterrupts(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        const error = Cause.squash(cause)
        if (error instanceof Exit) return Effect.fail(error)
        const isDefect = !Cause.hasFails(cause)
        return Effect.andThen(
          isDefect
            ? Effect.andThen(
              Console.error(`${PROGRAM}: internal error: ${messageOf(error)}`),
              verbose ? Console.error(Cause.pretty(cause)) : Effect.void
            )
            : printError(error, verbose),
          Effect.fail(new Exit({ code: isDefect ? ExitCode.Failure : exitCodeOf(error) }))
        )
      })
    )
  })

/**
 * Wraps the connect phase so its failures read "cannot connect to …" and
 * exit 3 (5 on timeout); `hint` may add advice for a failure it recognises.
 */
export const connecting = (target: string, hint?: (cause: unknown) => string | undefined) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, ConnectError, R> =>
  Effect.mapError(effect, (cause) => new ConnectError({ target, cause, hint: hint?.(cause) }))

// ---------------------------------------------------------------------------
// Printing

/** Where the command's result goes: stdout, or the `--output` file (`run` provides it). */
class ResultSink extends Context.Reference<(text: string) => void>("effect-mcp-transport/cli/Output/ResultSink", {
  defaultValue: () => (text) => void process.stdout.write(text)
}) {}

/**
 * Writes to `path`; a directory that does not exist is a usage error. The file is opened (created
 * or emptied) at the first write, so a command that fails before its result leaves an existing file alone.
 */
const toFile = (path: string): Effect.Effect<(text: string) => void, UsageError> =>
  Effect.suspend(() => {
    const dir = nodePath.dirname(nodePath.resolve(path))
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
      return Effect.fail(new UsageError({ message: `--output ${path}: the directory ${dir} does not exist` }))
    }
    let fd: number | undefined
    return Effect.succeed((text: string) => {
      fd ??= fs.openSync(path, "w")
      fs.writeSync(fd, text)
    })
  })

const write = (text: string): Effect.Effect<void> => Effect.flatMap(ResultSink, (sink) => Effect.sync(() => sink(text)))

/** A line of the result (stdout, or the `--output` file). */
export const line = (text: string): Effect.Effect<void> => write(`${text}\n`)

/** One JSON document as the result (stdout, or the `--output` file). */
export const json = (value: unknown): Effect.Effect<void> => write(`${JSON.stringify(value, null, 2)}\n`)

/** The result: as JSON with `--json`, otherwise as `render` words it (stdout, or the `--output` file). */
export const result = <A>(
  value: A,
  render: (value: A) => string
): Effect.Effect<void, never, GlobalFlag.Setting.Identifier<"json">> =>
  Effect.flatMap(Json, (asJson) => asJson ? json(value) : line(render(value)))

/** A line on stderr (status, progress, warnings). */
export const note = (text: string): Effect.Effect<void> => Effect.sync(() => void process.stderr.write(`${text}\n`))

// ---------------------------------------------------------------------------
// Usage errors found by effect/cli

/**
 * Help goes to stdout as effect/cli prints it; a bad invocation prints one
 * line per problem on stderr instead of the whole help page.
 */
export const presenterLayer: Layer.Layer<never> = CliOutput.layerPresenter({
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Effect.forEach(
        event.errors,
        (e) => Console.error(`${PROGRAM}: ${e.message.split("\n")[0]} (see ${event.commandPath.join(" ")} --help)`),
        { discard: true }
      )
      : CliOutput.defaultPresenter.present(event)
})

/**
 * The last stop for failures that escaped the commands (effect/cli's parse
 * errors, which the presenter already printed): exit 2 for usage errors,
 * and one line for anything else.
 */
export const finish = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exit, R> =>
  Effect.catch(effect, (error): Effect.Effect<never, Exit> => {
    if (error instanceof Exit) return Effect.fail(error)
    if (CliError.isCliError(error)) {
      // `effect-mcp-transport` alone shows the help page (a ShowHelp without errors).
      const code = error._tag === "ShowHelp" && error.errors.length === 0 ? ExitCode.Usage : exitCodeOf(error)
      const printed = error._tag === "ShowHelp"
      return Effect.andThen(printed ? Effect.void : Console.error(describe(error)), Effect.fail(new Exit({ code })))
    }
    return Effect.andThen(Console.error(describe(error)), Effect.fail(new Exit({ code: exitCodeOf(error) })))
  })
