/**
 * What `effect` alone spends closing a runtime cold, in a fresh process: a
 * `ManagedRuntime` of one layer that forks two fibers and adds one finalizer,
 * built and used once, then disposed. Prints when the finalizer ran and when
 * `dispose` returned, in ms after the call (the floor under a client's cold
 * close, before any of its own finalizers).
 *
 *   for i in 1 2 3 4 5; do npx node bench/profile/cold-dispose.ts; done
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"

const Held = Context.Service<{ readonly n: number }>("bench/Held")
let finalizedAt: bigint | undefined
const layer = Layer.effect(Held)(Effect.gen(function*() {
  yield* Effect.forkScoped(Effect.never)
  yield* Effect.forkScoped(Effect.never)
  yield* Effect.addFinalizer(() => Effect.sync(() => void (finalizedAt = process.hrtime.bigint())))
  return { n: 1 }
}))
const runtime = ManagedRuntime.make(layer)
await runtime.runPromise(Effect.map(Held, (held) => held.n))
const start = process.hrtime.bigint()
await runtime.dispose()
const end = process.hrtime.bigint()
const ms = (t: bigint) => (Number(t - start) / 1e6).toFixed(2)
console.log(JSON.stringify({ finalizerMs: Number(ms(finalizedAt!)), disposedMs: Number(ms(end)) }))
