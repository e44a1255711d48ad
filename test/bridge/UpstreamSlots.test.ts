/**
 * The bridge's count of upstream connections on its own: a key holds at
 * most one slot, a session past the cap is refused with a Retry-After, and a
 * released slot admits again.
 */
import { describe, expect, it } from "@effect/vitest"
import * as UpstreamSlots from "../../src/bridge/UpstreamSlots.ts"

describe("UpstreamSlots", () => {
  it("admits up to the cap, once per key; refuses past it; a release makes room", () => {
    const slots = UpstreamSlots.make(2)
    expect(slots.admit("a")).toBeUndefined()
    expect(slots.take("a")).toBe(true)
    expect(slots.size()).toBe(1)
    expect(slots.admit("b")).toBeUndefined()
    expect(slots.admit("c")).toEqual({
      retryAfterSeconds: UpstreamSlots.RETRY_AFTER_SECONDS,
      message: "Service unavailable: the bridge runs its limit of 2 upstream connections"
    })
    expect(slots.take("c")).toBe(false)
    slots.release("a")
    slots.release("never-held")
    expect(slots.size()).toBe(1)
    expect(slots.take("c")).toBe(true)
    expect(slots.size()).toBe(2)
  })

  it("defaults to 16 and refuses a cap that is not a whole number of at least 1", () => {
    expect(UpstreamSlots.make().max).toBe(UpstreamSlots.DEFAULT_MAX_UPSTREAMS)
    expect(UpstreamSlots.DEFAULT_MAX_UPSTREAMS).toBe(16)
    expect(() => UpstreamSlots.make(0)).toThrow(RangeError)
    expect(() => UpstreamSlots.make(1.5)).toThrow(RangeError)
  })
})
