/**
 * Properties of the stdio client transport.
 *
 * 1. Framing: whatever way the bytes are split into chunks, LineFramer yields
 *    the same lines (multi-byte UTF-8 and CRLF included), and the same
 *    oversized-line reports under a limit.
 * 2. Settlement: under any interleaving of responses (valid or malformed),
 *    timeouts, caller aborts and process death, every request settles exactly once with the outcome
 *    of the earliest event, nothing stays pending, the server hears
 *    `notifications/cancelled` for exactly the abandoned requests, and the
 *    process (nor a grandchild, nor a detached helper in a session of its own)
 *    does not outlive its scope. Many runs use an in-memory process
 *    behind effect's own ChildProcessSpawner interface under the TestClock
 *    (the transport's code runs unchanged); fewer runs use real processes.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import {
  Arbitrary,
  Cause,
  Deferred,
  Duration,
  Effect,
  Exit,
  Fiber,
  FiberSet,
  Queue,
  Schema,
  Scope,
  Sink,
  Stream
} from "effect"
import { TestClock } from "effect/testing"
import { ChildProcessSpawner } from "effect/process"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import type { Diagnostic } from "../../src/client/ClientTransport.ts"
import * as LineFramer from "../../src/internal/LineFramer.ts"
import { malformedResponses, malformedShapeNames } from "../fixtures/malformed-responses.ts"
import { awaitGone, isAlive, pidFile, testServer } from "../fixtures/stdio-helpers.ts"

const int = (minimum: number, maximum: number) =>
  Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum }))).pipe(Arbitrary.map((n) => n + 0))
const maybe = <A>(arb: Arbitrary.Arbitrary<A>): Arbitrary.Arbitrary<A | null> =>
  Arbitrary.all([Arbitrary.schema(Schema.Boolean), arb]).pipe(Arbitrary.map(([some, a]) => (some ? a : null)))

// ---------------------------------------------------------------------------
// 1. Framing

const char = Arbitrary.schema(Schema.Literals(["a", "Z", "0", " ", "\"", "\\", "\n", "\r", "é", "ß", "中", "😀", "€", "\u0000"]))
const text = Arbitrary.array(char, { maxLength: 24 }).pipe(Arbitrary.map((cs) => cs.join("")))
const messageArb = Arbitrary.all({ s: text, n: int(-1000, 1000) })
const framed = Arbitrary.all({
  messages: Arbitrary.array(Arbitrary.all({ message: messageArb, crlf: Arbitrary.schema(Schema.Boolean) }), {
    minLength: 1,
    maxLength: 12
  }),
  cuts: Arbitrary.array(int(0, 10_000), { maxLength: 40 }),
  limit: int(8, 120)
})

const encoder = new TextEncoder()

const build = (messages: ReadonlyArray<{ message: unknown; crlf: boolean }>) => {
  const lines = messages.map(({ crlf, message }) => ({ json: JSON.stringify(message), eol: crlf ? "\r\n" : "\n" }))
  return { lines, bytes: encoder.encode(lines.map((l) => l.json + l.eol).join("")) }
}

const splitAt = (bytes: Uint8Array, cuts: ReadonlyArray<number>): Array<Uint8Array> => {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
  const chunks: Array<Uint8Array> = []
  let at = 0
  for (const p of points) {
    if (p > at) chunks.push(bytes.subarray(at, p))
    at = Math.max(at, p)
  }
  if (at < bytes.length) chunks.push(bytes.subarray(at))
  return chunks
}

const frameAll = (chunks: ReadonlyArray<Uint8Array>, limit: number) => {
  const framer = LineFramer.make(limit)
  const frames: Array<LineFramer.Frame> = []
  for (const chunk of chunks) framer.push(chunk, (f) => frames.push(f))
  framer.end((f) => frames.push(f))
  return { frames, buffered: framer.buffered() }
}

describe("LineFramer properties", () => {
  it.prop("any chunk split yields exactly the encoded lines", { input: framed }, ({ input }) => {
    const { bytes, lines } = build(input.messages)
    const { buffered, frames } = frameAll(splitAt(bytes, input.cuts), Number.MAX_SAFE_INTEGER)
    expect(frames).toEqual(lines.map((l) => ({ _tag: "Line", text: l.json })))
    expect(buffered).toBe(0)
    // And each line decodes back to its message.
    expect(frames.map((f) => JSON.parse((f as { text: string }).text))).toEqual(input.messages.map((m) => m.message))
  }, { arbitrary: { runs: 300 } })

  it.prop(
    "under a limit, the same lines pass and the same lines are reported too large, whatever the split",
    { input: framed },
    ({ input }) => {
      const { bytes, lines } = build(input.messages)
      const whole = frameAll([bytes], input.limit)
      const split = frameAll(splitAt(bytes, input.cuts), input.limit)
      // The limit counts the bytes before the newline (a CR of a CRLF included).
      const expected = lines.map((l) => {
        const size = encoder.encode(l.json + (l.eol === "\r\n" ? "\r" : "")).length
        return size > input.limit ? "TooLarge" : l.json
      })
      const shape = (frames: ReadonlyArray<LineFramer.Frame>) =>
        frames.map((f) => (f._tag === "Line" ? f.text : "TooLarge"))
      expect(shape(whole.frames)).toEqual(expected)
      expect(shape(split.frames)).toEqual(expected)
      for (const f of split.frames) if (f._tag === "TooLarge") expect(f.size).toBeGreaterThan(input.limit)
    },
    { arbitrary: { runs: 300 } }
  )
})

// ---------------------------------------------------------------------------
// 2. Settlement, in memory under the TestClock

interface RequestPlan {
  /**
   * Milliseconds. A request starts at `startAt` (after start-up); the other
   * times count from its own start, except `deathAt`, which counts from
   * start-up. Residues mod 5 keep the events that decide one request from
   * tying, while starts may coincide with other requests' events.
   */
  readonly startAt: number
  readonly respondAfter: number | null
  /** The answer is this malformed shape (see fixtures/malformed-responses.ts) instead of a result. */
  readonly malformed: string | null
  readonly timeoutAfter: number | null
  readonly abortAfter: number | null
}
interface Plan {
  readonly requests: ReadonlyArray<RequestPlan>
  readonly deathAt: number | null
}

