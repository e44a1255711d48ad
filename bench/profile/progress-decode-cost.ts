/**
 * What `effect` itself costs on the progress path, apart from this project:
 * the Schema decoding of one `notifications/progress` (what every progress
 * paid before the hand-checked path), the hand-checked path, and the run
 * loop's cost of one `onProgress` callback (`Effect.forEach` over an
 * `Effect.sync`, as the caller runs them) and of one fiber started and ended.
 *
 *   npx node bench/profile/progress-decode-cost.ts [iterations=200000]
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as McpSchema from "effect/ai/McpSchema"
import * as ServerNotification from "../../src/client/ServerNotification.ts"
import * as FastNotification from "../../src/client/internal/FastNotification.ts"

const n = Number(process.argv[2] ?? 200_000)
const time = (name: string, iterations: number, f: () => void) => {
  for (let i = 0; i < Math.min(iterations, 20_000); i++) f()
  const t0 = performance.now()
  for (let i = 0; i < iterations; i++) f()
  console.log(`${name.padEnd(52)} ${((performance.now() - t0) * 1000 / iterations).toFixed(3)} µs`)
}
const line = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p12","progress":7,"total":20}}`
const message = JSON.parse(line)
const decodeSchema = Schema.decodeUnknownResult(Schema.Struct(McpSchema.ProgressNotification.payloadSchema.fields))
time("JSON.parse of the line (the floor)", n, () => JSON.parse(line))
time("Schema decode of the params", n, () => decodeSchema(message.params))
time("hand-checked decode (FastNotification.progress)", n, () => FastNotification.progress(message.params))
time("ServerNotification.decode (fast path taken)", n, () => ServerNotification.decode(message))
const progress = FastNotification.progress(message.params)!
const items = Array.from({ length: 20 }, () => progress)
let seen = 0
const onProgress = () => Effect.sync(() => void seen++)
const perCall = Effect.forEach(items, onProgress, { discard: true })
time("run loop: 20 onProgress callbacks, in one forEach", n / 20, () => Effect.runSync(perCall))
time("run loop: a fiber forked and joined", n / 10, () => Effect.runSync(Effect.flatMap(Effect.forkChild(Effect.void), Fiber.join)))
