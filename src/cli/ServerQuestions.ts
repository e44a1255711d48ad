/**
 * Answers the questions a server asks during a call (form elicitation, in
 * either era: a request of its own in the handshake era, an `input_required`
 * round in the stateless one) from the `--answer field=value` flags and, when
 * stdin is a terminal, by prompting for each field on stderr.
 *
 * A question that cannot be answered (no terminal, and the flags do not
 * cover it) is not answered at all: the handler reports it on `unanswered`
 * and waits, so the command fails the call with `InputRequired` (exit 6)
 * instead of sending the server a made-up answer.
 */
import * as readline from "node:readline"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Semaphore from "effect/Semaphore"
import type { ElicitParams, ElicitResult, ServerRequestHandlers } from "../client/McpClient.ts"
import * as Output from "./Output.ts"
import { isRecord } from "../internal/Records.ts"

// ---------------------------------------------------------------------------
// Fields of a form

/** One field of a form elicitation's `requestedSchema`, as the terminal asks for it. */
export interface Field {
  readonly name: string
  readonly label: string
  readonly kind: "string" | "number" | "integer" | "boolean" | "enum" | "enum-list"
  /** For `enum` and `enum-list`: the values, and the titles a user may type instead. */
  readonly options: ReadonlyArray<{ readonly value: string; readonly title?: string | undefined }>
  readonly required: boolean
  readonly default?: unknown
}

const optionsOf = (schema: Record<string, unknown>): Field["options"] | undefined => {
  if (Array.isArray(schema.enum)) {
    const titles = Array.isArray(schema.enumNames) ? schema.enumNames : []
    return schema.enum.map((value, i) => ({
      value: String(value),
      title: typeof titles[i] === "string" ? titles[i] : undefined
    }))
  }
  const titled = Array.isArray(schema.oneOf) ? schema.oneOf : Array.isArray(schema.anyOf) ? schema.anyOf : undefined
  if (titled === undefined) return undefined
  return titled.filter(isRecord).filter((o) => o.const !== undefined).map((o) => ({
    value: String(o.const),
    title: typeof o.title === "string" ? o.title : undefined
  }))
}

/** The fields of a requested schema, in its order; a type the spec does not allow for forms is asked as a string. */
export const fieldsOf = (requestedSchema: Readonly<Record<string, unknown>> | undefined): ReadonlyArray<Field> => {
  const properties = isRecord(requestedSchema?.properties) ? requestedSchema.properties : {}
  const required = new Set(Array.isArray(requestedSchema?.required) ? requestedSchema.required.map(String) : [])
  return Object.entries(properties).map(([name, raw]): Field => {
    const schema = isRecord(raw) ? raw : {}
    const title = typeof schema.title === "string" ? schema.title : undefined
    const base = { name, label: title === undefined || title === name ? name : `${name} (${title})`, required: required.has(name) }
    const withDefault = schema.default === undefined ? base : { ...base, default: schema.default }
    const items = isRecord(schema.items) ? optionsOf(schema.items) : undefined
    if (schema.type === "array" && items !== undefined) return { ...withDefault, kind: "enum-list", options: items }
    const options = optionsOf(schema)
    if (options !== undefined) return { ...withDefault, kind: "enum", options }
    const kind = schema.type === "number" || schema.type === "integer" || schema.type === "boolean" ? schema.type : "string"
    return { ...withDefault, kind, options: [] }
  })
}

type Value = string | number | boolean | ReadonlyArray<string>

const optionValue = (field: Field, text: string): string | undefined =>
  field.options.find((o) => o.value === text)?.value ??
    field.options.find((o) => o.title !== undefined && o.title.toLowerCase() === text.toLowerCase())?.value

/** What a typed answer means for the field, or why it does not fit. */
export const parseAnswer = (field: Field, text: string): { readonly value: Value } | { readonly problem: string } => {
  const t = text.trim()
  switch (field.kind) {
    case "string":
      return { value: text }
    case "number":
    case "integer": {
      const n = t === "" ? Number.NaN : Number(t)
      if (!Number.isFinite(n)) return { problem: `expected a number, got "${text}"` }
      if (field.kind === "integer" && !Number.isInteger(n)) return { problem: `expected an integer, got "${text}"` }
      return { value: n }
    }
    case "boolean": {
      const lower = t.toLowerCase()
      if (["true", "yes", "y"].includes(lower)) return { value: true }
      if (["false", "no", "n"].includes(lower)) return { value: false }
      return { problem: `expected yes or no, got "${text}"` }
    }
    case "enum": {
      const value = optionValue(field, t)
      return value === undefined ? { problem: `expected one of ${hint(field)}, got "${text}"` } : { value }
    }
    case "enum-list": {
      const values: Array<string> = []
      for (const part of t.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
        const value = optionValue(field, part)
        if (value === undefined) return { problem: `expected some of ${hint(field)}, got "${part}"` }
        values.push(value)
      }
      return { value: values }
    }
  }
}

const hint = (field: Field): string => {
  switch (field.kind) {
    case "boolean":
      return "yes/no"
    case "enum":
    case "enum-list":
      return field.options.map((o) => o.value).join(", ")
    default:
      return field.kind
  }
}

// ---------------------------------------------------------------------------
// The failure

/**
 * The server asked something the command could not answer: stdin is not a
 * terminal and `--answer` did not give the fields it needs.
 */
