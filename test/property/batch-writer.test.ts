/**
 * The batching writer under the stdio transports: lines reach the sink whole
 * and in order, however they are grouped; with `flushAt`, a burst leaves in
 * several writes (the first as soon as it holds `flushAt` lines) instead of one;
 * with `coalesceTurn`, lines made in separate callbacks after a batch went out
 * share a write until the next `newTurn`, and still every line arrives once,
 * whole and in order.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Fiber, Schema, Sink } from "effect"
import * as BatchWriter from "../../src/internal/BatchWriter.ts"

const int = (minimum: number, maximum: number) =>
  Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum }))).pipe(Arbitrary.map((n) => n + 0))

/** A writer running into a sink that records each write's text. */
const recording = (options: BatchWriter.BatchWriterOptions) =>
  Effect.gen(function*() {
    const writer = BatchWriter.make<string>(1024, options)
    const writes: Array<string> = []
    const decoder = new TextDecoder()
    const running = yield* writer.run(Sink.forEach((chunk: Uint8Array) => Effect.sync(() => writes.push(decoder.decode(chunk)))))
      .pipe(Effect.forkChild({ startImmediately: true }))
    return { writer, writes, running }
  })

/** What separates two bursts: a yield, an event-loop callback of its own, or the peer's input (`newTurn`). */
type Gap = "tick" | "callback" | "turn"
const GAPS: ReadonlyArray<Gap> = ["tick", "callback", "turn"]

const nextCallback = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/** Writes bursts of lines (one burst per tick unless `gaps` say otherwise) and returns what each sink write held. */
const writeBursts = (
  bursts: ReadonlyArray<number>,
  flushAt: number | undefined,
  options: { readonly coalesceTurn?: boolean; readonly gaps?: ReadonlyArray<Gap> } = {}
) =>
  Effect.gen(function*() {
    const { running, writer, writes } = yield* recording({ flushAt, coalesceTurn: options.coalesceTurn })
    let n = 0
    for (const [b, size] of bursts.entries()) {
      for (let i = 0; i < size; i++) expect(writer.tryWrite(`${n++}\n`)).toBe(true)
      const gap = options.gaps?.[b] ?? "tick"
      if (gap === "turn") writer.newTurn()
      yield* gap === "callback" ? nextCallback : Effect.yieldNow
    }
    writer.close("closed")
    yield* Fiber.join(running)
    return { writes, sent: Array.from({ length: n }, (_, i) => `${i}\n`).join("") }
  })

