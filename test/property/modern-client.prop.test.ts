/**
 * Properties of `McpClient` in the stateless era (2026-07-28).
 *
 * Concurrent tool calls against a scripted stateless server, each with a
 * fault of its own (a complete answer, one without `resultType`, an unknown
 * `resultType`, `input_required` for k rounds, sometimes more than
 * `maxInputRounds`, a 1 MiB `requestState`, the era's error codes, no answer,
 * a malformed answer), callers that give up at any point (between input
 * rounds too), and a server that dies or a scope that closes mid-call.
 *
 * Every call settles exactly once with the typed outcome of the earliest
 * event; `pendingCount` returns to its idle value (one while a listen stream
 * is held); nothing is pending once the scope closes; no child process
 * outlives its scope. Many runs use the in-memory pair under the TestClock,
 * where the winner is known exactly; fewer runs use a real stdio child.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Cause, Duration, Effect, Exit, Fiber, Schema, Scope, SubscriptionRef } from "effect"
import { TestClock } from "effect/testing"
import { fileURLToPath } from "node:url"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as McpErrorGroup from "../../src/McpErrorGroup.ts"
import * as JsonRpc from "../../src/JsonRpc.ts"
import type { Handler } from "../../src/server/Handler.ts"
import { malformedShapeNames } from "../fixtures/malformed-responses.ts"
import { answerCall, type CallFault, discoverResult, MODERN, outcomeOfFault } from "../fixtures/modern-faults.ts"
import { awaitGone, pidFile, readPids } from "../fixtures/stdio-helpers.ts"

const int = (minimum: number, maximum: number) =>
  Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum }))).pipe(Arbitrary.map((n) => n + 0))
const maybe = <A>(arb: Arbitrary.Arbitrary<A>): Arbitrary.Arbitrary<A | null> =>
  Arbitrary.all([Arbitrary.schema(Schema.Boolean), arb]).pipe(Arbitrary.map(([some, a]) => (some ? a : null)))
const bool = Arbitrary.schema(Schema.Boolean)

const ERROR_CODES = [-32020, -32021, -32022, -32601] as const

/** Faults a server can show over any transport (a process that exits is the stdio part's). */
const faultArb = (maxK: number): Arbitrary.Arbitrary<CallFault> =>
  Arbitrary.all({
    kind: int(0, 8),
    k: int(0, maxK),
    code: int(0, ERROR_CODES.length - 1),
    shape: int(0, malformedShapeNames.length - 1)
  }).pipe(Arbitrary.map(({ code, k, kind, shape }): CallFault => {
    switch (kind) {
      case 0:
        return { _tag: "Complete" }
      case 1:
        return { _tag: "NoResultType" }
      case 2:
        return { _tag: "UnknownResultType" }
      case 3:
      case 4:
        return { _tag: "InputRounds", k }
      case 5:
        return { _tag: "BigState" }
      case 6:
        return { _tag: "Error", code: ERROR_CODES[code]! }
      case 7:
        return { _tag: "Silent" }
      default:
        return { _tag: "Malformed", shape: malformedShapeNames[shape]! }
    }
  }))

/** The flat error of a failed call (the client fails with its group). */
const failureOf = (exit: Exit.Exit<unknown, unknown>): unknown =>
  McpErrorGroup.reasonOf(Cause.squash((exit as Exit.Failure<unknown, unknown>).cause))

/** What a settled call came to: `success`, its error's reason's `_tag`, or `interrupted`. */
const outcomeOf = (exit: Exit.Exit<unknown, unknown>): string => {
  if (Exit.isSuccess(exit)) return "success"
  if (Cause.hasInterruptsOnly(exit.cause)) return "interrupted"
  return String((failureOf(exit) as { _tag?: string })._tag)
}

// ---------------------------------------------------------------------------
// 1. In memory, under the TestClock

/**
 * Milliseconds. Residues mod 5 keep events of different kinds from tying:
 * starts, answers and the client's input handlers on multiples of 5, the
 * timeout on 2, interrupts on 3, the server's death on 4, the scope's close on 1.
 */
interface CallPlan {
  readonly fault: CallFault
  readonly startAt: number
  /** How long the server takes to answer each round. */
  readonly answerMs: number
  /** From the call's start. */
  readonly interruptAfter: number | null
}
interface Plan {
  readonly calls: ReadonlyArray<CallPlan>
  readonly maxInputRounds: number
  /** How long the client's handler takes to answer an input request. */
  readonly handlerMs: number
  readonly deathAt: number | null
  readonly closeAt: number | null
  readonly listen: boolean
}

