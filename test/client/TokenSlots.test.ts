/**
 * The table of calls in flight by progress token (src/client/internal/TokenSlots.ts)
 * against a Map: under any sequence of calls starting with increasing tokens
 * and ending in any order, some outliving many later ones (so their slots are
 * taken when a later token comes round), and lookups of tokens held, ended,
 * never issued, negative or fractional, it answers as the Map does.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Schema } from "effect"
import * as TokenSlots from "../../src/client/internal/TokenSlots.ts"

const op = Arbitrary.all({
  kind: Arbitrary.schema(Schema.Literals(["start", "start", "start", "end", "get"])),
  pick: Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10_000 }))),
  probe: Arbitrary.schema(Schema.Literals(["held", "ended", "future", "negative", "fraction"]))
})

describe("TokenSlots", () => {
  it.effect.prop("answers as a Map does, slots taken or not", {
    ops: Arbitrary.array(op, { maxLength: 400 }),
    size: Arbitrary.schema(Schema.Literals([1, 2, 4, 8]))
  }, ({ ops, size }) =>
    Effect.sync(() => {
      const table = TokenSlots.make<{ readonly token: number }>(size)
      const model = new Map<number, { readonly token: number }>()
      const ended: Array<number> = []
      let next = 0
      for (const { kind, pick, probe } of ops) {
        if (kind === "start") {
          const token = ++next
          const value = { token }
          table.set(token, value)
          model.set(token, value)
        } else if (kind === "end" && model.size > 0) {
          const held = [...model.keys()]
          const token = held[pick % held.length]!
          table.delete(token)
          model.delete(token)
          ended.push(token)
        } else {
          const held = [...model.keys()]
          const token = probe === "held" && held.length > 0
            ? held[pick % held.length]!
            : probe === "ended" && ended.length > 0
            ? ended[pick % ended.length]!
            : probe === "future"
            ? next + 1 + pick
            : probe === "negative"
            ? -1 - (pick % 3)
            : pick + 0.5
          expect(table.get(token)).toBe(model.get(token))
        }
        expect(table.size()).toBe(model.size)
      }
      for (const [token, value] of model) expect(table.get(token)).toBe(value)
      for (const token of ended) expect(table.get(token)).toBeUndefined()
    }))

  it("a token past 2^32 still finds its slot, and deleting a token not held changes nothing", () => {
    const table = TokenSlots.make<string>(4)
    const big = 2 ** 40 + 3
    table.set(big, "big")
    table.set(7, "seven") // the same slot (low bits 3): overflow
    expect(table.get(big)).toBe("big")
    expect(table.get(7)).toBe("seven")
    table.delete(11)
    table.delete(big + 4)
    expect(table.size()).toBe(2)
    table.delete(big)
    expect(table.get(big)).toBeUndefined()
    expect(table.get(7)).toBe("seven")
  })

  it("refuses a size that is not a power of two", () => {
    expect(() => TokenSlots.make(3)).toThrow(/power of two/)
  })
})
