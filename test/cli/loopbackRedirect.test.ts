/**
 * The CLI's loopback redirect listener in process: only the callback path
 * with the sign-in's state ends the wait, and the listener closes once the
 * wait is over, whether the redirect came or the wait timed out.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as LoopbackRedirect from "../../src/cli/LoopbackRedirect.ts"

const quiet = { announce: () => Effect.void }
const authorizationUrl = (state: string) => `http://127.0.0.1:1/authorize?client_id=c&state=${state}`
const get = (url: string) => Effect.promise(() => fetch(url).then((r) => r.status, () => "refused" as const))

describe("LoopbackRedirect", () => {
  it.live("ignores other paths and other states, ends the wait on the real redirect, then stops listening", () =>
    Effect.gen(function*() {
      const loopback = yield* LoopbackRedirect.make(quiet)
      expect(loopback.redirectUrl).toBe(`http://127.0.0.1:${loopback.port}/callback`)
      // Before any sign-in started, nothing is expected.
      expect(yield* get(`${loopback.redirectUrl}?code=x&state=s1`)).toBe(400)
      yield* loopback.interaction.openUrl(authorizationUrl("s1"))
      const waiting = yield* Effect.forkChild(loopback.interaction.receiveRedirect)
      expect(yield* get(`${loopback.redirectUrl}?code=x&state=other`)).toBe(400)
      expect(yield* get(`${loopback.redirectUrl}?code=x`)).toBe(400)
      expect(yield* get(`http://127.0.0.1:${loopback.port}/elsewhere?code=x&state=s1`)).toBe(404)
      expect(yield* get(`${loopback.redirectUrl}?code=real&state=s1`)).toBe(200)
      expect(yield* Fiber.join(waiting)).toBe(`${loopback.redirectUrl}?code=real&state=s1`)
      expect(yield* get(`${loopback.redirectUrl}?code=again&state=s1`)).toBe("refused")

      // A second sign-in in the same run listens on the same port again.
      yield* loopback.interaction.openUrl(authorizationUrl("s2"))
      const second = yield* Effect.forkChild(loopback.interaction.receiveRedirect)
      expect(yield* get(`${loopback.redirectUrl}?code=two&state=s2`)).toBe(200)
      expect(yield* Fiber.join(second)).toContain("code=two")
    }).pipe(Effect.scoped))

  it.live("stops listening when the wait times out", () =>
    Effect.gen(function*() {
      const loopback = yield* LoopbackRedirect.make(quiet)
      yield* loopback.interaction.openUrl(authorizationUrl("s"))
      const result = yield* loopback.interaction.receiveRedirect.pipe(Effect.timeoutOption("50 millis"))
      expect(result._tag).toBe("None")
      expect(yield* get(`${loopback.redirectUrl}?code=x&state=s`)).toBe("refused")
    }).pipe(Effect.scoped))

  it.live("a port already taken is a typed error", () =>
    Effect.gen(function*() {
      const first = yield* LoopbackRedirect.make(quiet)
      const error = yield* Effect.flip(LoopbackRedirect.make({ ...quiet, port: first.port }))
      expect(error._tag).toBe("LoopbackUnavailable")
      expect(error.message).toContain(`127.0.0.1:${first.port}`)
    }).pipe(Effect.scoped))
})
