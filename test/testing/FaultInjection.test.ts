import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Deferred, type Duration, Effect, Exit, Fiber, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import type { ClientTransportShape, Diagnostic } from "../../src/client/ClientTransport.ts"
import * as JsonRpc from "../../src/JsonRpc.ts"
import type { Handler } from "../../src/server/Handler.ts"
import { Arbitraries, FaultInjection } from "../../src/testing/index.ts"

/**
 * echo → { echo: params } (after `params.delayMs` when given); fail → handler failure (-32603);
 * error → a JSON-RPC error.
 */
const handler: Handler = (m) => {
  if (!("id" in m)) return Effect.succeed(null)
  const params = (m.params ?? {}) as { delayMs?: number }
  switch (m.method) {
    case "echo":
      return params.delayMs === undefined || params.delayMs === 0
        ? Effect.succeed(JsonRpc.success(m.id, { echo: m.params ?? null }))
        : Effect.succeed(JsonRpc.success(m.id, { echo: m.params ?? null })).pipe(Effect.delay(params.delayMs))
    case "fail":
      return Effect.fail("boom")
    case "error":
      return Effect.succeed(JsonRpc.failure(m.id, -32001, "nope"))
    default:
      return Effect.succeed(JsonRpc.methodNotFound(m.id, m.method))
  }
}

/** Counts diagnostics from now on (subscribed before returning). */
const countDiagnostics = (client: ClientTransportShape) =>
  Effect.gen(function*() {
    const seen: Array<Diagnostic> = []
    yield* client.diagnostics.pipe(
      Stream.runForEach((d) => Effect.sync(() => void seen.push(d))),
      Effect.forkScoped({ startImmediately: true })
    )
    return seen
  })

/** Diagnostics reach the counting fiber asynchronously: yield (a bounded number of times) until `cond` holds. */
const eventually = (cond: () => boolean, bound = 1000) =>
  Effect.gen(function*() {
    for (let i = 0; i < bound && !cond(); i++) yield* Effect.yieldNow
    return cond()
  })

/** Advances the test clock in small steps until `done` or a bound. */
const advanceUntil = (done: () => boolean, step: Duration.Input = "10 millis", bound = 1000) =>
  Effect.gen(function*() {
    for (let i = 0; i < bound && !done(); i++) yield* TestClock.adjust(step)
  })

