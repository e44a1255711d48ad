/**
 * The Redis task store against a real redis-server, each store on a
 * connection of its own as another instance would have it: compare-and-set
 * under races (no change lost, one terminal status), a change feed that
 * follows changes made through another store, expiry by the task's TTL, a
 * task whose instance's liveness mark is gone failed once by whoever reads
 * it, the mark held only while tasks run, and Redis down answered at once
 * with `TaskStoreError`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Scope, Stream } from "effect"
import { createClient } from "redis"
import * as RedisFleet from "../../../src/server/RedisFleet.ts"
import * as RedisTaskStore from "../../../src/server/RedisTaskStore.ts"
import type { TaskRecord, TaskStoreShape } from "../../../src/server/TaskStore.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"

const PREFIX = "t:"

/** A store on a connection of its own, closed with the scope. */
const storeOn = (url: string, options: RedisTaskStore.Options = {}) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(RedisFleet.layerConnection({ url }))
    return yield* Effect.provideContext(RedisTaskStore.make({ prefix: PREFIX, ...options }), context)
  })

const record = (taskId: string, fields: Partial<TaskRecord> = {}): Effect.Effect<TaskRecord> =>
  Effect.sync(() => ({
    taskId,
    owner: "principal:a",
    status: "working",
    createdAt: Date.now(),
    lastUpdatedAt: Date.now(),
    ttlMs: 60_000,
    inputRequests: {},
    inputResponses: {},
    inputCount: 0,
    ...fields
  }))

const xlen = (url: string, key: string) =>
  Effect.promise(async () => {
    const client = createClient({ url })
    await client.connect()
    try {
      return await client.xLen(key)
    } finally {
      client.destroy()
    }
  })

const keys = (url: string) => RedisServer.keysUnder(url, PREFIX)

/** A store with a held liveness mark of its own, and a task it runs. */
const running = (store: TaskStoreShape, taskId: string, scope: Scope.Scope) =>
  Effect.gen(function*() {
    yield* Scope.provide(scope)(store.instance!.hold)
    const task = yield* record(taskId, { instance: store.instance!.id })
    yield* store.create(task)
    return task
  })