const at = (residue: number, max = 30) => int(1, max).pipe(Arbitrary.map((k) => 5 * k + residue))
const planArb: Arbitrary.Arbitrary<Plan> = Arbitrary.all({
  requests: Arbitrary.array(
    Arbitrary.all({
      startAt: int(0, 20).pipe(Arbitrary.map((k) => 5 * k)),
      respondAfter: maybe(at(1)),
      malformed: maybe(int(0, malformedShapeNames.length - 1).pipe(Arbitrary.map((i) => malformedShapeNames[i]!))),
      timeoutAfter: maybe(at(2)),
      abortAfter: maybe(at(3))
    }),
    { minLength: 1, maxLength: 12 }
  ),
  deathAt: maybe(at(4, 50))
})

type Outcome = "success" | "malformed" | "timeout" | "aborted" | "died" | "scope"

const expectedOutcome = (r: RequestPlan, deathAt: number | null): { outcome: Outcome; at: number } => {
  const after = (d: number | null) => (d === null ? null : r.startAt + d)
  const events: Array<{ outcome: Outcome; at: number | null }> = [
    { outcome: r.malformed === null ? "success" : "malformed", at: after(r.respondAfter) },
    { outcome: "timeout", at: after(r.timeoutAfter) },
    { outcome: "aborted", at: after(r.abortAfter) },
    // A request started after the death fails at once.
    { outcome: "died", at: deathAt }
  ]
  let best: { outcome: Outcome; at: number } = { outcome: "scope", at: Number.POSITIVE_INFINITY }
  for (const e of events) if (e.at !== null && e.at < best.at) best = { outcome: e.outcome, at: e.at }
  return best
}

const outcomeOf = (exit: Exit.Exit<unknown, unknown>): Outcome | string => {
  if (Exit.isSuccess(exit)) return "success"
  if (Exit.hasInterrupts(exit)) return "aborted"
  const error = Cause.squash(exit.cause) as { _tag?: string; reason?: string }
  if (error._tag === "RequestTimeout") return "timeout"
  if (error._tag === "MalformedMessage") return "malformed"
  if (error._tag === "TransportClosed") return error.reason === "process exited" ? "died" : "scope"
  return `unexpected ${String(error._tag)}`
}

