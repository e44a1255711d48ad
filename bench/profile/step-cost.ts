/**
 * What one step of `effect`'s runtime and one fiber cost when the code is hot
 * and monomorphic, for reading the counts of bench/profile/effect-work.ts:
 * `runSync` of chains of `flatMap(_, succeed)` (two steps a link) and of a
 * fork of a fiber that ends at once.
 *
 *   npx node bench/profile/step-cost.ts [rounds=3]
 */
import * as Effect from "effect/Effect"

const rounds = Number(process.argv[2] ?? "3")
const chain = (links: number): Effect.Effect<number> => {
  let effect: Effect.Effect<number> = Effect.succeed(0)
  for (let i = 0; i < links; i++) effect = Effect.flatMap(effect, (x) => Effect.succeed(x + 1))
  return effect
}
const forked = Effect.flatMap(Effect.forkDetach(Effect.succeed(1), { startImmediately: true }), () => Effect.void)

const perRun = (effect: Effect.Effect<unknown>, runs: number): number => {
  for (let i = 0; i < 20_000; i++) Effect.runSync(effect)
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < runs; i++) Effect.runSync(effect)
  return Number(process.hrtime.bigint() - t0) / 1000 / runs
}

for (let r = 0; r < rounds; r++) {
  const base = perRun(Effect.succeed(1), 200_000)
  const c50 = perRun(chain(50), 100_000)
  const c100 = perRun(chain(100), 50_000)
  const fork = perRun(forked, 100_000)
  console.log(JSON.stringify({
    stepUs: +((c100 - c50) / 100).toFixed(4),
    forkUs: +(fork - base).toFixed(3)
  }))
}
