/**
 * The correlator on its own, with in-test senders: `isPending` follows an
 * entry from registration to whatever settles it, on both request paths, and
 * a buffered request settles, times out and is abandoned by the same rules
 * as a `call`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as JsonRpc from "../../src/JsonRpc.ts"
import { RequestTimeout, TransportClosed } from "../../src/McpError.ts"
import * as Correlation from "../../src/internal/Correlation.ts"

/** A correlator whose sends land in `sent` and whose cancellations land in `cancelled`. */
const setup = Effect.gen(function*() {
  const sent: Array<JsonRpc.JsonRpcRequest> = []
  const cancelled: Array<string> = []
  const correlation = Correlation.make({
    clock: yield* Effect.clockWith(Effect.succeed),
    cancel: (id, reason) => Effect.sync(() => void cancelled.push(`${id}: ${reason}`))
  })
  const write = (message: JsonRpc.JsonRpcRequest): undefined => void sent.push(message)
  const noQueue = (): Correlation.Queued => {
    throw new Error("the writer always has room here")
  }
  return {
    correlation,
    sent,
    cancelled,
    buffered: (timeoutMs?: number) =>
      correlation.callBuffered<never>("tools/call", {}, write, noQueue, { timeoutMs }).pipe(
        Effect.forkChild({ startImmediately: true })
      ),
    called: (timeoutMs?: number) =>
      correlation.call("tools/call", {}, (message) => Effect.sync(() => void sent.push(message)), { timeoutMs }).pipe(
        Effect.forkChild({ startImmediately: true })
      )
  }
})