describe("FaultInjection (commands)", () => {
  it.effect("dropNext: the request is lost and times out; nothing stays pending", () =>
    Effect.gen(function*() {
      const { client, faults } = yield* FaultInjection.makePair(handler, {}, { timeout: "1 second" })
      yield* faults.dropNext({ direction: "client-to-server" })
      const call = yield* client.request("echo", { a: 1 }).pipe(Effect.flip, Effect.forkChild)
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(call)).toMatchObject({ _tag: "RequestTimeout", method: "echo" })
      expect(yield* client.pendingCount).toBe(0)
      expect((yield* faults.stats).Drop).toBe(1)
      // The next request is not affected.
      expect(yield* client.request("echo", { a: 2 })).toEqual({ echo: { a: 2 } })
    }))

  it.effect("duplicateNext on a response: delivered once, the copy counted as an unknown response", () =>
    Effect.gen(function*() {
      const { client, faults } = yield* FaultInjection.makePair(handler)
      const diagnostics = yield* countDiagnostics(client)
      yield* faults.duplicateNext({ direction: "server-to-client" })
      expect(yield* client.request("echo", { a: 1 })).toEqual({ echo: { a: 1 } })
      expect(yield* eventually(() => diagnostics.length > 0)).toBe(true)
      expect(diagnostics.filter((d) => d._tag === "UnknownResponse")).toEqual([
        expect.objectContaining({ _tag: "UnknownResponse", id: 1 })
      ])
      expect((yield* faults.stats).Duplicate).toBe(1)
    }))

  it.effect("duplicateNext on a request: the caller still gets exactly one result", () =>
    Effect.gen(function*() {
      const { client, faults } = yield* FaultInjection.makePair(handler)
      const diagnostics = yield* countDiagnostics(client)
      yield* faults.duplicateNext({ direction: "client-to-server" })
      expect(yield* client.request("echo", { a: 1 })).toEqual({ echo: { a: 1 } })
      yield* client.request("echo", {})
      yield* eventually(() => diagnostics.length > 0, 100)
      // The server may answer both copies; the second answer is unknown to the client.
      expect(diagnostics.filter((d) => d._tag === "UnknownResponse").length).toBeLessThanOrEqual(1)
      expect(yield* client.pendingCount).toBe(0)
    }))

  it.effect("delayNext holds a frame back for the given time", () =>
    Effect.gen(function*() {
      const { client, faults } = yield* FaultInjection.makePair(handler, {}, { timeout: "10 seconds" })
      yield* faults.delayNext("500 millis", { direction: "server-to-client" })
      const call = yield* client.request("echo", { a: 1 }).pipe(Effect.forkChild)
      // The response is on its way once the fault has been applied to it.
      for (let i = 0; i < 1000 && (yield* faults.stats).Delay === 0; i++) yield* Effect.yieldNow
      expect((yield* faults.stats).Delay).toBe(1)
      yield* TestClock.adjust("499 millis")
      expect(call.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(call)).toEqual({ echo: { a: 1 } })
    }))

  it.effect("reorderNext lets the next frame overtake the held one", () =>
    Effect.gen(function*() {
      const pair = yield* FaultInjection.makePair(handler)
      const got = yield* pair.client.notifications.pipe(
        Stream.take(3),
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      yield* pair.faults.reorderNext({ direction: "server-to-client" })
      yield* pair.server.context.notify("n/1")
      yield* pair.server.context.notify("n/2")
      yield* pair.server.context.notify("n/3")
      expect((yield* Fiber.join(got)).map((n) => n.method)).toEqual(["n/2", "n/1", "n/3"])
    }))

  it.effect("corruptNext: the server answers a parse error without an id, which fails the one pending request", () =>
    Effect.gen(function*() {
      // The clock never moves: the request cannot end by its timeout.
      const { client, faults } = yield* FaultInjection.makePair(handler, {}, { timeout: "1 hour" })
      yield* faults.corruptNext({ direction: "client-to-server" })
      expect(yield* Effect.flip(client.request("echo", {}))).toMatchObject({ _tag: "RpcError", code: -32700 })
      expect(yield* client.pendingCount).toBe(0)
      const events = yield* faults.events
      expect(events[0]).toMatchObject({ direction: "client-to-server", fault: "Corrupt" })
    }), 10_000)

  it.effect("corruptNext with two requests pending: the parse error is an unknown response, the request times out", () =>
    Effect.gen(function*() {
      const { client, faults } = yield* FaultInjection.makePair(handler, {}, { timeout: "1 second" })
      const diagnostics = yield* countDiagnostics(client)
      const slow = yield* client.request("echo", { delayMs: 500 }).pipe(Effect.forkChild({ startImmediately: true }))
      yield* faults.corruptNext({ direction: "client-to-server" })
      const call = yield* client.request("echo", {}).pipe(Effect.flip, Effect.forkChild({ startImmediately: true }))
      yield* eventually(() => diagnostics.length > 0)
      expect(diagnostics).toEqual([expect.objectContaining({ _tag: "UnknownResponse", id: null })])
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(slow)).toEqual({ echo: { delayMs: 500 } })
      expect(yield* Fiber.join(call)).toMatchObject({ _tag: "RequestTimeout" })
      expect(yield* client.pendingCount).toBe(0)
    }))

  it.effect("truncateNext on a response: the client reports a malformed frame and the request times out", () =>
    Effect.gen(function*() {
      // A replay key with no rates: no random faults, but the cut point is reproducible (and not at 0 for this key).
      const { client, faults } = yield* FaultInjection.makePair(handler, { random: { replayKey: 1 } }, { timeout: "1 second" })
      const diagnostics = yield* countDiagnostics(client)
      yield* faults.truncateNext({ direction: "server-to-client" })
      const call = yield* client.request("echo", { text: "a fairly long payload to cut" }).pipe(Effect.flip, Effect.forkChild)
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(call)).toMatchObject({ _tag: "RequestTimeout" })
      yield* eventually(() => diagnostics.length > 0)
      expect(diagnostics).toEqual([expect.objectContaining({ _tag: "MalformedFrame" })])
      expect(yield* client.pendingCount).toBe(0)
    }))

  it.effect("match: only the matching frame gets the fault", () =>
    Effect.gen(function*() {
      const { client, faults } = yield* FaultInjection.makePair(handler, {}, { timeout: "1 second" })
      yield* faults.dropNext({ match: (m) => (m as { method?: string }).method === "error" })
      expect(yield* client.request("echo", { a: 1 })).toEqual({ echo: { a: 1 } })
      const call = yield* client.request("error").pipe(Effect.flip, Effect.forkChild)
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(call)).toMatchObject({ _tag: "RequestTimeout", method: "error" })
    }))

  it.effect("cut partitions the link silently until heal", () =>
    Effect.gen(function*() {
      const { client, faults } = yield* FaultInjection.makePair(handler, {}, { timeout: "1 second" })
      yield* faults.cut
      const call = yield* client.request("echo", {}).pipe(Effect.flip, Effect.forkChild)
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(call)).toMatchObject({ _tag: "RequestTimeout" })
      yield* faults.heal
      expect(yield* client.request("echo", { back: true })).toEqual({ echo: { back: true } })
      expect((yield* faults.stats).Partitioned).toBeGreaterThanOrEqual(1)
    }))

  it.effect("kill: the server dies, in-flight and later requests fail with TransportClosed", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const hanging: Handler = (m) => "id" in m ? Effect.andThen(Deferred.succeed(started, undefined), Effect.never) : Effect.succeed(null)
      const { client, faults } = yield* FaultInjection.makePair(hanging)
      const call = yield* client.request("x").pipe(Effect.flip, Effect.forkChild)
      yield* Deferred.await(started)
      yield* faults.kill
      expect(yield* Fiber.join(call)).toMatchObject({ _tag: "TransportClosed", reason: "server killed by fault injection" })
      expect(yield* Effect.flip(client.request("x"))).toMatchObject({ _tag: "TransportClosed" })
      expect(yield* client.pendingCount).toBe(0)
    }))

  it.effect("a Kill fault kills the server when the matching frame is sent", () =>
    Effect.gen(function*() {
      const { client, faults } = yield* FaultInjection.makePair(handler)
      yield* faults.next(FaultInjection.Fault.Kill(), { direction: "server-to-client" })
      expect(yield* Effect.flip(client.request("echo"))).toMatchObject({ _tag: "TransportClosed" })
      expect((yield* client.awaitClosed).reason).toBe("server killed by fault injection")
    }))

  it.effect("random mode is reproducible: the same replay key and traffic give the same fault story", () =>
    Effect.gen(function*() {
      const story = (replayKey: number) =>
        Effect.scoped(Effect.gen(function*() {
          const { client, faults } = yield* FaultInjection.makePair(handler, {
            random: { replayKey, drop: 0.2, duplicate: 0.2, corrupt: 0.2 }
          }, { timeout: "100 millis" })
          for (let i = 0; i < 20; i++) {
            const call = yield* client.request("echo", { i }).pipe(Effect.exit, Effect.forkChild)
            yield* TestClock.adjust("100 millis")
            yield* Fiber.join(call)
          }
          return (yield* faults.events).map((e) => `${e.direction}:${e.fault}`)
        }))
      const a = yield* story(7)
      const b = yield* story(7)
      const c = yield* story(8)
      expect(a).toEqual(b)
      expect(a).not.toEqual(c)
      expect(a.some((e) => !e.endsWith("Deliver"))).toBe(true)
    }))
})

