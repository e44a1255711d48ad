/**
 * The Redis fixture itself: it answers once started, keeps what the
 * append-only file holds across a SIGKILL and restart on the same port,
 * loses it without the file, counts keys under a prefix, and leaves no
 * process behind when its scope closes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { createClient } from "redis"
import * as RedisServer from "../../fixtures/RedisServer.ts"

const connect = (url: string) => createClient({ url })

const withClient = <A>(url: string, f: (client: ReturnType<typeof connect>) => Promise<A>) =>
  Effect.promise(async () => {
    const client = connect(url)
    client.on("error", () => {})
    await client.connect()
    try {
      return await f(client)
    } finally {
      client.destroy()
    }
  })

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe.skipIf(!RedisServer.present)("RedisServer fixture", () => {
  it.effect("answers, and keeps append-only data across a kill and restart on the same port", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      expect(yield* withClient(redis.url, (c) => c.ping())).toBe("PONG")
      yield* withClient(redis.url, (c) => c.set("t:kept", "1"))
      const before = redis.pid()
      yield* redis.kill
      expect(alive(before)).toBe(false)
      yield* redis.start
      expect(redis.pid()).not.toBe(before)
      expect(yield* withClient(redis.url, (c) => c.get("t:kept"))).toBe("1")
    }).pipe(Effect.scoped))

  it.effect("without the append-only file a restart starts empty", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make({ appendOnly: false })
      yield* withClient(redis.url, (c) => c.set("t:lost", "1"))
      yield* redis.kill
      yield* redis.start
      expect(yield* withClient(redis.url, (c) => c.get("t:lost"))).toBe(null)
    }).pipe(Effect.scoped))

  it.effect("counts the keys under a prefix only", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      yield* withClient(redis.url, async (c) => {
        await c.set("a:1", "x")
        await c.set("a:2", "x")
        await c.set("b:1", "x")
      })
      expect(yield* RedisServer.countKeys(redis.url, "a:")).toBe(2)
      expect(yield* RedisServer.keysUnder(redis.url, "b:")).toEqual(["b:1"])
      expect(yield* RedisServer.countKeys(redis.url, "c:")).toBe(0)
    }).pipe(Effect.scoped))

  it.effect("closing its scope stops exactly its process", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const redis = yield* Scope.provide(RedisServer.make(), scope)
      const pid = redis.pid()
      expect(alive(pid)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect(alive(pid)).toBe(false)
    }))
})
