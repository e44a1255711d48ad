/**
 * `Schema.decodeUnknownEffect` for what a client sends on every call: the
 * schema's decoder compiled to plain code by `effect`'s own
 * `SchemaJITCompiler` when first used. Results and errors are the
 * interpreter's; a struct holding a `Record` decodes in about a sixth of the
 * time (BENCHMARKS.md, "Params decoded by compiled code"). Where code cannot
 * be generated at run time (`--disallow-code-generation-from-strings`, a
 * strict Content Security Policy), `effect` keeps interpreting the schema.
 */
import * as Schema from "effect/Schema"
import * as SchemaJITCompiler from "effect/schema/SchemaJITCompiler"

export const decodeUnknownEffect = <S extends Schema.Decoder<unknown, unknown>>(schema: S) => {
  SchemaJITCompiler.enable(schema.ast)
  return Schema.decodeUnknownEffect(schema)
}
