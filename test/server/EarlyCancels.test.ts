/**
 * Cancels that come before their requests: kept for requests not running,
 * consumed once, the oldest dropped past the capacity or the time to live,
 * and nothing kept without options (an ordered stream).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import * as EarlyCancels from "../../src/server/internal/EarlyCancels.ts"

describe("EarlyCancels", () => {
  it.effect("a cancel of a request not running yet is kept until that request comes, once", () =>
    Effect.gen(function*() {
      const running = new Set<number | string>([7])
      const cancels = EarlyCancels.make({}, (id) => running.has(id))
      expect(cancels.none()).toBe(true)
      yield* cancels.remember(1)
      // A running request is cancelled where it runs: nothing to keep.
      yield* cancels.remember(7)
      expect(cancels.none()).toBe(false)
      expect(yield* cancels.consume(7)).toBe(false)
      expect(yield* cancels.consume("1")).toBe(false)
      expect(yield* cancels.consume(1)).toBe(true)
      expect(yield* cancels.consume(1)).toBe(false)
      expect(cancels.none()).toBe(true)
    }))

  it.effect("keeps the newest up to the capacity, each for its time to live", () =>
    Effect.gen(function*() {
      const cancels = EarlyCancels.make({ capacity: 2, ttlMs: 1_000 }, () => false)
      yield* cancels.remember(1)
      yield* cancels.remember(2)
      yield* cancels.remember(3)
      expect(yield* cancels.consume(1)).toBe(false)
      yield* TestClock.adjust("999 millis")
      expect(yield* cancels.consume(2)).toBe(true)
      yield* TestClock.adjust("1 millis")
      expect(yield* cancels.consume(3)).toBe(false)
      expect(cancels.none()).toBe(true)
    }))

  it.effect("without options nothing is kept", () =>
    Effect.gen(function*() {
      const cancels = EarlyCancels.make(undefined, () => false)
      yield* cancels.remember(1)
      expect(cancels.none()).toBe(true)
      expect(yield* cancels.consume(1)).toBe(false)
    }))
})