interface FakeServerLog {
  /** Indexes (into the plan) of the requests the server was told were cancelled. */
  cancelled: Array<number>
  exited: boolean
}

/**
 * An in-memory server process behind effect's ChildProcessSpawner interface:
 * it answers `work` requests at their planned times (ignoring cancellations,
 * so late answers happen), records cancellations, dies at `deathAt` and exits
 * on stdin EOF, like a real server.
 */
const fakeSpawner = (plan: Plan, log: FakeServerLog) =>
  ChildProcessSpawner.make(() =>
    Effect.gen(function*() {
      const stdout = yield* Queue.unbounded<Uint8Array, Cause.Done>()
      const stderr = yield* Queue.unbounded<Uint8Array, Cause.Done>()
      const exit = yield* Deferred.make<ChildProcessSpawner.ExitCode>()
      const work = yield* FiberSet.make()
      const indexOf = new Map<unknown, number>()
      const exitWith = (code: number, lastWords?: string) =>
        Effect.suspend(() => {
          if (log.exited) return Effect.void
          log.exited = true
          if (lastWords !== undefined) Queue.offerUnsafe(stderr, encoder.encode(lastWords + "\n"))
          Queue.endUnsafe(stdout)
          Queue.endUnsafe(stderr)
          Deferred.doneUnsafe(exit, Exit.succeed(ChildProcessSpawner.ExitCode(code)))
          return FiberSet.clear(work)
        })
      const framer = LineFramer.make(1 << 20)
      const replies: Array<Effect.Effect<void>> = []
      const onFrame = (frame: LineFramer.Frame) => {
        if (frame._tag !== "Line" || log.exited) return
        const m = JSON.parse(frame.text)
        if (m.method === "notifications/cancelled") {
          log.cancelled.push(indexOf.get(m.params.requestId)!)
        } else if (m.method === "work") {
          indexOf.set(m.id, m.params.i)
          const { malformed, respondAfter } = plan.requests[m.params.i]!
          if (respondAfter === null) return
          replies.push(
            Effect.andThen(
              Effect.sleep(Duration.millis(respondAfter)),
              Effect.sync(() => {
                const answer = malformed === null
                  ? { jsonrpc: "2.0", id: m.id, result: { i: m.params.i } }
                  : malformedResponses[malformed]!.answer(m.id)
                const reply = JSON.stringify(answer) + "\n"
                Queue.offerUnsafe(stdout, encoder.encode(reply))
              })
            )
          )
        }
      }
      const stdin = Sink.forEachArray((chunks: ReadonlyArray<Uint8Array>) =>
        Effect.suspend(() => {
          for (const c of chunks) framer.push(c, onFrame)
          const started = replies.splice(0)
          return Effect.forEach(started, (reply) => FiberSet.run(work, reply), { discard: true })
        })
      ).pipe(Sink.ensuring(exitWith(0)))
      if (plan.deathAt !== null) {
        const deathAt = plan.deathAt
        yield* Effect.forkScoped(Effect.andThen(Effect.sleep(Duration.millis(deathAt)), exitWith(1, "fake server dying")))
      }
      yield* Effect.addFinalizer(() => exitWith(137))
      return ChildProcessSpawner.makeHandle({
        pid: ChildProcessSpawner.ProcessId(-1),
        exitCode: Deferred.await(exit),
        isRunning: Effect.sync(() => !log.exited),
        kill: () => exitWith(143),
        stdin,
        stdout: Stream.fromQueue(stdout),
        stderr: Stream.fromQueue(stderr),
        all: Stream.empty,
        getInputFd: () => Sink.drain,
        getOutputFd: () => Stream.empty,
        unref: Effect.succeed(Effect.void)
      })
    })
  )

