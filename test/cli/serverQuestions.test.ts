/**
 * How `call` reads a form elicitation's fields and the answers typed for
 * them (ServerQuestions), and what it answers from `--answer` values alone:
 * on the values themselves (the terminal runs are in protocol.test.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { fieldsOf, InputRequired, make, parseAnswer } from "../../src/cli/ServerQuestions.ts"

const schema = {
  type: "object",
  properties: {
    name: { type: "string", title: "Full name" },
    age: { type: "integer", default: 30 },
    ratio: { type: "number" },
    ok: { type: "boolean" },
    plain: { type: "string", enum: ["a", "b"], enumNames: ["Alpha", "Beta"] },
    titled: { type: "string", oneOf: [{ const: "x", title: "Ex" }] },
    many: { type: "array", items: { anyOf: [{ const: "r", title: "Red" }, { const: "g", title: "Green" }] } },
    odd: { type: "object" }
  },
  required: ["name", "ok"]
}

describe("ServerQuestions", () => {
  it("reads every field type of a form, in order, with titles, defaults and required", () => {
    const fields = fieldsOf(schema)
    expect(fields.map((f) => [f.name, f.kind, f.required])).toEqual([
      ["name", "string", true],
      ["age", "integer", false],
      ["ratio", "number", false],
      ["ok", "boolean", true],
      ["plain", "enum", false],
      ["titled", "enum", false],
      ["many", "enum-list", false],
      ["odd", "string", false]
    ])
    expect(fields[0]!.label).toBe("name (Full name)")
    expect(fields[1]!.default).toBe(30)
    expect(fields[4]!.options).toEqual([{ value: "a", title: "Alpha" }, { value: "b", title: "Beta" }])
    expect(fieldsOf(undefined)).toEqual([])
  })

  it("types an answer by its field, or says why it does not fit", () => {
    const [name, age, ratio, ok, plain, titled, many] = fieldsOf(schema)
    expect(parseAnswer(name!, " spaced ")).toEqual({ value: " spaced " })
    expect(parseAnswer(age!, "12")).toEqual({ value: 12 })
    expect(parseAnswer(age!, "1.5")).toEqual({ problem: "expected an integer, got \"1.5\"" })
    expect(parseAnswer(ratio!, "1.5")).toEqual({ value: 1.5 })
    expect(parseAnswer(ratio!, "")).toEqual({ problem: "expected a number, got \"\"" })
    expect(parseAnswer(ok!, "Y")).toEqual({ value: true })
    expect(parseAnswer(ok!, "false")).toEqual({ value: false })
    expect(parseAnswer(ok!, "maybe")).toEqual({ problem: "expected yes or no, got \"maybe\"" })
    expect(parseAnswer(plain!, "beta")).toEqual({ value: "b" })
    expect(parseAnswer(plain!, "c")).toEqual({ problem: "expected one of a, b, got \"c\"" })
    expect(parseAnswer(titled!, "x")).toEqual({ value: "x" })
    expect(parseAnswer(many!, "r, Green")).toEqual({ value: ["r", "g"] })
    expect(parseAnswer(many!, "r,blue")).toEqual({ problem: "expected some of r, g, got \"blue\"" })
  })

  it.effect("accepts from --answer values alone once every required field has one", () =>
    Effect.gen(function*() {
      const questions = yield* make({ answers: { name: "Ada", ok: "yes", unrelated: "1" }, interactive: false })
      const result = yield* questions.handlers.elicit!({ mode: "form", message: "Who?", requestedSchema: schema })
      expect(result).toEqual({ action: "accept", content: { name: "Ada", ok: true } })
    }))

  it.effect("without a terminal, leaves a question it cannot answer unanswered and reports it", () =>
    Effect.gen(function*() {
      const questions = yield* make({ answers: { name: "Ada" }, interactive: false })
      const pending = yield* Effect.forkChild(questions.handlers.elicit!({ mode: "form", message: "Who?", requestedSchema: schema }))
      const reported = yield* Effect.flip(questions.unanswered)
      expect(reported).toBeInstanceOf(InputRequired)
      expect(reported.message).toBe(
        "the server asks \"Who?\" (fields: ok) and stdin is not a terminal: " +
          "run the command in a terminal to answer it, or give --answer ok=…"
      )
      // No answer goes to the server: the handler waits until the call is cancelled.
      expect(pending.pollUnsafe()).toBeUndefined()
      yield* Fiber.interrupt(pending)
      expect(Exit.hasInterrupts(pending.pollUnsafe()!)).toBe(true)
    }))

  it.effect("a form with no fields cannot be accepted without a terminal", () =>
    Effect.gen(function*() {
      const questions = yield* make({ answers: {}, interactive: false })
      yield* Effect.forkChild(questions.handlers.elicit!({ mode: "form", message: "Proceed?", requestedSchema: { type: "object" } }))
      const reported = yield* Effect.flip(questions.unanswered)
      expect(reported.message).toBe(
        "the server asks \"Proceed?\" and stdin is not a terminal: run the command in a terminal to answer it"
      )
    }))
})