const TIMEOUT_MS = 5 * 40 + 2

const planArb: Arbitrary.Arbitrary<Plan> = Arbitrary.all({
  calls: Arbitrary.array(
    Arbitrary.all({
      fault: faultArb(6),
      // From 5 on: what a call sets off then happens inside the TestClock's tracked wake-ups.
      startAt: int(1, 20).pipe(Arbitrary.map((k) => 5 * k)),
      answerMs: int(0, 6).pipe(Arbitrary.map((k) => 5 * k)),
      interruptAfter: maybe(int(0, 60).pipe(Arbitrary.map((k) => 5 * k + 3)))
    }),
    { minLength: 1, maxLength: 10 }
  ),
  maxInputRounds: int(1, 4),
  handlerMs: int(0, 4).pipe(Arbitrary.map((k) => 5 * k)),
  deathAt: maybe(int(0, 100).pipe(Arbitrary.map((k) => 5 * k + 4))),
  closeAt: maybe(int(0, 120).pipe(Arbitrary.map((k) => 5 * k + 1))),
  listen: bool
})

/**
 * When each round of a call is sent and answered: the call's timeline as the
 * client lives it (answer, then its input handler, then the next round).
 */
const rounds = (c: CallPlan, plan: Plan): { readonly sends: Array<number>; readonly settles: number } => {
  const f = c.fault
  const step = c.answerMs + plan.handlerMs
  const count = f._tag === "InputRounds"
    ? Math.min(f.k, plan.maxInputRounds) + 1
    : f._tag === "BigState"
    ? 2
    : 1
  const sends = Array.from({ length: count }, (_, r) => c.startAt + r * step)
  const last = sends[count - 1]!
  return { sends, settles: last + (f._tag === "Silent" ? TIMEOUT_MS : c.answerMs) }
}

/**
 * When the end of the link (death, close) reaches a call: at once while a
 * round is in flight, at its next send while its input handler runs or
 * before it starts, never after it settled.
 */
const reaches = (c: CallPlan, plan: Plan, at: number): number | null => {
  const { sends, settles } = rounds(c, plan)
  for (const [r, s] of sends.entries()) {
    if (at < s) return s
    const answered = r === sends.length - 1 ? settles : s + c.answerMs
    if (at < answered) return at
  }
  return null
}

const expectedOutcome = (c: CallPlan, plan: Plan): string => {
  // Ties only happen where the link ended before a send: the send fails, so the earlier end wins.
  const end = (outcome: string, raw: number | null) => ({
    outcome,
    at: raw === null ? null : reaches(c, plan, raw),
    raw: raw ?? 0
  })
  const settles = rounds(c, plan).settles
  const events: Array<{ outcome: string; at: number | null; raw: number }> = [
    end("TransportClosed: server died", plan.deathAt),
    end("TransportClosed: transport scope closed", plan.closeAt),
    { outcome: "interrupted", at: c.interruptAfter === null ? null : c.startAt + c.interruptAfter, raw: 0 },
    { outcome: outcomeOfFault(c.fault, plan.maxInputRounds), at: settles, raw: settles }
  ]
  let best = { outcome: "unsettled", at: Number.POSITIVE_INFINITY, raw: Number.POSITIVE_INFINITY }
  for (const e of events) {
    if (e.at === null) continue
    if (e.at < best.at || (e.at === best.at && e.raw < best.raw)) best = { outcome: e.outcome, at: e.at, raw: e.raw }
  }
  return best.outcome
}

/** The scripted server: discovery, a held listen, and each tool call per its fault, after its delay. */
const scriptedServer = (seen: Array<{ tag: number; state: unknown }>): Handler => (message, ctx) =>
  Effect.gen(function*() {
    if (!("id" in message)) return null
    const id = message.id
    const params = (message.params ?? {}) as Record<string, unknown>
    switch (message.method) {
      case "server/discover":
        return JsonRpc.success(id, discoverResult)
      case "subscriptions/listen":
        yield* ctx.notify("notifications/subscriptions/acknowledged", {
          notifications: params.notifications ?? {},
          _meta: { "io.modelcontextprotocol/subscriptionId": id }
        })
        return yield* Effect.never
      case "tools/call": {
        const args = params.arguments as { tag: number; delayMs: number }
        seen.push({ tag: args.tag, state: params.requestState })
        const answer = answerCall(id, params)
        if (answer === "silent" || answer === "die") return yield* Effect.never
        yield* Effect.sleep(Duration.millis(args.delayMs))
        return answer as unknown as JsonRpc.JsonRpcResponse
      }
      default:
        return JsonRpc.failure(id, -32601, "Method not found")
    }
  })