const runPlan = (plan: Plan) =>
  Effect.gen(function*() {
    const log: FakeServerLog = { cancelled: [], exited: false }
    const scope = yield* Scope.make()
    const t = yield* StdioClientTransport.make({ command: "in-memory-server" }).pipe(
      Scope.provide(scope),
      Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, fakeSpawner(plan, log))
    )
    const diagnostics = yield* Stream.runCollect(t.diagnostics).pipe(Effect.forkChild({ startImmediately: true }))
    const fibers: Array<Fiber.Fiber<unknown, unknown>> = []
    for (const [i, r] of plan.requests.entries()) {
      const request = t.request("work", { i }, {
        timeout: r.timeoutAfter === null ? Duration.infinity : Duration.millis(r.timeoutAfter)
      })
      const fiber = yield* Effect.andThen(Effect.sleep(Duration.millis(r.startAt)), request).pipe(
        Effect.forkChild({ startImmediately: true })
      )
      fibers.push(fiber)
      if (r.abortAfter !== null) {
        yield* Effect.forkChild(
          Effect.andThen(Effect.sleep(Duration.millis(r.startAt + r.abortAfter)), Fiber.interrupt(fiber))
        )
      }
    }
    yield* TestClock.adjust("600 millis")
    const settledBeforeClose = fibers.map((f) => f.pollUnsafe() !== undefined)
    yield* Scope.close(scope, Exit.void)
    const outcomes = yield* Effect.forEach(fibers, (f) => Effect.map(Fiber.await(f), outcomeOf))
    const seen = yield* Fiber.join(diagnostics)
    return { t, log, outcomes, settledBeforeClose, diagnostics: seen as ReadonlyArray<Diagnostic> }
  })

describe("settlement properties (in-memory process, TestClock)", () => {
  it.effect.prop(
    "every request settles once, with the earliest event's outcome; nothing is left behind",
    { plan: planArb },
    ({ plan }) =>
      Effect.gen(function*() {
        const { diagnostics, log, outcomes, settledBeforeClose, t } = yield* runPlan(plan)
        const expected = plan.requests.map((r) => expectedOutcome(r, plan.deathAt))
        expect(outcomes).toEqual(expected.map((e) => e.outcome))
        expect(settledBeforeClose).toEqual(expected.map((e) => e.outcome !== "scope"))
        expect(yield* t.pendingCount).toBe(0)
        // The server hears a cancellation for exactly the requests abandoned while it lived.
        const abandoned = expected.flatMap((e, i) => (e.outcome === "timeout" || e.outcome === "aborted" ? [i] : []))
        expect([...log.cancelled].sort((a, b) => a - b)).toEqual(abandoned)
        // Answers that come after their request was abandoned are reported, never delivered twice:
        // a valid one as an unknown response, a malformed one as an invalid message.
        const late = plan.requests.filter((r, i) => {
          const e = expected[i]!
          const answeredAt = r.respondAfter === null ? null : r.startAt + r.respondAfter
          return (e.outcome === "timeout" || e.outcome === "aborted") && answeredAt !== null &&
            (plan.deathAt === null || answeredAt < plan.deathAt)
        })
        expect(diagnostics.filter((d) => d._tag === "UnknownResponse").length).toBe(
          late.filter((r) => r.malformed === null).length
        )
        expect(diagnostics.filter((d) => d._tag === "InvalidMessage").length).toBe(
          late.filter((r) => r.malformed !== null).length
        )
        expect(log.exited).toBe(true)
        const closed = yield* t.awaitClosed
        if (plan.deathAt !== null) {
          expect(closed).toMatchObject({ reason: "process exited", exitCode: 1, stderrTail: ["fake server dying"] })
        } else {
          expect(closed.reason).toBe("transport scope closed")
        }
      }),
    { arbitrary: { runs: 200 } }
  )
})

// ---------------------------------------------------------------------------
// 2'. Settlement with real processes (fewer runs; real timing, so the
// assertions are the invariants rather than the exact winner)

const realPlanArb = Arbitrary.all({
  requests: Arbitrary.array(
    Arbitrary.all({ respondAt: maybe(int(0, 120)), timeoutAt: maybe(int(20, 150)), abortAt: maybe(int(0, 150)) }),
    { minLength: 1, maxLength: 8 }
  ),
  deathAt: maybe(int(10, 150)),
  grandchild: Arbitrary.schema(Schema.Boolean),
  detachedHelper: Arbitrary.schema(Schema.Boolean)
})