// ---------------------------------------------------------------------------
// Properties

const call = Arbitrary.all({
  method: Arbitrary.schema(Schema.Literals(["echo", "echo", "echo", "fail", "error", "missing"])),
  delayMs: Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 300 }))),
  payload: Arbitraries.json
})

const SETTLED_TAGS = ["RpcError", "RequestTimeout", "TransportClosed"]

/** Runs `calls` concurrently over a faulty pair and checks the settlement invariants. */
const seenFaults = new Map<string, number>()

const settlesExactlyOnce = (random: FaultInjection.RandomFaults, calls: ReadonlyArray<typeof call extends Arbitrary.Arbitrary<infer A> ? A : never>) =>
  Effect.scoped(Effect.gen(function*() {
    const { client, faults } = yield* FaultInjection.makePair(handler, { random }, { timeout: "1 second" })
    const diagnostics = yield* countDiagnostics(client)
    const settled = calls.map(() => 0)
    const fibers = yield* Effect.forEach(calls, (c, i) =>
      client.request(c.method, { delayMs: c.delayMs, payload: c.payload }).pipe(
        Effect.exit,
        Effect.tap(() => Effect.sync(() => settled[i]!++)),
        Effect.forkScoped
      ))
    yield* advanceUntil(() => settled.every((n) => n > 0), "10 millis", 400)
    const exits = yield* Effect.forEach(fibers, Fiber.join)
    // Let duplicated and delayed stragglers arrive before counting them.
    yield* TestClock.adjust("1 second")

    const everySettledOnce = settled.every((n) => n === 1)
    const allowedOutcomes = exits.every((exit, i) => {
      if (Exit.isSuccess(exit)) {
        // A success is the right answer for this very request, never another's.
        return calls[i]!.method === "echo" &&
          JSON.stringify(exit.value) === JSON.stringify({ echo: { delayMs: calls[i]!.delayMs, payload: calls[i]!.payload } })
      }
      const error = exit.cause.reasons.find((r) => r._tag === "Fail")
      return error !== undefined && SETTLED_TAGS.includes((error.error as { _tag: string })._tag)
    })
    const nothingPending = (yield* client.pendingCount) === 0
    const stats = yield* faults.stats
    for (const [k, n] of Object.entries(stats)) seenFaults.set(k, (seenFaults.get(k) ?? 0) + n)
    const events = yield* faults.events
    // Every duplicated frame towards the client is a response (the handler sends no notifications):
    // at most one copy can complete a request, so each duplicate shows up as an unknown response.
    // (A kill drops frames still queued on the link, copies included, so the count only holds without one.)
    const duplicatedResponses = events.filter((e) => e.direction === "server-to-client" && e.fault === "Duplicate").length
    const unknownCount = () => diagnostics.filter((d) => d._tag === "UnknownResponse").length
    const duplicatesCounted = stats.Kill > 0 || (yield* eventually(() => unknownCount() >= duplicatedResponses))
    const unknown = unknownCount()
    const ok = everySettledOnce && allowedOutcomes && nothingPending && duplicatesCounted
    if (!ok) {
      yield* Effect.logError("property failed", { everySettledOnce, allowedOutcomes, nothingPending, unknown, duplicatedResponses, stats })
    }
    return ok
  }))