describe.skipIf(!RedisServer.present)("RedisTaskStore", () => {
  it.live("compare-and-set from two stores at once: no change is lost, and one terminal status wins", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* storeOn(redis.url)
      const b = yield* storeOn(redis.url)
      yield* a.create(yield* record("race"))
      const bump = (store: TaskStoreShape) =>
        store.compareAndSet("race", ["working"], (r) => ({ ...r, inputCount: r.inputCount + 1 }))
      yield* Effect.all(Array.from({ length: 60 }, (_, i) => bump(i % 2 === 0 ? a : b)), { concurrency: "unbounded" })
      expect((yield* b.get("race"))?.inputCount).toBe(60)

      const ends = yield* Effect.all(
        [
          a.compareAndSet("race", ["working"], (r) => ({ ...r, status: "completed", result: { by: "a" } })),
          b.compareAndSet("race", ["working", "input_required"], (r) => ({ ...r, status: "cancelled" }))
        ],
        { concurrency: "unbounded" }
      )
      const winners = ends.filter((r) => r !== undefined)
      expect(winners).toHaveLength(1)
      expect((yield* a.get("race"))?.status).toBe(winners[0]!.status)
      expect(yield* a.compareAndSet("race", ["working", "input_required"], (r) => r)).toBeUndefined()
      expect(yield* a.compareAndSet("unknown", ["working"], (r) => r)).toBeUndefined()
      expect(yield* a.get("unknown")).toBeUndefined()
      const taken = yield* Effect.exit(a.create(yield* record("race")))
      expect(Exit.isFailure(taken)).toBe(true)
    }).pipe(Effect.scoped), 30_000)

  it.live("a change feed on one store follows changes made through another, in order, to the terminal status; removal ends it", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* storeOn(redis.url)
      const b = yield* storeOn(redis.url)
      yield* a.create(yield* record("t"))
      const seen = yield* Effect.forkChild(Stream.runCollect(a.changes("t")), { startImmediately: true })
      // The feed's first element is the record now: once it is there, later changes are followed.
      yield* Stream.runHead(a.changes("t"))
      yield* b.compareAndSet("t", ["working"], (r) => ({ ...r, statusMessage: "one" }))
      yield* b.compareAndSet("t", ["working"], (r) => ({
        ...r,
        status: "input_required",
        inputRequests: { k: { method: "elicitation/create" } }
      }))
      yield* b.compareAndSet("t", ["input_required"], (r) => ({ ...r, status: "working", inputRequests: {}, inputResponses: { k: 1 } }))
      yield* b.compareAndSet("t", ["working"], (r) => ({ ...r, status: "completed", result: { ok: true } }))
      const states = Array.from(yield* Fiber.join(seen), (r) => [r.status, r.statusMessage])
      // The first element may already be a later record (the feed may start after a change); from there on, each one.
      const all = [["working", undefined], ["working", "one"], ["input_required", "one"], ["working", "one"], ["completed", "one"]]
      expect(all.slice(all.length - states.length)).toEqual(states)
      expect(states.length).toBeGreaterThanOrEqual(4)

      yield* a.create(yield* record("u"))
      const removed = yield* Effect.forkChild(Stream.runCollect(b.changes("u")), { startImmediately: true })
      yield* Stream.runHead(b.changes("u"))
      yield* a.remove("u")
      expect(Array.from(yield* Fiber.join(removed), (r) => r.status)).toEqual(["working"])
      expect(Array.from(yield* Stream.runCollect(b.changes("unknown")))).toEqual([])
    }).pipe(Effect.scoped), 30_000)

  it.live("a task's key expires at its deadline: reads find nothing, followers end, no key is left", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* storeOn(redis.url)
      const b = yield* storeOn(redis.url)
      // Long enough for the create, the read and the follower's first read below on a loaded machine.
      yield* a.create(yield* record("short", { ttlMs: 1500 }))
      yield* a.create(yield* record("forever", { ttlMs: null }))
      expect((yield* b.get("short"))?.taskId).toBe("short")
      // The follower ends when the task does: at its deadline, though nothing announced it.
      const followed = yield* Stream.runCollect(b.changes("short"))
      expect(Array.from(followed, (r) => r.status)).toEqual(["working"])
      expect(yield* a.get("short")).toBeUndefined()
      expect(yield* keys(redis.url)).toEqual([`${PREFIX}task:{forever}`])
      yield* a.remove("forever")
      expect(yield* keys(redis.url)).toEqual([])
    }).pipe(Effect.scoped), 30_000)

  it.live("a working task whose instance holds no liveness mark is failed once, whichever stores read it", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const stores = [yield* storeOn(redis.url), yield* storeOn(redis.url), yield* storeOn(redis.url)]
      yield* stores[0]!.create(yield* record("orphan", { instance: "gone-instance" }))
      const reads = yield* Effect.all(stores.flatMap((s) => [s.get("orphan"), s.get("orphan")]), { concurrency: "unbounded" })
      for (const r of reads) {
        expect(r).toMatchObject({ status: "failed", error: { code: -32603, message: RedisTaskStore.OWNER_GONE_MESSAGE } })
      }
      // Created, then failed: one change, however many readers saw the instance gone.
      expect(yield* xlen(redis.url, `${PREFIX}task:{orphan}`)).toBe(2)
      // A task of no instance (a store of one process) is left alone.
      yield* stores[0]!.create(yield* record("plain"))
      expect((yield* stores[1]!.get("plain"))?.status).toBe("working")
    }).pipe(Effect.scoped), 30_000)

  it.live("the liveness mark lives while a task is held; released, followers elsewhere see the task fail", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* storeOn(redis.url, { leaseMs: 600 })
      const b = yield* storeOn(redis.url, { leaseMs: 600 })
      const held = yield* Scope.make()
      yield* running(a, "held", held)
      const mark = `${PREFIX}task-owner:${a.instance!.id}`
      expect(yield* keys(redis.url)).toEqual([mark, `${PREFIX}task:{held}`].sort())
      // Past several leases, the renewed mark keeps the task working.
      yield* Effect.sleep(1_500)
      expect((yield* b.get("held"))?.status).toBe("working")
      const seen = yield* Effect.forkChild(Stream.runCollect(b.changes("held")), { startImmediately: true })
      yield* Stream.runHead(b.changes("held"))
      yield* Scope.close(held, Exit.void)
      expect(yield* keys(redis.url)).toEqual([`${PREFIX}task:{held}`])
      const states = Array.from(yield* Fiber.join(seen), (r) => r.status)
      expect(states[states.length - 1]).toBe("failed")
      expect((yield* a.get("held"))?.statusMessage).toBe(RedisTaskStore.OWNER_GONE_MESSAGE)
    }).pipe(Effect.scoped), 30_000)

  it.live("Redis down: every operation fails at once with TaskStoreError, and works again once Redis is back", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* storeOn(redis.url)
      yield* a.create(yield* record("before"))
      yield* redis.kill
      const failures = yield* Effect.all([
        Effect.flip(a.get("before")),
        Effect.flip(a.create(yield* record("during"))),
        Effect.flip(a.compareAndSet("before", ["working"], (r) => r)),
        Effect.flip(a.remove("before")),
        Effect.flip(Stream.runCollect(a.changes("before"))),
        Effect.flip(Effect.scoped(a.instance!.hold))
      ])
      for (const e of failures) expect(e._tag).toBe("TaskStoreError")
      yield* redis.start
      // The store reconnects by itself (append-only file: the task is still there).
      let status: string | undefined
      for (let i = 0; i < 200 && status === undefined; i++) {
        status = yield* a.get("before").pipe(Effect.map((r) => r?.status), Effect.catch(() => Effect.as(Effect.sleep(50), undefined)))
      }
      expect(status).toBe("working")
    }).pipe(Effect.scoped), 30_000)
})
