import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Schema } from "effect"
import * as RequestState from "../../src/server/internal/RequestState.ts"

const keyOf = (text: string) => new TextEncoder().encode(text.padEnd(32, "."))
const config: RequestState.Config = { keys: [keyOf("a shared secret")], ttlMs: 60_000, maxBytes: 262_144 }
const NOW = 1_700_000_000_000

const bindingOf = (name: string, args: unknown): RequestState.Binding => ({
  method: "tools/call",
  name,
  digest: RequestState.digestParams({ name, arguments: args }),
  principal: undefined
})

const json = Arbitrary.schema(Schema.Json)
const answersArb = Arbitrary.schema(Schema.Record(Schema.String, Schema.Json))
const int = (minimum: number, maximum: number) =>
  Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum }))).pipe(Arbitrary.map((n) => n + 0))
// Base64url characters and a few that are not: any replacement must be refused.
const REPLACEMENTS = "AZaz09-_.=+/ \u00e9"

const stateOf = (answers: Record<string, unknown>): RequestState.State => ({ answers, asked: ["ask-0", "ask-1"] })

describe("RequestState", () => {
  it.effect.prop("a state issued for a request reads back unchanged for that request", {
    answers: answersArb,
    args: json,
    name: Arbitrary.schema(Schema.String)
  }, ({ answers, args, name }) =>
    Effect.sync(() => {
      const binding = bindingOf(name, args)
      const token = RequestState.issue(config, binding, stateOf(answers), NOW)!
      const read = RequestState.verify(config, binding, token, NOW + 59_999)
      expect(read).toEqual({ _tag: "Valid", state: JSON.parse(JSON.stringify(stateOf(answers))) })
    }))

  it.effect.prop("any single changed character is refused", {
    answers: answersArb,
    at: int(0, 1_000_000),
    with: int(0, REPLACEMENTS.length - 1)
  }, ({ answers, at, with: w }) =>
    Effect.sync(() => {
      const binding = bindingOf("t", {})
      const token = RequestState.issue(config, binding, stateOf(answers), NOW)!
      const i = at % token.length
      let replacement = REPLACEMENTS[w]!
      if (replacement === token[i]) replacement = REPLACEMENTS[(w + 1) % REPLACEMENTS.length]!
      const tampered = token.slice(0, i) + replacement + token.slice(i + 1)
      expect(RequestState.verify(config, binding, tampered, NOW)._tag).toBe("Invalid")
    }))

  it.effect.prop("a state is refused for another tool, other arguments, another method or another principal", {
    answers: answersArb,
    args: json
  }, ({ answers, args }) =>
    Effect.sync(() => {
      const binding = bindingOf("one", args)
      const token = RequestState.issue(config, binding, stateOf(answers), NOW)!
      const others: Array<RequestState.Binding> = [
        { ...binding, name: "two" },
        { ...binding, digest: RequestState.digestParams({ name: "one", arguments: { other: args } }) },
        { ...binding, method: "prompts/get" },
        { ...binding, principal: "mallory" }
      ]
      for (const other of others) {
        const read = RequestState.verify(config, other, token, NOW)
        expect(read._tag).toBe("Invalid")
      }
    }))

  it.effect("a state expires after its lifetime; another key, a non-string and an oversized state are refused", () =>
    Effect.sync(() => {
      const binding = bindingOf("t", { a: 1 })
      const token = RequestState.issue(config, binding, stateOf({}), NOW)!
      expect(RequestState.verify(config, binding, token, NOW + 60_000)._tag).toBe("Valid")
      expect(RequestState.verify(config, binding, token, NOW + 60_001)).toEqual({ _tag: "Invalid", reason: "requestState has expired" })
      const otherKey = { ...config, keys: [keyOf("another secret")] }
      expect(RequestState.verify(otherKey, binding, token, NOW)._tag).toBe("Invalid")
      // Rotation: a list that still holds the signing key accepts the state, whatever the key's place.
      const rotated = { ...config, keys: [keyOf("another secret"), ...config.keys] }
      expect(RequestState.verify(rotated, binding, token, NOW)._tag).toBe("Valid")
      // …and signs with its first key only: the list without that key refuses what it issues.
      const issued = RequestState.issue(rotated, binding, stateOf({}), NOW)!
      expect(RequestState.verify(config, binding, issued, NOW)._tag).toBe("Invalid")
      expect(RequestState.verify(otherKey, binding, issued, NOW)._tag).toBe("Valid")
      expect(RequestState.verify(config, binding, 42, NOW)._tag).toBe("Invalid")
      const small = { ...config, maxBytes: token.length - 1 }
      expect(RequestState.verify(small, binding, token, NOW)).toMatchObject({ reason: expect.stringContaining("larger than") })
      expect(RequestState.issue(small, binding, stateOf({}), NOW)).toBeUndefined()
    }))

  it.effect("the params digest ignores key order, _meta, the answers and the state", () =>
    Effect.sync(() => {
      const a = RequestState.digestParams({ name: "t", arguments: { x: 1, y: [1, { b: 2, a: 1 }] }, _meta: { m: 1 } })
      const b = RequestState.digestParams({ arguments: { y: [1, { a: 1, b: 2 }], x: 1 }, name: "t", requestState: "s", inputResponses: {} })
      expect(a).toBe(b)
      expect(RequestState.digestParams({ name: "t", arguments: { x: 2 } })).not.toBe(a)
    }))
})