describe("FaultInjection (properties)", () => {
  it.effect("under random message faults every request settles exactly once and nothing stays pending", () =>
    Effect.gen(function*() {
      const result = yield* Arbitrary.checkEffect(
        Arbitrary.all({
          random: Arbitraries.randomFaults(0.2),
          calls: Arbitrary.array(call, { minLength: 1, maxLength: 12 })
        }),
        ({ calls, random }) => settlesExactlyOnce(random, calls),
        { runs: 60, seed: 4242 }
      )
      expect(Arbitrary.formatCheckFailure(result)).toBeUndefined()
      // The runs did meet every message-level fault.
      for (const kind of ["Drop", "Delay", "Duplicate", "Reorder", "Corrupt", "Truncate"]) {
        expect(seenFaults.get(kind) ?? 0).toBeGreaterThan(0)
      }
    }))

  it.effect("with cuts and kills in the mix too, every request still settles exactly once", () =>
    Effect.gen(function*() {
      const result = yield* Arbitrary.checkEffect(
        Arbitrary.all({
          random: Arbitrary.map(Arbitraries.randomFaults(0.1), (r) => ({ ...r, cut: 0.03, kill: 0.03 })),
          calls: Arbitrary.array(call, { minLength: 1, maxLength: 12 })
        }),
        ({ calls, random }) => settlesExactlyOnce(random, calls),
        { runs: 40, seed: 99 }
      )
      expect(Arbitrary.formatCheckFailure(result)).toBeUndefined()
      expect(seenFaults.get("Kill") ?? 0).toBeGreaterThan(0)
      expect(seenFaults.get("Cut") ?? 0).toBeGreaterThan(0)
    }))

  it.effect("duplicated responses are counted as unknown responses, never delivered twice", () =>
    Effect.gen(function*() {
      const result = yield* Arbitrary.checkEffect(
        Arbitrary.all({
          replayKey: Arbitrary.schema(Schema.Int),
          calls: Arbitrary.array(call, { minLength: 1, maxLength: 10 })
        }),
        ({ calls, replayKey }) =>
          Effect.scoped(Effect.gen(function*() {
            const { client } = yield* FaultInjection.makePair(handler, {
              random: { replayKey, duplicate: 1, directions: ["server-to-client"] }
            }, { timeout: "10 seconds" })
            const diagnostics = yield* countDiagnostics(client)
            const results = yield* Effect.forEach(
              calls,
              (c) => client.request(c.method, { payload: c.payload }).pipe(Effect.exit),
              { concurrency: "unbounded" }
            )
            const unknown = () => diagnostics.filter((d) => d._tag === "UnknownResponse").length
            yield* eventually(() => unknown() >= calls.length)
            // Every call got its one answer (success or RpcError), and every response's twin was counted, once.
            return results.every((e, i) =>
              Exit.isSuccess(e)
                ? JSON.stringify(e.value) === JSON.stringify({ echo: { payload: calls[i]!.payload } })
                : e.cause.reasons.some((r) => r._tag === "Fail" && r.error._tag === "RpcError")
            ) && unknown() === calls.length && (yield* client.pendingCount) === 0
          })),
        { runs: 40, seed: 5 }
      )
      expect(Arbitrary.formatCheckFailure(result)).toBeUndefined()
    }))
})
