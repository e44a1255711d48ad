/**
 * CPU cost of decoding one small `tools/call` result, in isolation:
 *   npx node bench/profile/decode-cost.ts [iterations=200000]
 */
import { Effect, Schema } from "effect"
import * as McpSchema from "effect/ai/McpSchema"

const n = Number(process.argv[2] ?? 200_000)
const decode = Schema.decodeUnknownEffect(McpSchema.CallToolResult)
const raw = { content: [{ type: "text", text: "ok" }] }
const empty = Schema.decodeUnknownEffect(Schema.Struct({}))

const time = (label: string, f: () => unknown) => {
  for (let i = 0; i < 20_000; i++) f()
  const t0 = process.cpuUsage()
  for (let i = 0; i < n; i++) f()
  const t = process.cpuUsage(t0)
  console.log(`${label}: ${((t.user + t.system) / n).toFixed(2)} µs`)
}
time("CallToolResult decodeUnknownEffect (returns an Exit)", () => decode(raw))
time("Struct({}) decodeUnknownEffect", () => empty({}))
time("runSync(CallToolResult decode)", () => Effect.runSync(decode(raw)))
