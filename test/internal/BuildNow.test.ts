/**
 * `buildNow`: an effect built in the caller's step, a throw while building
 * becoming its defect exactly as `Effect.suspend` would make it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { buildNow } from "../../src/internal/BuildNow.ts"

describe("buildNow", () => {
  it("builds the effect at once and hands back the very effect built", () => {
    let built = 0
    const effect = Effect.succeed(1)
    expect(buildNow(() => {
      built++
      return effect
    })).toBe(effect)
    expect(built).toBe(1)
  })

  it.effect("turns a throw while building into the effect's defect, as Effect.suspend does", () =>
    Effect.gen(function*() {
      const boom = new Error("boom")
      const build = (): Effect.Effect<number> => {
        throw boom
      }
      const now = yield* Effect.exit(buildNow(build))
      const suspended = yield* Effect.exit(Effect.suspend(build))
      expect(Exit.isFailure(now) && Cause.squash(now.cause)).toBe(boom)
      expect(Exit.isFailure(now) && Cause.hasDies(now.cause)).toBe(true)
      expect(Exit.isFailure(suspended) && Cause.squash(suspended.cause)).toBe(boom)
    }))
})