describe("settlement properties (real processes)", () => {
  it.live("every request settles once, nothing stays pending, no process outlives its scope", () =>
    Effect.gen(function*() {
      const result = yield* Arbitrary.checkEffect(
        realPlanArb,
        (plan) =>
          Effect.gen(function*() {
            const pids = yield* pidFile
            const scope = yield* Scope.make()
            const t = yield* StdioClientTransport.make(
              testServer(["--ignore-stdin-eof", `--pid-file=${pids}`], {
                shutdown: { gracePeriod: "50 millis", killAfter: "100 millis", descendantSampleInterval: "10 millis" }
              })
            ).pipe(Scope.provide(scope))
            const grandchild = plan.grandchild
              ? ((yield* t.request("test/spawnGrandchild")) as { pid: number }).pid
              : undefined
            // Recorded before the plan starts, since the server may die before the scope closes.
            const helper = plan.detachedHelper
              ? ((yield* t.request("test/spawnDetachedHelper")) as { pid: number }).pid
              : undefined
            if (helper !== undefined) {
              let recorded = false
              for (let i = 0; i < 500 && !recorded; i++) {
                recorded = (yield* t.descendants).includes(helper)
                if (!recorded) yield* Effect.sleep("10 millis")
              }
            }
            const fibers = yield* Effect.forEach(plan.requests, (r) =>
              Effect.gen(function*() {
                const call = r.respondAt === null
                  ? t.request("hang", undefined, { timeout: r.timeoutAt ?? Duration.infinity })
                  : t.request("slow", { ms: r.respondAt }, { timeout: r.timeoutAt ?? Duration.infinity })
                const fiber = yield* Effect.forkChild(call, { startImmediately: true })
                if (r.abortAt !== null) {
                  yield* Effect.forkChild(Effect.andThen(Effect.sleep(Duration.millis(r.abortAt)), Fiber.interrupt(fiber)))
                }
                return fiber
              }))
            if (plan.deathAt !== null) {
              yield* Effect.forkChild(
                Effect.andThen(Effect.sleep(Duration.millis(plan.deathAt)), Effect.ignore(t.request("test/exit", { code: 9 })))
              )
            }
            // Requests with no event at all only end with the scope; settle the rest first.
            const open = plan.requests.map((r) => r.respondAt === null && r.timeoutAt === null && r.abortAt === null)
            const dies = plan.deathAt !== null
            yield* Effect.forEach(fibers, (f, i) => (open[i] && !dies ? Effect.void : Fiber.await(f)), { discard: true })
            let serverCancellations: Array<unknown> | undefined
            if (!dies) {
              serverCancellations = ((yield* t.request("test/cancellations")) as { cancellations: Array<unknown> })
                .cancellations
            }
            yield* Scope.close(scope, Exit.void)
            const outcomes = yield* Effect.forEach(fibers, (f) => Effect.map(Fiber.await(f), outcomeOf))
            const okOutcome = plan.requests.every((r, i) => {
              const o = outcomes[i]
              switch (o) {
                case "success":
                  return r.respondAt !== null
                case "timeout":
                  return r.timeoutAt !== null
                case "aborted":
                  return r.abortAt !== null
                case "died":
                  return dies
                case "scope":
                  return open[i] === true || dies
                default:
                  return false
              }
            })
            const abandoned = outcomes.filter((o) => o === "timeout" || o === "aborted").length
            const checks = {
              okOutcome,
              noPending: (yield* t.pendingCount) === 0,
              childGone: !isAlive(t.pid),
              grandchildGone: grandchild === undefined || !isAlive(grandchild),
              helperGone: helper === undefined || (yield* awaitGone(helper, 2_000)),
              cancellations: serverCancellations === undefined || serverCancellations.length === abandoned
            }
            if (!Object.values(checks).every(Boolean)) {
              yield* Effect.logError("real-process settlement check failed", { plan, outcomes, checks })
            }
            return Object.values(checks).every(Boolean)
          }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
        { runs: 12 }
      )
      expect(Arbitrary.formatCheckFailure(result)).toBeUndefined()
      expect(result._tag).toBe("Passed")
    }), 120_000)
})
