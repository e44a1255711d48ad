/**
 * The deadline wheel behind request timeouts, on the test clock: an item
 * expires when its timeout has passed and not before, removal and clearing
 * stop it, a restart counts its timeout again from that moment, and items
 * expire in deadline order.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type * as Clock from "effect/Clock"
import { TestClock } from "effect/testing"
import * as Deadlines from "../../src/internal/Deadlines.ts"

interface Item extends Deadlines.Timed {
  readonly name: string
}

const item = (name: string): Item => ({ name, deadline: undefined })

/** A wheel that records what expires, with the clock of the test. */
const setup = Effect.gen(function*() {
  const clock: Clock.Clock = yield* Effect.clockWith(Effect.succeed)
  const expired: Array<string> = []
  let onExpire: (item: Item, timeoutMs: number) => void = () => {}
  const wheel = Deadlines.make<Item>((item, timeoutMs) => {
    expired.push(`${item.name}@${timeoutMs}`)
    onExpire(item, timeoutMs)
  })
  return {
    clock,
    wheel,
    expired,
    add: (it: Item, timeoutMs: number) => wheel.add(clock, it, timeoutMs),
    setOnExpire: (f: (item: Item, timeoutMs: number) => void) => void (onExpire = f)
  }
})

describe("Deadlines", () => {
  it.effect("an item expires once its timeout has passed, not before, and loses its deadline", () =>
    Effect.gen(function*() {
      const { add, expired } = yield* setup
      const a = item("a")
      yield* add(a, 1000)
      expect(a.deadline).toMatchObject({ timeoutMs: 1000, at: 1000 })
      yield* TestClock.adjust(999)
      expect(expired).toEqual([])
      yield* TestClock.adjust(1)
      expect(expired).toEqual(["a@1000"])
      expect(a.deadline).toBeUndefined()
      yield* TestClock.adjust(10_000)
      expect(expired).toEqual(["a@1000"])
    }))

  it.effect("only a deadline earlier than the timer's next wake needs a timer started", () =>
    Effect.gen(function*() {
      const { add, expired } = yield* setup
      const first = add(item("a"), 1000)
      expect(first).not.toBe(Effect.void)
      yield* first
      expect(add(item("b"), 1000)).toBe(Effect.void)
      expect(add(item("c"), 5000)).toBe(Effect.void)
      const earlier = add(item("d"), 10)
      expect(earlier).not.toBe(Effect.void)
      yield* earlier
      yield* TestClock.adjust(10)
      expect(expired).toEqual(["d@10"])
      yield* TestClock.adjust(990)
      expect(expired).toEqual(["d@10", "a@1000", "b@1000"])
      yield* TestClock.adjust(4000)
      expect(expired).toEqual(["d@10", "a@1000", "b@1000", "c@5000"])
    }))

  it.effect("a removed item never expires; the others still do", () =>
    Effect.gen(function*() {
      const { add, expired, wheel } = yield* setup
      const a = item("a")
      const b = item("b")
      const c = item("c")
      yield* add(a, 100)
      yield* add(b, 100)
      yield* add(c, 100)
      wheel.remove(b)
      expect(b.deadline).toBeUndefined()
      wheel.remove(b)
      yield* TestClock.adjust(100)
      expect(expired).toEqual(["a@100", "c@100"])
    }))

  it.effect("removing the only item leaves nothing to expire, and a later one is still timed", () =>
    Effect.gen(function*() {
      const { add, expired, wheel } = yield* setup
      const a = item("a")
      yield* add(a, 100)
      wheel.remove(a)
      yield* TestClock.adjust(100)
      expect(expired).toEqual([])
      yield* add(item("b"), 100)
      yield* TestClock.adjust(100)
      expect(expired).toEqual(["b@100"])
    }))

  it.effect("a restart counts the timeout again from that moment", () =>
    Effect.gen(function*() {
      const { add, clock, expired, wheel } = yield* setup
      const a = item("a")
      yield* add(a, 1000)
      yield* TestClock.adjust(600)
      wheel.restart(clock, a)
      expect(a.deadline).toMatchObject({ timeoutMs: 1000, at: 1600 })
      yield* TestClock.adjust(999)
      expect(expired).toEqual([])
      yield* TestClock.adjust(1)
      expect(expired).toEqual(["a@1000"])
    }))

  it.effect("a restarted item expires after those whose deadlines were set after its first one", () =>
    Effect.gen(function*() {
      const { add, clock, expired, wheel } = yield* setup
      const a = item("a")
      const b = item("b")
      yield* add(a, 1000)
      yield* TestClock.adjust(100)
      yield* add(b, 1000)
      yield* TestClock.adjust(100)
      wheel.restart(clock, a)
      yield* TestClock.adjust(900)
      expect(expired).toEqual(["b@1000"])
      yield* TestClock.adjust(100)
      expect(expired).toEqual(["b@1000", "a@1000"])
    }))

  it.effect("restarts from the middle and the tail of a list keep it in deadline order", () =>
    Effect.gen(function*() {
      const { add, clock, expired, wheel } = yield* setup
      const [a, b, c] = [item("a"), item("b"), item("c")]
      yield* add(a, 1000)
      yield* TestClock.adjust(100)
      yield* add(b, 1000)
      yield* TestClock.adjust(100)
      yield* add(c, 1000)
      yield* TestClock.adjust(100)
      wheel.restart(clock, b)
      wheel.restart(clock, b)
      yield* TestClock.adjust(100)
      wheel.restart(clock, c)
      wheel.remove(a)
      expect(b.deadline).toMatchObject({ at: 1300 })
      expect(c.deadline).toMatchObject({ at: 1400 })
      yield* TestClock.adjust(899)
      expect(expired).toEqual([])
      yield* TestClock.adjust(1)
      expect(expired).toEqual(["b@1000"])
      yield* TestClock.adjust(100)
      expect(expired).toEqual(["b@1000", "c@1000"])
    }))

  it.effect("restarts inside atOneTime count from the one time it read, and expire as such", () =>
    Effect.gen(function*() {
      const { add, clock, expired, wheel } = yield* setup
      const [a, b] = [item("a"), item("b")]
      yield* add(a, 1000)
      yield* add(b, 1000)
      yield* TestClock.adjust(600)
      // A clock that moves on each reading: only the reading atOneTime takes may count.
      let readings = 0
      const moving: Clock.Clock = { ...clock, currentTimeMillisUnsafe: () => clock.currentTimeMillisUnsafe() + 50 * readings++ }
      const result = wheel.atOneTime(moving, () => {
        wheel.restart(moving, a)
        wheel.restart(moving, b)
        wheel.restart(moving, a)
        return "routed"
      })
      expect(result).toBe("routed")
      expect(readings).toBe(1)
      expect(a.deadline).toMatchObject({ at: 1600 })
      expect(b.deadline).toMatchObject({ at: 1600 })
      // Outside it, a restart reads the clock again.
      wheel.restart(moving, b)
      expect(b.deadline).toMatchObject({ at: 1650 })
      yield* TestClock.adjust(999)
      expect(expired).toEqual([])
      yield* TestClock.adjust(1)
      expect(expired).toEqual(["a@1000"])
      yield* TestClock.adjust(50)
      expect(expired).toEqual(["a@1000", "b@1000"])
    }))

  it.effect("atOneTime lets go of its time when its function throws", () =>
    Effect.gen(function*() {
      const { add, clock, wheel } = yield* setup
      const a = item("a")
      yield* add(a, 1000)
      expect(() => wheel.atOneTime(clock, () => { throw new Error("boom") })).toThrow("boom")
      yield* TestClock.adjust(300)
      wheel.restart(clock, a)
      expect(a.deadline).toMatchObject({ at: 1300 })
    }))

  it.effect("restarting an item without a deadline does nothing", () =>
    Effect.gen(function*() {
      const { clock, expired, wheel } = yield* setup
      const a = item("a")
      wheel.restart(clock, a)
      expect(a.deadline).toBeUndefined()
      yield* TestClock.adjust(10_000)
      expect(expired).toEqual([])
    }))

  it.effect("items expire in deadline order, whatever their timeouts and the order they were added in", () =>
    Effect.gen(function*() {
      const { add, expired } = yield* setup
      yield* add(item("slow"), 300)
      yield* add(item("fast"), 100)
      yield* TestClock.adjust(50)
      yield* add(item("medium"), 200)
      yield* add(item("fast2"), 100)
      for (let t = 0; t < 300; t += 10) yield* TestClock.adjust(10)
      expect(expired).toEqual(["fast@100", "fast2@100", "medium@200", "slow@300"])
    }))

  it.effect("items with the same timeout that are due together expire in the order they were added", () =>
    Effect.gen(function*() {
      const { add, expired } = yield* setup
      for (const name of ["a", "b", "c", "d"]) yield* add(item(name), 100)
      yield* TestClock.adjust(100)
      expect(expired).toEqual(["a@100", "b@100", "c@100", "d@100"])
    }))

  it.effect("an item added by the expiry callback is timed from then", () =>
    Effect.gen(function*() {
      const { add, clock, expired, setOnExpire, wheel } = yield* setup
      const timers: Array<Effect.Effect<void>> = []
      setOnExpire((it) => {
        if (it.name === "a") timers.push(wheel.add(clock, item("later"), 100))
      })
      yield* add(item("a"), 100)
      yield* add(item("b"), 300)
      yield* TestClock.adjust(100)
      expect(expired).toEqual(["a@100"])
      // Due before the sweep's next wake (300): the caller starts a timer for it, as a request's fiber would.
      expect(timers.length).toBe(1)
      yield* timers[0]!
      yield* TestClock.adjust(99)
      expect(expired).toEqual(["a@100"])
      yield* TestClock.adjust(1)
      expect(expired).toEqual(["a@100", "later@100"])
      yield* TestClock.adjust(100)
      expect(expired).toEqual(["a@100", "later@100", "b@300"])
    }))

  it.effect("clear drops every deadline: nothing expires, and a later remove or add still works", () =>
    Effect.gen(function*() {
      const { add, expired, wheel } = yield* setup
      const a = item("a")
      const b = item("b")
      yield* add(a, 100)
      yield* add(b, 200)
      wheel.clear()
      expect(a.deadline).toBeUndefined()
      expect(b.deadline).toBeUndefined()
      wheel.remove(a)
      yield* TestClock.adjust(1000)
      expect(expired).toEqual([])
      const timer = add(item("c"), 100)
      expect(timer).not.toBe(Effect.void)
      yield* timer
      yield* TestClock.adjust(100)
      expect(expired).toEqual(["c@100"])
    }))
})
