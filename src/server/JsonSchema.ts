/**
 * JSON Schema 2020-12 for what an Effect Schema puts on the wire, in the
 * plain form MCP clients and LLM providers accept, and the JSON codec that
 * agrees with it.
 *
 * Effect's own generator describes its canonical JSON codec, where a
 * `Schema.Number` may also be the strings `"Infinity"`, `"-Infinity"` and
 * `"NaN"` (an `anyOf` most model providers reject or misread). Here numbers
 * are finite unless the author opts in (`nonFinite: true`): the schema says
 * `number`, and the codec refuses a non-finite value on both sides, so what
 * the schema promises is what the codec does. Named schemas (an
 * `identifier` annotation) and recursive ones become `$defs` reached by
 * `$ref`; a top-level reference is inlined so the root keeps its `type`.
 * Dates carried as strings (`Schema.Date`, `Schema.DateFromString`,
 * `Schema.DateTimeUtc`, `Schema.DateTimeUtcFromString`…) are
 * `{ "type": "string", "format": "date-time" }`, and the codec takes only
 * RFC 3339 date-times for them (Effect's own accepts any string `Date`
 * parses, such as `"2026-07-28"` or `"July 28"`).
 * `title`, `description`, `examples` and `default` annotations are carried,
 * and so is `x-mcp-header` (see `header`).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"

/**
 * A JSON Schema object, as sent on the wire.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonSchemaObject = { readonly [key: string]: unknown }

/**
 * How a schema is turned into JSON Schema and a JSON codec.
 *
 * @since 0.1.0
 * @category models
 */
export interface JsonSchemaOptions {
  /**
   * Let numbers be non-finite, spelled `"Infinity"`, `"-Infinity"` and
   * `"NaN"` on the wire (Effect's JSON convention). Default `false`: numbers
   * are finite JSON numbers, and a non-finite one fails to decode or encode.
   */
  readonly nonFinite?: boolean | undefined
}

/**
 * The annotation that asks a stateless-era HTTP client to mirror a tool
 * parameter into the `Mcp-Param-{name}` header (string, integer or boolean
 * parameters only, reached through object properties).
 *
 * @example
 * ```ts
 * import * as Schema from "effect/Schema"
 * import * as JsonSchema from "effect-mcp-transport/server/JsonSchema"
 *
 * const Params = Schema.Struct({ region: Schema.String.annotate(JsonSchema.header("Region")) })
 * // JsonSchema.make(Params).properties.region: { type: "string", "x-mcp-header": "Region" }
 * ```
 *
 * @since 0.1.0
 * @category annotations
 */
export const header = (name: string): { readonly "x-mcp-header": string } => ({ "x-mcp-header": name })

const FINITE_ID = "effect/schema/isFinite"
const INT_ID = "effect/schema/isInt"

const hasCheckId = (checks: SchemaAST.Checks | undefined, id: string): boolean =>
  checks !== undefined && checks.some((check) =>
    (check.annotations?.representation as { readonly id?: unknown } | undefined)?.id === id ||
    (check._tag === "FilterGroup" && hasCheckId(check.checks, id))
  )

const finiteCheck = Schema.isFinite()

/** The decoded types whose JSON form is an ISO 8601 string. */
const DATE_IDS: ReadonlySet<unknown> = new Set(["effect/schema/Date", "effect/schema/DateTimeUtc"])

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:Z|[+-](\d{2}):(\d{2}))$/i

/** An RFC 3339 `date-time` (JSON Schema's `format: "date-time"`): a real calendar day and time, with its offset. */
const isDateTime = (s: string): boolean => {
  const m = RFC3339.exec(s)
  if (m === null) return false
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number)
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate()
  const offsetOk = m[7] === undefined || (Number(m[7]) <= 23 && Number(m[8]) <= 59)
  return month >= 1 && month <= 12 && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59 && offsetOk
}

const dateTimeCheck = Schema.makeFilter<string>((s) => isDateTime(s), {
  expected: "an RFC 3339 date-time, e.g. 2026-07-28T09:30:00Z",
  toJsonSchema: () => ({ format: "date-time" })
})

const isDateNode = (ast: SchemaAST.AST): boolean =>
  ast._tag === "Declaration" &&
  DATE_IDS.has((ast.annotations?.representation as { readonly id?: unknown } | undefined)?.id)

const checkedString = (ast: SchemaAST.String) => Schema.make<Schema.String>(ast).check(dateTimeCheck).ast