describe("Correlation", () => {
  for (const path of ["call", "callBuffered"] as const) {
    describe(path, () => {
      const start = (s: Effect.Success<typeof setup>, timeoutMs?: number) =>
        path === "call" ? s.called(timeoutMs) : s.buffered(timeoutMs)

      it.effect("isPending holds from the send until the response, and the caller gets the result", () =>
        Effect.gen(function*() {
          const s = yield* setup
          const fiber = yield* start(s)
          const id = s.sent[0]!.id
          expect(s.correlation.isPending(id)).toBe(true)
          expect(s.correlation.isPending(id === 1 ? 2 : 1)).toBe(false)
          expect(s.correlation.complete(JsonRpc.success(id, { ok: true }))).toBe(true)
          expect(s.correlation.isPending(id)).toBe(false)
          expect(yield* Fiber.join(fiber)).toEqual({ ok: true })
          expect(s.correlation.complete(JsonRpc.success(id, { ok: true }))).toBe(false)
          expect(s.correlation.unknownResponses()).toBe(1)
        }))

      it.effect("a timeout fails the caller with RequestTimeout, ends isPending and tells the peer", () =>
        Effect.gen(function*() {
          const s = yield* setup
          const fiber = yield* start(s, 1000)
          const id = s.sent[0]!.id
          yield* TestClock.adjust(1000)
          const exit = yield* Fiber.await(fiber)
          expect(Exit.isFailure(exit) && exit.cause.reasons[0]?._tag === "Fail" && exit.cause.reasons[0].error)
            .toBeInstanceOf(RequestTimeout)
          expect(s.correlation.isPending(id)).toBe(false)
          expect(s.cancelled).toEqual([`${id}: Request timeout after 1000ms`])
          expect(s.correlation.pending()).toBe(0)
        }))

      it.effect("an interrupted caller leaves the map and the peer hears it was cancelled", () =>
        Effect.gen(function*() {
          const s = yield* setup
          const fiber = yield* start(s, 1000)
          const id = s.sent[0]!.id
          yield* Fiber.interrupt(fiber)
          expect(s.correlation.isPending(id)).toBe(false)
          expect(s.correlation.pending()).toBe(0)
          expect(s.cancelled).toEqual([`${id}: Request cancelled by the caller`])
        }))

      it.effect("close fails every caller with its error and nothing is pending after", () =>
        Effect.gen(function*() {
          const s = yield* setup
          const a = yield* start(s, 1000)
          const b = yield* start(s)
          const error = new TransportClosed({ reason: "test" })
          s.correlation.close(error)
          expect(s.sent.map((m) => s.correlation.isPending(m.id))).toEqual([false, false])
          for (const fiber of [a, b]) {
            const exit = yield* Fiber.await(fiber)
            expect(Exit.isFailure(exit) && exit.cause.reasons[0]?._tag === "Fail" && exit.cause.reasons[0].error)
              .toBe(error)
          }
          expect(s.cancelled).toEqual([])
        }))
    })
  }

  it.effect("buffered requests that start no timer of their own (no timeout, or a later deadline) are abandoned on interruption too", () =>
    Effect.gen(function*() {
      const s = yield* setup
      // The first starts the deadline timer; the second's deadline is later, the third has none.
      const first = yield* s.buffered(1000)
      const later = yield* s.buffered(1000)
      const untimed = yield* s.buffered()
      const [a, b, c] = s.sent.map((m) => m.id)
      yield* Fiber.interrupt(later)
      yield* Fiber.interrupt(untimed)
      expect(s.cancelled).toEqual([`${b}: Request cancelled by the caller`, `${c}: Request cancelled by the caller`])
      expect(s.correlation.pendingIds()).toEqual([a])
      expect(s.correlation.complete(JsonRpc.success(a!, { ok: true }))).toBe(true)
      expect(yield* Fiber.join(first)).toEqual({ ok: true })
      expect(s.correlation.pending()).toBe(0)
    }))

  it.effect("a buffered request answered at once resumes its caller with the answer, with no timer or without", () =>
    Effect.gen(function*() {
      const s = yield* setup
      const timed = yield* s.buffered(1000)
      const untimed = yield* s.buffered()
      const [a, b] = s.sent.map((m) => m.id)
      expect(s.correlation.complete(JsonRpc.success(b!, { n: 2 }))).toBe(true)
      expect(s.correlation.complete(JsonRpc.success(a!, { n: 1 }))).toBe(true)
      expect(yield* Fiber.join(untimed)).toEqual({ n: 2 })
      expect(yield* Fiber.join(timed)).toEqual({ n: 1 })
      yield* TestClock.adjust(2000)
      expect(s.cancelled).toEqual([])
    }))

  it.effect("a buffered request still waiting for room is withdrawn from the writer when its caller is interrupted", () =>
    Effect.gen(function*() {
      const cancelled: Array<string> = []
      const withdrawn: Array<string> = []
      const correlation = Correlation.make({
        clock: yield* Effect.clockWith(Effect.succeed),
        cancel: (id, reason) => Effect.sync(() => void cancelled.push(`${id}: ${reason}`))
      })
      const fiber = yield* correlation.callBuffered<never>(
        "tools/call",
        {},
        () => Correlation.WouldBlock,
        (message) => ({ withdraw: () => void withdrawn.push(String(message.id)) }),
        { timeoutMs: 1000 }
      ).pipe(Effect.forkChild({ startImmediately: true }))
      expect(correlation.isPending(1)).toBe(true)
      expect(correlation.sole()).toBeUndefined()
      yield* Fiber.interrupt(fiber)
      expect(withdrawn).toEqual(["1"])
      expect(correlation.isPending(1)).toBe(false)
      expect(cancelled).toEqual(["1: Request cancelled by the caller"])
    }))

  it.effect("a buffered request whose envelope the writer refuses fails with the writer's error and leaves the map", () =>
    Effect.gen(function*() {
      const correlation = Correlation.make({
        clock: yield* Effect.clockWith(Effect.succeed),
        cancel: () => Effect.void
      })
      const exit = yield* correlation.callBuffered<string>(
        "tools/call",
        {},
        () => Correlation.WouldBlock,
        (_, done) => {
          done("writer closed")
          return { withdraw: () => {} }
        },
        { timeoutMs: 1000 }
      ).pipe(Effect.exit)
      expect(exit).toEqual(Exit.fail("writer closed"))
      expect(correlation.pending()).toBe(0)
    }))
})
