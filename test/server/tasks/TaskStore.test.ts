/**
 * The in-memory task store: compare-and-set only from an expected status,
 * expiry at the TTL (reads and the change feed alike), and a change feed
 * that starts with the current record and ends at a terminal status.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as TaskStore from "../../../src/server/TaskStore.ts"

const record = (taskId: string, ttlMs: number | null): TaskStore.TaskRecord => ({
  taskId,
  owner: "principal:a",
  status: "working",
  createdAt: 0,
  lastUpdatedAt: 0,
  ttlMs,
  inputRequests: {},
  inputResponses: {},
  inputCount: 0
})

describe("TaskStore (memory)", () => {
  it.effect("compare-and-set applies only from an expected status; a terminal record stays as it is", () =>
    Effect.gen(function*() {
      const store = yield* TaskStore.makeMemory
      yield* store.create(record("t", null))
      const done = yield* store.compareAndSet("t", ["working"], (r) => ({ ...r, status: "completed", result: { ok: true } }))
      expect(done?.status).toBe("completed")
      expect(yield* store.compareAndSet("t", ["working", "input_required"], (r) => ({ ...r, status: "cancelled" }))).toBeUndefined()
      expect((yield* store.get("t"))?.status).toBe("completed")
      expect(yield* store.compareAndSet("missing", ["working"], (r) => r)).toBeUndefined()
    }).pipe(Effect.scoped))

  it.effect("a record is gone at its TTL, not before; one without a TTL stays", () =>
    Effect.gen(function*() {
      const store = yield* TaskStore.makeMemory
      yield* store.create(record("short", 1_000))
      yield* store.create(record("forever", null))
      yield* TestClock.adjust(999)
      expect((yield* store.get("short"))?.taskId).toBe("short")
      yield* TestClock.adjust(1)
      expect(yield* store.get("short")).toBeUndefined()
      expect(yield* store.compareAndSet("short", ["working"], (r) => r)).toBeUndefined()
      expect((yield* store.get("forever"))?.taskId).toBe("forever")
    }).pipe(Effect.scoped))

  it.effect("the change feed starts with the current record, follows each change, and ends at a terminal status or removal", () =>
    Effect.gen(function*() {
      const store = yield* TaskStore.makeMemory
      yield* store.create(record("t", null))
      const seen = yield* Effect.forkChild(Stream.runCollect(store.changes("t")), { startImmediately: true })
      yield* store.compareAndSet("t", ["working"], (r) => ({ ...r, statusMessage: "half" }))
      yield* store.compareAndSet("t", ["working"], (r) => ({ ...r, status: "failed", error: { code: -1, message: "x" } }))
      expect(Array.from(yield* Fiber.join(seen), (r) => [r.status, r.statusMessage])).toEqual([
        ["working", undefined],
        ["working", "half"],
        ["failed", "half"]
      ])
      yield* store.create(record("u", null))
      const removed = yield* Effect.forkChild(Stream.runCollect(store.changes("u")), { startImmediately: true })
      yield* store.remove("u")
      expect(Array.from(yield* Fiber.join(removed), (r) => r.taskId)).toEqual(["u"])
      expect(Array.from(yield* Stream.runCollect(store.changes("unknown")))).toEqual([])
    }).pipe(Effect.scoped))
})