/**
 * The same AST with what the JSON form promises checked: every date carried
 * as a string is an RFC 3339 date-time, and (with `finite`) every number
 * carried as a number is finite. Transformations keep their decoded side:
 * only the encoded end of an encoding chain is rewritten, where the JSON
 * codec looks. Nodes this does not know how to rebuild are left as they are.
 */
const wireForm = (root: SchemaAST.AST, finite: boolean): SchemaAST.AST => {
  const memo = new Map<SchemaAST.AST, SchemaAST.AST>()
  const rewrite = (ast: SchemaAST.AST): SchemaAST.AST => {
    const known = memo.get(ast)
    if (known !== undefined) return known
    // Recursive schemas come back to a node through a Suspend's thunk, which runs later.
    memo.set(ast, ast)
    const out = step(ast)
    memo.set(ast, out)
    return out
  }
  const withEncoding = (ast: SchemaAST.AST, encoding: SchemaAST.Encoding | undefined): SchemaAST.AST | undefined => {
    switch (ast._tag) {
      case "Objects":
        return new SchemaAST.Objects(
          ast.propertySignatures.map((p) => new SchemaAST.PropertySignature(p.name, rewrite(p.type))),
          ast.indexSignatures.map((i) => new SchemaAST.IndexSignature(i.parameter, rewrite(i.type))),
          ast.annotations,
          ast.checks,
          encoding,
          ast.context,
          ast.encodingChecks
        )
      case "Arrays":
        return new SchemaAST.Arrays(
          ast.isMutable,
          ast.elements.map(rewrite),
          ast.rest.map(rewrite),
          ast.annotations,
          ast.checks,
          encoding,
          ast.context,
          ast.encodingChecks
        )
      case "Union":
        return new SchemaAST.Union(
          ast.types.map(rewrite),
          ast.options,
          ast.annotations,
          ast.checks,
          encoding,
          ast.context,
          ast.encodingChecks
        )
      case "Suspend": {
        const thunk = ast.thunk
        return new SchemaAST.Suspend(() => rewrite(thunk()), ast.annotations, ast.checks, encoding, ast.context)
      }
      case "Declaration":
        return new SchemaAST.Declaration(
          ast.typeParameters.map(rewrite),
          ast.run,
          ast.annotations,
          ast.checks,
          encoding,
          ast.context,
          ast.encodingChecks,
          ast.encodingRun
        )
    }
    return undefined
  }
  /**
   * A date whose JSON form is a string, with that string checked as an RFC
   * 3339 date-time (and so described as `format: "date-time"`); `undefined`
   * for a date carried some other way (e.g. milliseconds).
   */
  const dateTime = (ast: SchemaAST.AST): SchemaAST.AST | undefined => {
    if (ast.encoding !== undefined) {
      const last = ast.encoding[ast.encoding.length - 1]
      if (last.to._tag !== "String") return undefined
      const encoding = [...ast.encoding.slice(0, -1), new SchemaAST.Link(checkedString(last.to as SchemaAST.String), last.transformation)]
      return withEncoding(ast, encoding as unknown as SchemaAST.Encoding)
    }
    // A bare date declaration says how it goes to JSON in its toCodecJson annotation.
    const getLink = ast.annotations?.toCodecJson
    if (typeof getLink !== "function") return undefined
    const link = getLink([]) as SchemaAST.Link | undefined
    if (link === undefined || link.to._tag !== "String") return undefined
    return withEncoding(ast, [new SchemaAST.Link(checkedString(link.to as SchemaAST.String), link.transformation)])
  }
  const step = (ast: SchemaAST.AST): SchemaAST.AST => {
    if (isDateNode(ast)) {
      const date = dateTime(ast)
      if (date !== undefined) return date
    }
    if (ast.encoding !== undefined) {
      const links = ast.encoding
      const last = links[links.length - 1]
      const to = rewrite(last.to)
      if (to === last.to) return ast
      const encoding = [...links.slice(0, -1), new SchemaAST.Link(to, last.transformation)] as unknown as SchemaAST.Encoding
      return withEncoding(ast, encoding) ?? ast
    }
    if (ast._tag === "Number") {
      return !finite || hasCheckId(ast.checks, FINITE_ID) || hasCheckId(ast.checks, INT_ID)
        ? ast
        : Schema.make<Schema.Number>(ast).check(finiteCheck).ast
    }
    return withEncoding(ast, undefined) ?? ast
  }
  return rewrite(root)
}

