import { describe, expect, it } from "@effect/vitest"
import { Ajv2020 } from "ajv/dist/2020.js"
import { Schema } from "effect"
import * as JsonSchema from "../../src/server/JsonSchema.ts"

interface Tree {
  readonly value: number
  readonly children: ReadonlyArray<Tree>
}
const Tree = Schema.Struct({
  value: Schema.Number,
  children: Schema.Array(Schema.suspend((): Schema.Codec<Tree> => Tree))
}).annotate({ identifier: "Tree" })

const Address = Schema.Struct({ street: Schema.String, city: Schema.String }).annotate({ identifier: "Address" })

/** Each Schema, the JSON values its JSON Schema must accept, and those it must refuse. */
const catalogue: Record<string, { schema: Schema.Codec<any, any>; valid: ReadonlyArray<unknown>; invalid: ReadonlyArray<unknown> }> = {
  "optional fields": {
    schema: Schema.Struct({
      name: Schema.String.annotate({ description: "the name", examples: ["Ada"] }),
      nick: Schema.optionalKey(Schema.String),
      age: Schema.optional(Schema.Int)
    }),
    valid: [{ name: "Ada" }, { name: "Ada", nick: "a", age: 36 }, { name: "Ada", age: null }],
    invalid: [{}, { name: 1 }, { name: "Ada", age: 1.5 }, null]
  },
  "unions": {
    schema: Schema.Union([Schema.String, Schema.Number, Schema.Boolean]),
    valid: ["a", 1, true],
    invalid: [null, {}, []]
  },
  "literals": {
    schema: Schema.Literals(["low", "high", 3]),
    valid: ["low", "high", 3],
    invalid: ["medium", 4]
  },
  "tagged unions": {
    schema: Schema.Union([
      Schema.TaggedStruct("Circle", { radius: Schema.Number }),
      Schema.TaggedStruct("Square", { side: Schema.Number })
    ]),
    valid: [{ _tag: "Circle", radius: 1 }, { _tag: "Square", side: 2 }],
    invalid: [{ _tag: "Circle", side: 1 }, { _tag: "Triangle" }]
  },
  "records": {
    schema: Schema.Record(Schema.String, Schema.Number),
    valid: [{}, { a: 1, b: 2.5 }],
    invalid: [{ a: "1" }, { a: "Infinity" }]
  },
  "nested structs and named schemas ($defs)": {
    schema: Schema.Struct({ home: Address, work: Schema.optionalKey(Address), tags: Schema.Array(Schema.String) }),
    valid: [{ home: { street: "s", city: "c" }, tags: [] }],
    invalid: [{ home: { street: "s" }, tags: [] }, { home: { street: "s", city: "c" }, tags: [1] }]
  },
  "recursive types ($ref)": {
    schema: Tree,
    valid: [{ value: 1, children: [] }, { value: 1, children: [{ value: 2, children: [{ value: 3, children: [] }] }] }],
    invalid: [{ value: 1 }, { value: 1, children: [{ value: "2", children: [] }] }]
  },
  "numbers: finite by default": {
    schema: Schema.Struct({ n: Schema.Number, f: Schema.Finite, positive: Schema.Number.check(Schema.isGreaterThan(0)) }),
    valid: [{ n: 1.5, f: -2, positive: 0.1 }],
    invalid: [{ n: "NaN", f: 1, positive: 1 }, { n: "Infinity", f: 1, positive: 1 }, { n: 1, f: 1, positive: 0 }]
  },
  "integers": {
    schema: Schema.Struct({ count: Schema.Int, bounded: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10 })) }),
    valid: [{ count: 0, bounded: 1 }, { count: -5, bounded: 10 }],
    invalid: [{ count: 1.5, bounded: 1 }, { count: 1, bounded: 11 }]
  },
  "branded strings": {
    schema: Schema.Struct({ id: Schema.NonEmptyString.pipe(Schema.brand("UserId")) }),
    valid: [{ id: "u1" }],
    invalid: [{ id: "" }, { id: 1 }]
  },
  "dates": {
    schema: Schema.Struct({
      at: Schema.Date,
      parsed: Schema.DateFromString,
      utc: Schema.DateTimeUtc,
      day: Schema.DateTimeUtcFromString,
      since: Schema.optionalKey(Schema.DateFromString)
    }),
    valid: [
      { at: "2026-07-28T00:00:00.000Z", parsed: "2026-07-28T09:30:00Z", utc: "2026-07-28T00:00:00Z", day: "2026-07-28T00:00:00.000Z" },
      {
        at: "2026-07-28T09:30:00+02:00",
        parsed: "2024-02-29T23:59:59.5-05:30",
        utc: "2026-01-01T00:00:00Z",
        day: "2026-12-31T23:59:59Z",
        since: "2000-01-01T00:00:00Z"
      }
    ],
    invalid: [
      { at: 0, parsed: "2026-07-28T00:00:00Z", utc: "2026-07-28T00:00:00Z", day: "2026-07-28T00:00:00Z" },
      // A day without a time, a time without an offset, and strings Date parses but RFC 3339 refuses.
      { at: "2026-07-28", parsed: "2026-07-28T00:00:00Z", utc: "2026-07-28T00:00:00Z", day: "2026-07-28T00:00:00Z" },
      { at: "2026-07-28T00:00:00Z", parsed: "2026-07-28T09:30:00", utc: "2026-07-28T00:00:00Z", day: "2026-07-28T00:00:00Z" },
      { at: "2026-07-28T00:00:00Z", parsed: "July 28, 2026", utc: "2026-07-28T00:00:00Z", day: "2026-07-28T00:00:00Z" },
      { at: "2026-07-28T00:00:00Z", parsed: "2026-07-28T00:00:00Z", utc: "2026-02-30T00:00:00Z", day: "2026-07-28T00:00:00Z" },
      { at: "2026-07-28T00:00:00Z", parsed: "2026-07-28T00:00:00Z", utc: "2026-07-28T00:00:00Z", day: "2026-07-28T24:00:00Z" },
      { at: "2026-07-28T00:00:00Z", parsed: "2026-07-28T00:00:00Z", utc: "2026-07-28T00:00:00Z", day: "x" },
      { at: "2026-07-28T00:00:00Z", parsed: "2026-07-28T00:00:00Z", utc: "2026-07-28T00:00:00Z", day: "2026-07-28T00:00:00Z", since: "yesterday" }
    ]
  },
  "dates carried as numbers stay numbers": {
    schema: Schema.Struct({ ms: Schema.DateFromMillis }),
    valid: [{ ms: 0 }, { ms: 1_785_196_800_000 }],
    invalid: [{ ms: "2026-07-28T00:00:00Z" }]
  }
}

