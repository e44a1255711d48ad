/**
 * How a tool is listed in `tools/list`: its entry (optional members only
 * when given), the `inputSchema` and `outputSchema` made from its Schemas or
 * taken from hand-written documents, and the checks a listing must pass
 * (an object root, valid `x-mcp-header` annotations).
 */
import type * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as RequestMeta from "../../RequestMeta.ts"
import { DefinitionError } from "../DefinitionError.ts"
import * as JsonSchema from "../JsonSchema.ts"
import { isRecord } from "../../internal/Records.ts"

const isEmptyStruct = (ast: SchemaAST.AST) =>
  SchemaAST.isObjects(ast) && ast.encoding === undefined && ast.propertySignatures.length === 0 &&
  ast.indexSignatures.length === 0

/** The tool as `tools/list` shows it: optional members only when given. */
export const listed = (
  name: string,
  options: {
    readonly title?: string | undefined
    readonly description?: string | undefined
    readonly annotations?: unknown
    readonly _meta?: unknown
  },
  inputSchema: unknown,
  outputSchema: unknown
): Record<string, unknown> => ({
  name,
  ...(options.title === undefined ? {} : { title: options.title }),
  ...(options.description === undefined ? {} : { description: options.description }),
  inputSchema,
  ...(outputSchema === undefined ? {} : { outputSchema }),
  ...(options.annotations === undefined ? {} : { annotations: options.annotations }),
  ...(options._meta === undefined ? {} : { _meta: options._meta })
})

/** A hand-written schema listed as given, once its root is `type: "object"` (else `DefinitionError`). */
export const objectRoot = (name: string, which: string, schema: unknown): JsonSchema.JsonSchemaObject => {
  if (!isRecord(schema) || schema.type !== "object") {
    throw new DefinitionError({ kind: "tool", name, reason: `has an ${which} whose root is not { "type": "object" }` })
  }
  // A copy: a later change to the caller's object must not change what is listed.
  return structuredClone(schema)
}

/** Throws `DefinitionError` when an `x-mcp-header` annotation of `inputSchema` is not one MCP allows. */
export const checkHeaders = (name: string, inputSchema: JsonSchema.JsonSchemaObject): void => {
  const headers = RequestMeta.headerParams(inputSchema)
  if (headers._tag === "Invalid") throw new DefinitionError({ kind: "tool", name, reason: `has an invalid ${headers.reason}` })
}

/**
 * The listed schemas of a tool defined by Schemas. `wrap`: the result's JSON
 * form is not an object, so `structuredContent` is `{ result }`. Throws
 * `DefinitionError` when the parameters' JSON form is not an object or a
 * header annotation is invalid.
 */
export const fromSchemas = (
  name: string,
  parameters: Schema.Top,
  success: Schema.Top | undefined,
  jsonOptions: JsonSchema.JsonSchemaOptions
): {
  readonly inputSchema: JsonSchema.JsonSchemaObject
  readonly outputSchema: JsonSchema.JsonSchemaObject | undefined
  readonly wrap: boolean
} => {
  // Effect reads an empty struct as "any value but null"; a tool without arguments takes an empty object.
  const inputSchema = isEmptyStruct(parameters.ast) ? { type: "object", properties: {} } : JsonSchema.make(parameters, jsonOptions)
  if (inputSchema.type !== "object") {
    throw new DefinitionError({
      kind: "tool",
      name,
      reason: `has parameters whose JSON Schema is not an object (type: ${JSON.stringify(inputSchema.type)}): use struct fields or a Schema.Struct`
    })
  }
  checkHeaders(name, inputSchema)

  let outputSchema: JsonSchema.JsonSchemaObject | undefined
  let wrap = false
  if (success !== undefined) {
    const { $defs, ...schema } = JsonSchema.make(success, jsonOptions)
    wrap = schema.type !== "object"
    outputSchema = wrap
      ? { type: "object", properties: { result: schema }, required: ["result"], ...($defs === undefined ? {} : { $defs }) }
      : { ...schema, ...($defs === undefined ? {} : { $defs }) }
  }
  return { inputSchema, outputSchema, wrap }
}