/**
 * The JSON codec of `schema`: decodes what the JSON Schema of `make`
 * describes to the schema's type, and encodes the type back to it.
 *
 * @since 0.1.0
 * @category converting
 */
export const codec = <S extends Schema.Top>(
  schema: S,
  options?: JsonSchemaOptions
): Schema.Codec<S["Type"], unknown, S["DecodingServices"], S["EncodingServices"]> =>
  Schema.toCodecJson(Schema.make<S>(wireForm(schema.ast, options?.nonFinite !== true))) as unknown as Schema.Codec<S["Type"], unknown, S["DecodingServices"], S["EncodingServices"]>

const SAFE_MAX = Number.MAX_SAFE_INTEGER
const includeAnnotationKey = (key: string) => key === "x-mcp-header"

/**
 * Drops what says nothing to a reader: `additionalProperties: true` (the
 * default) and the bounds every `Schema.Int` carries (the safe integer range).
 */
const tidy = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(tidy)
  if (typeof node !== "object" || node === null) return node
  const out: Record<string, unknown> = {}
  const record = node as Record<string, unknown>
  for (const [key, value] of Object.entries(record)) {
    if (key === "additionalProperties" && value === true) continue
    if (record.type === "integer" && key === "minimum" && value === -SAFE_MAX) continue
    if (record.type === "integer" && key === "maximum" && value === SAFE_MAX) continue
    // Data, not schemas: copied as they are.
    out[key] = key === "enum" || key === "const" || key === "default" || key === "examples" ? value : tidy(value)
  }
  return out
}

const refTo = (name: string) => `#/$defs/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`

/**
 * The JSON Schema (2020-12) of the JSON form of `schema`: its `$defs`, if
 * any, on the root. No `$schema` keyword: MCP reads a schema without one as
 * 2020-12.
 *
 * @example
 * ```ts
 * import * as Schema from "effect/Schema"
 * import * as JsonSchema from "effect-mcp-transport/server/JsonSchema"
 *
 * JsonSchema.make(Schema.Struct({ a: Schema.Number, b: Schema.optionalKey(Schema.Int) }))
 * // { type: "object", properties: { a: { type: "number" }, b: { type: "integer" } }, required: ["a"] }
 * ```
 *
 * @since 0.1.0
 * @category converting
 */
export const make = (schema: Schema.Top, options?: JsonSchemaOptions): JsonSchemaObject => {
  const source = Schema.make(wireForm(schema.ast, options?.nonFinite !== true))
  const document = Schema.toJsonSchemaDocument(source, { includeAnnotationKey })
  let defs: Record<string, unknown> = { ...(tidy(document.definitions) as Record<string, unknown>) }
  let root = tidy(document.schema) as Record<string, unknown>
  // The rewrite above makes a named schema under `optionalKey` a node of its own, which Effect names
  // `Name_1`: a definition equal to the one it was numbered after is that one.
  const same = new Map<string, string>()
  for (const [key, value] of Object.entries(defs)) {
    const base = /^(.+)_\d+$/.exec(key)?.[1]
    if (base !== undefined && base in defs && JSON.stringify(defs[base]) === JSON.stringify(value)) {
      same.set(refTo(key), refTo(base))
    }
  }
  if (same.size > 0) {
    const relink = (node: unknown): unknown => {
      if (Array.isArray(node)) return node.map(relink)
      if (typeof node !== "object" || node === null) return node
      return Object.fromEntries(Object.entries(node).map(([key, value]) =>
        key === "$ref" && typeof value === "string" ? [key, same.get(value) ?? value] : [key, relink(value)]
      ))
    }
    root = relink(root) as Record<string, unknown>
    defs = Object.fromEntries(
      Object.entries(defs).filter(([key]) => !same.has(refTo(key))).map(([key, value]) => [key, relink(value)])
    )
  }
  // A named or recursive root comes back as a bare $ref: inline it so the root says what it is.
  const only = Object.keys(root)
  if (only.length === 1 && typeof root.$ref === "string") {
    const name = Object.keys(defs).find((key) => refTo(key) === root.$ref)
    if (name !== undefined) {
      root = defs[name] as Record<string, unknown>
      const stillUsed = JSON.stringify([root, ...Object.entries(defs).filter(([key]) => key !== name)])
        .includes(JSON.stringify(refTo(name)))
      if (!stillUsed) delete defs[name]
    }
  }
  return Object.keys(defs).length === 0 ? root : { ...root, $defs: defs }
}
