/**
 * The table keyed by request ids (src/internal/SlotTable.ts) against a Map:
 * under any sequence of entries added with increasing ids (as this side
 * issues them) or with ids in any order (as a peer may send them, repeats
 * and ids removed before included), removed in any order, some outliving
 * many later ones (so their slots are taken when a later id comes round),
 * string keys, values replaced, and lookups of ids held, removed, never
 * issued, negative or fractional, it answers as the Map does, and holds the
 * same keys and values.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Schema } from "effect"
import * as SlotTable from "../../src/internal/SlotTable.ts"

const op = Arbitrary.all({
  kind: Arbitrary.schema(Schema.Literals(["add", "add", "add", "addAny", "addString", "replace", "remove", "get", "clear"])),
  pick: Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10_000 }))),
  probe: Arbitrary.schema(Schema.Literals(["held", "removed", "future", "negative", "fraction", "string"]))
})

const sorted = <A>(xs: Iterable<A>) => [...xs].map(String).sort()

describe("SlotTable", () => {
  it.effect.prop("answers as a Map does, slots taken or not", {
    ops: Arbitrary.array(op, { maxLength: 400 }),
    size: Arbitrary.schema(Schema.Literals([1, 2, 4, 8]))
  }, ({ ops, size }) =>
    Effect.sync(() => {
      const table = SlotTable.make<string | number, { readonly key: string | number }>(size)
      const model = new Map<string | number, { readonly key: string | number }>()
      const removed: Array<string | number> = []
      let next = 0
      const add = (key: string | number) => {
        const value = { key }
        table.set(key, value)
        model.set(key, value)
      }
      for (const { kind, pick, probe } of ops) {
        const held = [...model.keys()]
        if (kind === "add") add(++next)
        else if (kind === "addAny") add(probe === "negative" ? -1 - (pick % 3) : probe === "fraction" ? pick + 0.5 : pick)
        else if (kind === "addString") add(`s${++next}`)
        else if (kind === "replace" && held.length > 0) add(held[pick % held.length]!)
        else if (kind === "remove" && held.length > 0) {
          const key = held[pick % held.length]!
          table.delete(key)
          model.delete(key)
          removed.push(key)
        } else if (kind === "clear" && pick % 10 === 0) {
          table.clear()
          removed.push(...model.keys())
          model.clear()
        } else if (kind === "get") {
          const key = probe === "held" && held.length > 0
            ? held[pick % held.length]!
            : probe === "removed" && removed.length > 0
            ? removed[pick % removed.length]!
            : probe === "future"
            ? next + 1 + pick
            : probe === "negative"
            ? -1 - (pick % 3)
            : probe === "string"
            ? `s${pick}`
            : pick + 0.5
          expect(table.get(key)).toBe(model.get(key))
          expect(table.has(key)).toBe(model.has(key))
        }
        expect(table.size()).toBe(model.size)
      }
      expect(sorted(table.keys())).toEqual(sorted(model.keys()))
      expect(table.values().length).toBe(model.size)
      expect(table.first()).toBe(table.values()[0])
      for (const value of table.values()) expect(model.get(value.key)).toBe(value)
      for (const key of removed) if (!model.has(key)) expect(table.get(key)).toBeUndefined()
    }))

  it("an id past 2^32 still finds its slot, and removing an id not held changes nothing", () => {
    const table = SlotTable.make<number, string>(4)
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

  it("string ids and unslotted numbers never need the ring, and a table that held them answers as before", () => {
    const table = SlotTable.make<string | number, string>(4)
    table.set("s1", "one")
    table.set(-2, "minus two")
    table.set(1.5, "fraction")
    expect(table.values().sort()).toEqual(["fraction", "minus two", "one"])
    table.set(1, "slot")
    expect(table.get(1)).toBe("slot")
    expect(table.get("1")).toBeUndefined()
    table.clear()
    expect(table.size()).toBe(0)
    expect(table.get(1)).toBeUndefined()
  })

  it("refuses a size that is not a power of two", () => {
    expect(() => SlotTable.make(3)).toThrow(/power of two/)
  })
})
