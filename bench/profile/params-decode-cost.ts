/**
 * Nanoseconds to decode one `tools/call`'s params, `{ name, arguments }` with
 * `arguments` a `Record` (the bench server's `CallParams`), by `effect`'s
 * interpreter and by the code `SchemaJITCompiler` generates from the same
 * schema (what `McpServer.method` decodes with), each in five rounds of
 * 500,000 after a warm-up; medians:
 *
 *   npx node bench/profile/params-decode-cost.ts
 */
import * as Schema from "effect/Schema"
import * as SchemaJITCompiler from "effect/schema/SchemaJITCompiler"

const callParams = () =>
  Schema.Struct({ name: Schema.String, arguments: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)) })
const interpreted = callParams()
const compiled = callParams()
SchemaJITCompiler.enable(compiled.ast)

const inputs = Array.from({ length: 1000 }, (_, i) => ({
  name: "echo",
  arguments: { text: `hello ${i}` },
  _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" }
}))

const nsPerDecode = (decode: (u: unknown) => unknown): number => {
  const rounds: Array<number> = []
  for (let round = 0; round < 6; round++) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < 500_000; i++) decode(inputs[i % 1000])
    if (round > 0) rounds.push(Number(process.hrtime.bigint() - start) / 500_000)
  }
  return rounds.sort((a, b) => a - b)[2]!
}

for (const [label, schema] of [["interpreted", interpreted], ["compiled", compiled]] as const) {
  console.log(`${label}: ${nsPerDecode(Schema.decodeUnknownEffect(schema)).toFixed(0)} ns`)
}