const describeExit = (exit: Exit.Exit<unknown, unknown>): string => {
  const outcome = outcomeOf(exit)
  if (outcome !== "TransportClosed") return outcome
  return `TransportClosed: ${(failureOf(exit) as { reason: string }).reason}`
}

const runPlan = (plan: Plan) =>
  Effect.gen(function*() {
    const seen: Array<{ tag: number; state: unknown }> = []
    const scope = yield* Scope.make()
    const pair = yield* InMemoryTransport.makePair(scriptedServer(seen)).pipe(Scope.provide(scope))
    const client = yield* McpClient.fromTransport(pair.client, {
      protocol: MODERN,
      listen: plan.listen,
      maxInputRounds: plan.maxInputRounds,
      requestTimeout: Duration.millis(TIMEOUT_MS),
      handlers: { listRoots: () => Effect.as(Effect.sleep(Duration.millis(plan.handlerMs)), []) }
    }).pipe(Scope.provide(scope))
    const idle = plan.listen ? 1 : 0
    expect(yield* client.connection.pendingCount).toBe(idle)

    const settlements = plan.calls.map(() => 0)
    const fibers: Array<Fiber.Fiber<unknown, unknown>> = []
    for (const [i, c] of plan.calls.entries()) {
      const call = client.callTool({ name: "faulty", arguments: { fault: c.fault, tag: i, delayMs: c.answerMs } }).pipe(
        Effect.onExit(() => Effect.sync(() => void settlements[i]!++))
      )
      const fiber = yield* Effect.andThen(Effect.sleep(Duration.millis(c.startAt)), call).pipe(
        Effect.forkChild({ startImmediately: true })
      )
      fibers.push(fiber)
      if (c.interruptAfter !== null) {
        yield* Effect.forkChild(
          Effect.andThen(Effect.sleep(Duration.millis(c.startAt + c.interruptAfter)), Fiber.interrupt(fiber))
        )
      }
    }
    if (plan.deathAt !== null) {
      yield* Effect.forkChild(Effect.andThen(Effect.sleep(Duration.millis(plan.deathAt)), pair.server.kill("server died")))
    }
    yield* TestClock.adjust(Duration.millis(plan.closeAt ?? 2_000))
    let idleAfter: number | undefined
    if (plan.closeAt === null) idleAfter = yield* client.connection.pendingCount
    yield* Scope.close(scope, Exit.void)
    // Calls caught in their input handler meet the closed link when it returns.
    yield* TestClock.adjust("1 second")
    const exits = yield* Effect.forEach(fibers, (f) => Fiber.await(f))
    return {
      outcomes: exits.map(describeExit),
      settlements,
      idleAfter,
      idle,
      pendingAfterClose: yield* client.connection.pendingCount,
      seen
    }
  })

describe("McpClient stateless era: settlement (in memory, TestClock)", () => {
  it.effect.prop(
    "every call settles once with its fault's typed outcome or the earliest event's; nothing stays pending",
    { plan: planArb },
    ({ plan }) =>
      Effect.gen(function*() {
        const run = yield* runPlan(plan)
        expect(run.outcomes).toEqual(plan.calls.map((c) => expectedOutcome(c, plan)))
        expect(run.settlements).toEqual(plan.calls.map(() => 1))
        if (run.idleAfter !== undefined) {
          expect(run.idleAfter).toBe(plan.deathAt === null ? run.idle : 0)
        }
        expect(run.pendingAfterClose).toBe(0)
        // Input rounds are bounded: a call never sends more than maxInputRounds + 1 rounds.
        for (const [i] of plan.calls.entries()) {
          expect(run.seen.filter((s) => s.tag === i).length).toBeLessThanOrEqual(plan.maxInputRounds + 1)
        }
      }),
    { arbitrary: { runs: 200 } }
  )
})

// ---------------------------------------------------------------------------
// 2. A real stdio child (fewer runs; real timing, so an interrupt or the
// server's death may or may not come first: the outcome is checked to be one
// of those the call's events allow)

const serverPath = fileURLToPath(new URL("../fixtures/modern-stdio-server.ts", import.meta.url))
/**
 * Long enough that three concurrent 1 MiB `requestState` round trips finish on a loaded
 * machine (about 250 ms idle), short enough that silent calls keep a run brief.
 */
