/**
 * The testing kit outside a test runner: a handler behind a faulty in-memory
 * link, checked with a property. Run: npx node scratchpad/fault-injection-example.ts
 */
import { Arbitrary, Effect, Exit } from "effect"
import * as JsonRpc from "../src/JsonRpc.ts"
import type { Handler } from "../src/server/Handler.ts"
import { Arbitraries, FaultInjection } from "../src/testing/index.ts"

const handler: Handler = (m) => Effect.succeed("id" in m ? JsonRpc.success(m.id, { echo: m.params ?? null }) : null)

const property = (random: FaultInjection.RandomFaults) =>
  Effect.scoped(Effect.gen(function*() {
    const { client, faults } = yield* FaultInjection.makePair(handler, { random }, { timeout: "200 millis" })
    const exits = yield* Effect.forEach(
      Array.from({ length: 10 }, (_, i) => i),
      (i) => Effect.exit(client.request("echo", { i })),
      { concurrency: "unbounded" }
    )
    const ok = exits.every((e, i) =>
      Exit.isSuccess(e)
        ? JSON.stringify(e.value) === JSON.stringify({ echo: { i } })
        : e.cause.reasons.some((r) => r._tag === "Fail" && ["RequestTimeout", "RpcError"].includes(r.error._tag))
    )
    const stats = yield* faults.stats
    console.log(`replay key ${random.replayKey}: ${exits.filter(Exit.isSuccess).length}/10 answered`, JSON.stringify(stats))
    return ok && (yield* client.pendingCount) === 0
  }))

const result = await Effect.runPromise(Arbitrary.checkEffect(Arbitraries.randomFaults(0.2), property, { runs: 5, seed: 1 }))
console.log(result._tag, Arbitrary.formatCheckFailure(result) ?? "")
