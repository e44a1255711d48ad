import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect } from "effect"
import * as JsonRpc from "../../src/JsonRpc.ts"
import { Arbitraries } from "../../src/testing/index.ts"

const enc = new TextEncoder()
const dec = new TextDecoder()

/** What a peer reading our bytes would get back. */
const overTheWire = (value: unknown): unknown => JSON.parse(dec.decode(enc.encode(JSON.stringify(value))))

const check = <A>(arb: Arbitrary.Arbitrary<A>, property: (a: A) => boolean, runs = 200) =>
  Effect.gen(function*() {
    const result = yield* Arbitrary.checkEffect(arb, property, { runs, seed: 11 })
    expect(Arbitrary.formatCheckFailure(result)).toBeUndefined()
    expect(result._tag).toBe("Passed")
  })

const sameOnTheWire = (value: unknown) => {
  const back = overTheWire(value)
  return JSON.stringify(back) === JSON.stringify(value) && Object.is(JSON.stringify(back), JSON.stringify(overTheWire(back)))
}

describe("Arbitraries", () => {
  it.effect("messages survive JSON and UTF-8 unchanged and classify as what they are", () =>
    Effect.gen(function*() {
      yield* check(Arbitraries.request, (m) => sameOnTheWire(m) && JsonRpc.classify(overTheWire(m))._tag === "Request")
      yield* check(
        Arbitraries.notification,
        (m) => sameOnTheWire(m) && JsonRpc.classify(overTheWire(m))._tag === "Notification"
      )
      yield* check(Arbitraries.success, (m) => sameOnTheWire(m) && JsonRpc.classify(overTheWire(m))._tag === "Success")
      yield* check(Arbitraries.failure, (m) => sameOnTheWire(m) && JsonRpc.classify(overTheWire(m))._tag === "Failure")
      yield* check(Arbitraries.message, (m) => sameOnTheWire(m) && JsonRpc.classify(overTheWire(m))._tag !== "Invalid")
    }))

  it.effect("a generated message is deeply equal to what arrives (no -0, no lone surrogates, no undefined)", () =>
    check(Arbitraries.message, (m) => {
      try {
        expect(overTheWire(m)).toStrictEqual(m)
        return true
      } catch {
        return false
      }
    }))

  it.effect("batches decode as batches of valid messages", () =>
    check(Arbitraries.batch, (b) => {
      const decoded = JsonRpc.decode(JSON.stringify(b))
      return decoded._tag === "Batch" && decoded.messages.length === b.length &&
        decoded.messages.every((m) => m._tag !== "Invalid")
    }))

  it.effect("garbage is never JSON and never contains a newline", () =>
    check(Arbitraries.garbage, (text) => JsonRpc.decode(text)._tag === "ParseError" && !/[\r\n]/.test(text), 500))

  it.effect("chunked splits join back to the original bytes, with no empty chunk", () =>
    Effect.gen(function*() {
      const bytes = enc.encode("{\"jsonrpc\":\"2.0\",\"method\":\"ünïcödé 😀\"}\n".repeat(5))
      yield* check(
        Arbitraries.chunked(bytes),
        (chunks) =>
          chunks.every((c) => c.length > 0) &&
          dec.decode(Uint8Array.from(chunks.flatMap((c) => Array.from(c)))) === dec.decode(bytes)
      )
      const samples = yield* Arbitrary.sampleEffect(Arbitraries.chunked(bytes), { count: 50, seed: 3 })
      expect(samples.some((chunks) => chunks.length > 1)).toBe(true)
    }))

  it.effect("randomFaults stay within the requested rate; fault covers every kind", () =>
    Effect.gen(function*() {
      yield* check(Arbitraries.randomFaults(0.1), (r) =>
        [r.drop, r.delay, r.duplicate, r.reorder, r.corrupt, r.truncate].every((p) => p !== undefined && p >= 0 && p <= 0.1) &&
        r.cut === undefined && r.kill === undefined)
      const kinds = new Set((yield* Arbitrary.sampleEffect(Arbitraries.fault, { count: 300, seed: 1 })).map((f) => f._tag))
      expect([...kinds].sort()).toEqual(["Corrupt", "Cut", "Delay", "Drop", "Duplicate", "Kill", "Reorder", "Truncate"])
    }))

  it("wireNormalize maps values to what JSON over UTF-8 delivers", () => {
    expect(Object.is(Arbitraries.wireNormalize(-0), 0)).toBe(true)
    expect(Arbitraries.wireNormalize(Number.NaN)).toBe(null)
    expect(Arbitraries.wireNormalize("a\ud800b")).toBe("a\ufffdb")
    expect(Arbitraries.wireNormalize({ a: undefined, b: [undefined, 1] })).toEqual({ b: [null, 1] })
    const proto = Arbitraries.wireNormalize(JSON.parse("{\"__proto__\":{\"x\":1}}")) as Record<string, unknown>
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype)
    expect(Object.keys(proto)).toEqual(["__proto__"])
  })
})