/** RFC 3339 §5.6 `date-time`, written here apart from the module's own check (Ajv 2020 knows no formats by itself). */
const isRfc3339DateTime = (s: string): boolean => {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|([+-])(\d{2}):(\d{2}))$/.exec(s)
  if (m === null) return false
  const [y, mo, d, h, mi, se] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number)
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0)
  const monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
  return mo >= 1 && mo <= 12 && d >= 1 && d <= monthDays[mo - 1]! && h < 24 && mi < 60 && se < 60 &&
    (m[10] === undefined || (Number(m[10]) < 24 && Number(m[11]) < 60))
}

const ajv = new Ajv2020({ strict: true, allErrors: true })
// The one keyword MCP adds to tool input schemas.
ajv.addKeyword("x-mcp-header")
// Asserted, not only annotated: a date the schema lets through is one the codec decodes.
ajv.addFormat("date-time", isRfc3339DateTime)

describe("JsonSchema", () => {
  for (const [name, { invalid, schema, valid }] of Object.entries(catalogue)) {
    it(`${name}: Ajv 2020 compiles it, accepts the valid samples and refuses the others`, () => {
      const json = JsonSchema.make(schema)
      expect(json).toMatchSnapshot()
      const validate = ajv.compile(json)
      for (const value of valid) expect(validate(value), JSON.stringify(value)).toBe(true)
      for (const value of invalid) expect(validate(value), JSON.stringify(value)).toBe(false)
      // The codec agrees with the schema on the samples.
      const decode = Schema.decodeUnknownExit(JsonSchema.codec(schema))
      for (const value of valid) expect(decode(value)._tag, JSON.stringify(value)).toBe("Success")
      for (const value of invalid) expect(decode(value)._tag, JSON.stringify(value)).toBe("Failure")
    })
  }

  it("dates carried as strings are RFC 3339 date-times, with or without nonFinite", () => {
    const dateTime = { type: "string", format: "date-time" }
    expect(JsonSchema.make(Schema.Date)).toEqual(dateTime)
    expect(JsonSchema.make(Schema.DateFromString, { nonFinite: true })).toEqual(dateTime)
    expect(JsonSchema.make(Schema.Struct({ d: Schema.DateTimeUtcFromDate })).properties).toEqual({ d: dateTime })
    const codec = JsonSchema.codec(Schema.Date)
    expect(Schema.encodeUnknownSync(codec)(new Date(Date.UTC(2026, 6, 28)))).toBe("2026-07-28T00:00:00.000Z")
    const refused = Schema.decodeUnknownExit(codec)("2026-07-28")
    expect(refused._tag).toBe("Failure")
    expect(String(refused)).toContain("an RFC 3339 date-time")
  })

  it("a plain number unless the author opts into non-finite values", () => {
    expect(JsonSchema.make(Schema.Number)).toEqual({ type: "number" })
    const open = JsonSchema.make(Schema.Number, { nonFinite: true })
    expect(open).toEqual({ anyOf: [{ type: "number" }, { type: "string", enum: ["Infinity", "-Infinity", "NaN"] }] })
    expect(Schema.decodeUnknownSync(JsonSchema.codec(Schema.Number, { nonFinite: true }))("NaN")).toBeNaN()
    expect(Schema.encodeUnknownExit(JsonSchema.codec(Schema.Number))(Number.POSITIVE_INFINITY)._tag).toBe("Failure")
    expect(Schema.encodeUnknownSync(JsonSchema.codec(Schema.Number, { nonFinite: true }))(Number.POSITIVE_INFINITY)).toBe("Infinity")
  })

  it("a recursive root is inlined and keeps its definition for the inner references", () => {
    const json = JsonSchema.make(Tree)
    expect(json.type).toBe("object")
    expect(Object.keys(json.$defs as object)).toEqual(["Tree"])
    // A named root used once is inlined without a definition.
    expect(JsonSchema.make(Address)).toEqual({
      type: "object",
      properties: { street: { type: "string" }, city: { type: "string" } },
      required: ["street", "city"]
    })
  })

  it("carries x-mcp-header and leaves out other non-standard annotations", () => {
    const json = JsonSchema.make(Schema.Struct({
      region: Schema.String.annotate({ ...JsonSchema.header("Region"), internal: "x" })
    }))
    expect(json.properties).toEqual({ region: { type: "string", "x-mcp-header": "Region" } })
  })
})