export class InputRequired extends Data.TaggedError("InputRequired")<{
  readonly question: string
  /** The fields it takes to answer: the required ones without an answer, or (none required) all of them. */
  readonly missing: ReadonlyArray<string>
}> {
  override get message(): string {
    const fields = this.missing.length === 0 ? "" : ` (fields: ${this.missing.join(", ")})`
    const flags = this.missing.map((name) => `--answer ${name}=…`).join(" ")
    const how = this.missing.length === 0
      ? "run the command in a terminal to answer it"
      : `run the command in a terminal to answer it, or give ${flags}`
    return `the server asks "${this.question}"${fields} and stdin is not a terminal: ${how}`
  }
}

// ---------------------------------------------------------------------------
// The terminal

/** One line from the terminal (`undefined` on end of input: Ctrl-D). Ctrl-C interrupts the program as usual. */
const ask = (prompt: string): Effect.Effect<string | undefined> =>
  Effect.callback<string | undefined>((resume) => {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true })
    let settled = false
    const settle = (answer: string | undefined) => {
      if (settled) return
      settled = true
      rl.close()
      resume(Effect.succeed(answer))
    }
    // In raw mode Ctrl-C reaches readline, not the process: hand it on, so the call is cancelled as usual.
    // Closing would read as Ctrl-D (decline): the question stays unanswered until the call is cancelled.
    rl.on("SIGINT", () => {
      settled = true
      rl.close()
      process.kill(process.pid, "SIGINT")
    })
    rl.on("close", () => settle(undefined))
    rl.question(prompt, (answer) => settle(answer))
    return Effect.sync(() => {
      settled = true
      rl.close()
    })
  })

const promptFor = (field: Field): string => {
  const star = field.required ? "*" : ""
  const dflt = field.default === undefined ? "" : `, default ${JSON.stringify(field.default)}`
  return `  ${field.label}${star} [${hint(field)}${dflt}]: `
}

/** Asks for each field until it fits; `undefined` when the user declined (Ctrl-D). */
const promptFields = (
  params: ElicitParams,
  fields: ReadonlyArray<Field>,
  given: Record<string, Value>
): Effect.Effect<Record<string, Value> | undefined> =>
  Effect.gen(function*() {
    yield* Output.note(`The server asks: ${params.message}`)
    if (fields.length === 0) {
      const answer = yield* ask("  Accept? [y/N]: ")
      return answer !== undefined && ["y", "yes"].includes(answer.trim().toLowerCase()) ? given : undefined
    }
    yield* Output.note("  (* required; an empty line skips an optional field; Ctrl-D declines)")
    const content = { ...given }
    for (const field of fields) {
      if (content[field.name] !== undefined) continue
      for (;;) {
        const answer = yield* ask(promptFor(field))
        if (answer === undefined) return undefined
        if (answer.trim() === "") {
          if (field.default !== undefined) {
            content[field.name] = field.default as Value
            break
          }
          if (!field.required) break
          yield* Output.note(`  ${field.name} is required`)
          continue
        }
        const parsed = parseAnswer(field, answer)
        if ("value" in parsed) {
          content[field.name] = parsed.value
          break
        }
        yield* Output.note(`  ${parsed.problem}`)
      }
    }
    return content
  })

// ---------------------------------------------------------------------------
// The handler

export interface Options {
  /** `--answer` values by field name. */
  readonly answers: Readonly<Record<string, string>>
  /** Whether the terminal may be asked (stdin is a TTY). */
  readonly interactive: boolean
}

export interface ServerQuestions {
  readonly handlers: ServerRequestHandlers
  /** Fails once a question could not be answered; race the call with it. */
  readonly unanswered: Effect.Effect<never, InputRequired | Output.UsageError>
}

/** The handlers for `call`: form elicitation from `--answer` values, then the terminal. */
export const make = (options: Options): Effect.Effect<ServerQuestions> =>
  Effect.gen(function*() {
    const failed = yield* Deferred.make<never, InputRequired | Output.UsageError>()
    // One question at a time on the terminal, however many the server sends at once.
    const terminal = yield* Semaphore.make(1)
    /** Reports why the question cannot be answered, and leaves it unanswered. */
    const giveUp = (error: InputRequired | Output.UsageError): Effect.Effect<never> =>
      Effect.andThen(Deferred.fail(failed, error), Effect.never)

    const elicit = (params: ElicitParams): Effect.Effect<ElicitResult> =>
      Effect.gen(function*() {
        const fields = fieldsOf(params.requestedSchema)
        const given: Record<string, Value> = {}
        for (const field of fields) {
          const text = options.answers[field.name]
          if (text === undefined) continue
          const parsed = parseAnswer(field, text)
          if ("problem" in parsed) {
            return yield* giveUp(new Output.UsageError({ message: `--answer ${field.name}: ${parsed.problem}` }))
          }
          given[field.name] = parsed.value
        }
        const missing = fields.filter((f) => given[f.name] === undefined)
        const covered = Object.keys(given).length > 0 && missing.every((f) => !f.required)
        if (covered) return { action: "accept", content: given }
        if (!options.interactive) {
          // The required fields are what it takes; a form without any needs at least one of its fields.
          const needed = missing.some((f) => f.required) ? missing.filter((f) => f.required) : missing
          return yield* giveUp(new InputRequired({ question: params.message, missing: needed.map((f) => f.name) }))
        }
        const content = yield* terminal.withPermit(promptFields(params, fields, given))
        return content === undefined ? { action: "decline" } : { action: "accept", content }
      })

    return { handlers: { elicit }, unanswered: Deferred.await(failed) }
  })