describe("BatchWriter", () => {
  it.effect("with flushAt beyond the burst, a burst written in one tick is one sink write", () =>
    Effect.gen(function*() {
      const { writes } = yield* writeBursts([10], Infinity)
      expect(writes).toEqual([Array.from({ length: 10 }, (_, i) => `${i}\n`).join("")])
    }))

  it.effect("by default a burst leaves every 16 lines", () =>
    Effect.gen(function*() {
      const { sent, writes } = yield* writeBursts([40], undefined)
      expect(writes.map((w) => w.split("\n").length - 1)).toEqual([16, 16, 8])
      expect(writes.join("")).toBe(sent)
    }))

  it.effect("with flushAt, the first write of a burst holds flushAt lines and the rest follow in order", () =>
    Effect.gen(function*() {
      const { sent, writes } = yield* writeBursts([10], 4)
      expect(writes.length).toBeGreaterThan(1)
      expect(writes[0]).toBe("0\n1\n2\n3\n")
      expect(writes.join("")).toBe(sent)
    }))

  it.effect("a line written after the waiting sink was interrupted stays in the batch for the next run", () =>
    Effect.gen(function*() {
      const writer = BatchWriter.make<string>(16)
      const writes: Array<string> = []
      const decoder = new TextDecoder()
      const sink = Sink.forEach((chunk: Uint8Array) => Effect.sync(() => writes.push(decoder.decode(chunk))))
      const first = yield* writer.run(sink).pipe(Effect.forkChild({ startImmediately: true }))
      expect(writer.tryWrite("a\n")).toBe(true)
      yield* Effect.yieldNow
      expect(writes).toEqual(["a\n"])
      // Now its pull waits for the next batch.
      yield* Fiber.interrupt(first)
      expect(writer.tryWrite("b\n")).toBe(true)
      yield* Effect.yieldNow
      expect(writes).toEqual(["a\n"])
      const second = yield* writer.run(sink).pipe(Effect.forkChild({ startImmediately: true }))
      writer.close("closed")
      yield* Fiber.join(second)
      expect(writes).toEqual(["a\n", "b\n"])
    }))

  /** `a` alone, then three lines from three event-loop callbacks, then (after `newTurn`) `e`. */
  const callbacksThenTurn = (coalesceTurn: boolean) =>
    Effect.gen(function*() {
      const { running, writer, writes } = yield* recording({ coalesceTurn })
      const afterMicrotasks = Effect.promise(() => new Promise<void>((resolve) => queueMicrotask(resolve)))
      writer.tryWrite("a\n")
      yield* afterMicrotasks
      const alone = [...writes]
      yield* Effect.promise(() =>
        new Promise<void>((resolve) => {
          for (const line of ["b\n", "c\n", "d\n"]) setImmediate(() => writer.tryWrite(line))
          setTimeout(resolve, 20)
        })
      )
      const fromCallbacks = writes.slice(alone.length)
      writer.newTurn()
      writer.tryWrite("e\n")
      yield* afterMicrotasks
      const afterTurn = writes.slice(alone.length + fromCallbacks.length)
      writer.close("closed")
      yield* Fiber.join(running)
      return { alone, fromCallbacks, afterTurn }
    })

  it.live("coalesceTurn: lines from separate callbacks after a batch went out share one write; after newTurn the next goes out at the end of its tick", () =>
    Effect.gen(function*() {
      const { alone, fromCallbacks, afterTurn } = yield* callbacksThenTurn(true)
      expect(alone).toEqual(["a\n"])
      expect(fromCallbacks).toEqual(["b\nc\nd\n"])
      expect(afterTurn).toEqual(["e\n"])
    }))

  it.live("without coalesceTurn each callback's line is a write of its own", () =>
    Effect.gen(function*() {
      const { alone, fromCallbacks, afterTurn } = yield* callbacksThenTurn(false)
      expect(alone).toEqual(["a\n"])
      expect(fromCallbacks).toEqual(["b\n", "c\n", "d\n"])
      expect(afterTurn).toEqual(["e\n"])
    }))

  it.effect.prop("every line reaches the sink once, whole and in order, whatever the bursts and flushAt", {
    bursts: Arbitrary.array(int(0, 40), { minLength: 1, maxLength: 8 }),
    flushAt: int(1, 20)
  }, ({ bursts, flushAt }) =>
    Effect.gen(function*() {
      const { sent, writes } = yield* writeBursts(bursts, flushAt)
      expect(writes.join("")).toBe(sent)
      for (const write of writes) expect(write.endsWith("\n")).toBe(true)
    }), { arbitrary: { runs: 200 } })

  it.effect.prop("with coalesceTurn too, every line reaches the sink once, whole and in order, whatever the gaps", {
    bursts: Arbitrary.array(int(0, 40), { minLength: 1, maxLength: 8 }),
    gaps: Arbitrary.array(int(0, 2).pipe(Arbitrary.map((i): Gap => GAPS[i]!)), { minLength: 8, maxLength: 8 }),
    flushAt: int(1, 20)
  }, ({ bursts, flushAt, gaps }) =>
    Effect.gen(function*() {
      const { sent, writes } = yield* writeBursts(bursts, flushAt, { coalesceTurn: true, gaps })
      expect(writes.join("")).toBe(sent)
      for (const write of writes) expect(write.endsWith("\n")).toBe(true)
    }), { arbitrary: { runs: 200 } })
})
