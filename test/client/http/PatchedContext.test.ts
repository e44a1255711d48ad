/**
 * `withPatchedContext`, through which the HTTP clients set effect/http's
 * tracing and fetch's redirect mode on every request: the patched context
 * is built once per context the requests run in, and a request made in
 * another context (a caller's own settings) gets that context patched.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Option } from "effect"
import * as Http from "../../../src/client/internal/HttpExchange.ts"

class Setting extends Context.Service<Setting, string>()("test/Setting") {}
class Caller extends Context.Service<Caller, string>()("test/Caller") {}

describe("withPatchedContext", () => {
  it.effect("patches a context once while requests run in it, and anew for another context", () =>
    Effect.gen(function*() {
      let patches = 0
      const patched = Http.withPatchedContext((context) => {
        patches++
        return Context.add(context, Setting, `patched for ${Context.getOption(context, Caller)._tag}`)
      })
      const read = patched(Effect.map(Effect.serviceOption(Setting), Option.getOrElse(() => "unpatched")))

      const first = yield* Effect.provideService(read, Caller, "a")
      expect(first).toBe("patched for Some")
      expect(patches).toBe(1)

      // Another context: patched again, from that context.
      const bare = yield* read
      expect(bare).toBe("patched for None")
      expect(patches).toBe(2)

      // The same context again: the patched one is reused.
      expect(yield* read).toBe("patched for None")
      expect(yield* read).toBe("patched for None")
      expect(patches).toBe(2)

      // The caller's context is back once the request is done.
      expect((yield* Effect.serviceOption(Setting))._tag).toBe("None")
    }))

  it.effect("the patched context holds for the request's own fiber only", () =>
    Effect.gen(function*() {
      const patched = Http.withPatchedContext((context) => Context.add(context, Setting, "patched"))
      const inside = yield* patched(Effect.map(Effect.serviceOption(Setting), Option.getOrElse(() => "unpatched")))
      expect(inside).toBe("patched")
      expect((yield* Effect.serviceOption(Setting))._tag).toBe("None")
    }))
})