const REAL_TIMEOUT_MS = 1_500

const realPlanArb = Arbitrary.all({
  calls: Arbitrary.array(
    Arbitrary.all({ fault: faultArb(4), delayMs: int(0, 60), interruptAt: maybe(int(0, 150)) }),
    { minLength: 1, maxLength: 8 }
  ),
  maxInputRounds: int(1, 3),
  /** A call that makes the server exit, sent this many ms after the others. */
  dieAt: maybe(int(0, 120)),
  listen: bool
})

describe("McpClient stateless era: settlement (real stdio child)", () => {
  it.live("every call settles once with an outcome its events allow; nothing pending; the child does not outlive its scope", () =>
    Effect.gen(function*() {
      const result = yield* Arbitrary.checkEffect(
        realPlanArb,
        (plan) =>
          Effect.gen(function*() {
            const pids = yield* pidFile
            const scope = yield* Scope.make()
            const transport = yield* StdioClientTransport.make({
              command: process.execPath,
              args: [serverPath, `--pid-file=${pids}`],
              shutdown: { gracePeriod: "50 millis", killAfter: "100 millis" }
            }).pipe(Scope.provide(scope))
            // The short request timeout is for the faults, not for a child still loading on a busy machine.
            for (let i = 0; i < 3000 && readPids(pids).length === 0; i++) yield* Effect.sleep("10 millis")
            const client = yield* McpClient.fromTransport(transport, {
              protocol: MODERN,
              listen: plan.listen,
              maxInputRounds: plan.maxInputRounds,
              requestTimeout: Duration.millis(REAL_TIMEOUT_MS),
              handlers: { listRoots: () => Effect.succeed([]) }
            }).pipe(Scope.provide(scope))
            const idle = plan.listen ? 1 : 0
            const listening = (yield* SubscriptionRef.get(client.subscription))._tag
            const settlements = plan.calls.map(() => 0)
            const fibers = yield* Effect.forEach(plan.calls, (c, i) =>
              Effect.gen(function*() {
                const fiber = yield* client.callTool({
                  name: "faulty",
                  arguments: { fault: c.fault, tag: i, delayMs: c.delayMs }
                }).pipe(
                  Effect.onExit(() => Effect.sync(() => void settlements[i]!++)),
                  Effect.forkChild({ startImmediately: true })
                )
                if (c.interruptAt !== null) {
                  yield* Effect.forkChild(Effect.andThen(Effect.sleep(Duration.millis(c.interruptAt)), Fiber.interrupt(fiber)))
                }
                return fiber
              }))
            const dies = plan.dieAt !== null
            const dying = plan.dieAt === null ? undefined : yield* Effect.sleep(Duration.millis(plan.dieAt)).pipe(
              Effect.andThen(client.callTool({ name: "faulty", arguments: { fault: { _tag: "Die" }, tag: -1 } })),
              Effect.forkChild({ startImmediately: true })
            )
            const exits = yield* Effect.forEach(fibers, (f) => Fiber.await(f))
            const dyingOutcome = dying === undefined ? undefined : outcomeOf(yield* Fiber.await(dying))
            const idleAfter = yield* client.connection.pendingCount
            yield* Scope.close(scope, Exit.void)
            const outcomes = exits.map(outcomeOf)
            const allowed = plan.calls.map((c) => [
              outcomeOfFault(c.fault, plan.maxInputRounds),
              ...(c.interruptAt !== null ? ["interrupted"] : []),
              ...(dies ? ["TransportClosed"] : [])
            ])
            const checks = {
              listening: listening === (plan.listen ? "Listening" : "Off"),
              outcomes: outcomes.every((o, i) => allowed[i]!.includes(o)),
              settledOnce: settlements.every((n) => n === 1),
              dyingCall: dyingOutcome === undefined || dyingOutcome === "TransportClosed",
              idle: idleAfter === (dies ? 0 : idle),
              noPending: (yield* client.connection.pendingCount) === 0,
              childGone: yield* awaitGone(transport.pid, 2_000),
              recorded: readPids(pids).includes(transport.pid)
            }
            if (!Object.values(checks).every(Boolean)) {
              yield* Effect.logError("stdio settlement check failed", { plan, outcomes, allowed, checks })
            }
            return Object.values(checks).every(Boolean)
          }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
        { runs: 12 }
      )
      expect(Arbitrary.formatCheckFailure(result)).toBeUndefined()
      expect(result._tag).toBe("Passed")
    }), 120_000)
})
