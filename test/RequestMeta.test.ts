/**
 * The request-metadata rules of the stateless era: `_meta` against the
 * official schema, header value encoding (properties over any text),
 * `x-mcp-header` validation (a model of the spec's rules over generated
 * schemas), parameter headers and the numeric comparison of integers.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Schema } from "effect"
import * as RequestMeta from "../src/RequestMeta.ts"
import { hasSpecSchema, specValidator } from "./fixtures/spec-schema.ts"

const int = (minimum: number, maximum: number) =>
  Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum }))).pipe(Arbitrary.map((n) => n + 0))
const pick = <const A extends ReadonlyArray<string | number | boolean>>(values: A): Arbitrary.Arbitrary<A[number]> =>
  Arbitrary.schema(Schema.Literals(values))
const bool = Arbitrary.schema(Schema.Boolean)

/** Any well-formed Unicode text: code points from every plane (no lone surrogates), mixed with the tricky ASCII. */
const codePoint = Arbitrary.all({ cp: int(0, 0x10ffff - 0x800), tricky: pick([" ", "\t", "\r", "\n", "=", "?", "b", "\u007f", "\u0000", "~", "é", "😀"]), useTricky: bool })
  .pipe(Arbitrary.map(({ cp, tricky, useTricky }) => (useTricky ? tricky : String.fromCodePoint(cp >= 0xd800 ? cp + 0x800 : cp))))
const unicode = Arbitrary.array(codePoint, { maxLength: 24 }).pipe(Arbitrary.map((cs) => cs.join("")))
const ascii = Arbitrary.array(int(0x20, 0x7e), { maxLength: 24 }).pipe(Arbitrary.map((cs) => String.fromCharCode(...cs)))
const anyText = Arbitrary.all({ u: unicode, a: ascii, which: bool }).pipe(Arbitrary.map(({ a, u, which }) => (which ? u : a)))

const runs = { arbitrary: { runs: 1000 } }

/** Printable ASCII with no space at either end: what a header value may carry as is. */
const HEADER_SAFE = /^(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?$/

describe("header values", () => {
  it.prop("encode then decode gives back any text", { text: anyText }, ({ text }) => {
    expect(RequestMeta.decodeHeaderValue(RequestMeta.encodeHeaderValue(text))).toBe(text)
  }, runs)

  it.prop("an encoded value is printable ASCII with no leading or trailing space", { text: anyText }, ({ text }) => {
    expect(RequestMeta.encodeHeaderValue(text)).toMatch(HEADER_SAFE)
  }, runs)

  it.prop("header-safe text that is not a sentinel goes as is", { text: ascii }, ({ text }) => {
    if (!HEADER_SAFE.test(text) || text.startsWith("=?base64?")) return
    expect(RequestMeta.encodeHeaderValue(text)).toBe(text)
  }, runs)

  it.prop("a plain value that reads as a sentinel is encoded too", { inner: anyText }, ({ inner }) => {
    const value = `=?base64?${inner}?=`
    const encoded = RequestMeta.encodeHeaderValue(value)
    expect(encoded).not.toBe(value)
    expect(encoded).toMatch(/^=\?base64\?[A-Za-z0-9+/]*={0,2}\?=$/)
    expect(RequestMeta.decodeHeaderValue(encoded)).toBe(value)
  }, runs)

  it("the markers are exact and lower case", () => {
    expect(RequestMeta.encodeHeaderValue("café")).toBe("=?base64?Y2Fmw6k=?=")
    expect(RequestMeta.decodeHeaderValue("=?base64?Y2Fmw6k=?=")).toBe("café")
    // Other spellings are plain values, not sentinels.
    expect(RequestMeta.decodeHeaderValue("=?BASE64?Y2Fmw6k=?=")).toBe("=?BASE64?Y2Fmw6k=?=")
    expect(RequestMeta.decodeHeaderValue("=?b?Y2Fmw6k=?=")).toBe("=?b?Y2Fmw6k=?=")
  })

  const base64Char = pick(["A", "z", "0", "+", "/", "=", "-", "_", "!", " ", "\n", "é", "?"])
  const payload = Arbitrary.array(base64Char, { maxLength: 12 }).pipe(Arbitrary.map((cs) => cs.join("")))
  /** Valid Base64: groups of four alphabet characters, `=` padding only at the end of the last one. */
  const isValidBase64 = (p: string) =>
    p.length % 4 === 0 && /^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(p) &&
    /^[A-Za-z0-9+/]*={0,2}$/.test(p)

  it.prop("a sentinel with invalid Base64 decodes to undefined", { p: payload }, ({ p }) => {
    if (isValidBase64(p)) return
    expect(RequestMeta.decodeHeaderValue(`=?base64?${p}?=`)).toBeUndefined()
  }, runs)

  it("invalid Base64 and bytes that are not UTF-8 decode to undefined", () => {
    for (const p of ["a", "ab", "abc", "a===", "ab=c", "YW!j", "YW_j", "YW-j", "YWJj\n", " YWJj", "=YWJ", "YQ", "YQ="]) {
      expect(RequestMeta.decodeHeaderValue(`=?base64?${p}?=`), p).toBeUndefined()
    }
    expect(RequestMeta.decodeHeaderValue("=?base64?/w==?=")).toBeUndefined() // 0xFF
    expect(RequestMeta.decodeHeaderValue("=?base64?wA==?=")).toBeUndefined() // a lone lead byte
    expect(RequestMeta.decodeHeaderValue("=?base64??=")).toBe("")
  })

  it.prop("a plain value a conforming sender would have encoded decodes to undefined", { text: anyText }, ({ text }) => {
    if (text.startsWith("=?base64?") && text.endsWith("?=")) return
    const plain = HEADER_SAFE.test(text)
    expect(RequestMeta.decodeHeaderValue(text)).toBe(plain ? text : undefined)
  }, runs)
})

describe("headerText and paramHeaders", () => {
  it("encodes strings as is, integers in decimal, booleans as true/false; nothing for other values", () => {
    expect(RequestMeta.headerText("us-west1", "string")).toBe("us-west1")
    expect(RequestMeta.headerText(42, "integer")).toBe("42")
    expect(RequestMeta.headerText(-7, "integer")).toBe("-7")
    expect(RequestMeta.headerText(true, "boolean")).toBe("true")
    expect(RequestMeta.headerText(false, "boolean")).toBe("false")
    for (const [value, type] of [[null, "string"], [undefined, "integer"], [1.5, "integer"], [2 ** 53, "integer"], ["1", "integer"], [1, "boolean"], [1, "string"], ["true", "boolean"]] as const) {
      expect(RequestMeta.headerText(value, type), `${String(value)} as ${type}`).toBeUndefined()
    }
  })

  const params: ReadonlyArray<RequestMeta.HeaderParam> = [
    { header: "Region", path: ["region"], type: "string" },
    { header: "Count", path: ["opts", "count"], type: "integer" },
    { header: "Dry-Run", path: ["opts", "dryRun"], type: "boolean" }
  ]
  const valueArb = Arbitrary.all({
    kind: pick(["absent", "null", "string", "integer", "float", "boolean", "object", "array"]),
    text: anyText,
    n: int(-1_000_000, 1_000_000),
    b: bool
  }).pipe(Arbitrary.map(({ b, kind, n, text }) => {
    switch (kind) {
      case "absent":
        return { absent: true as const }
      case "null":
        return { value: null }
      case "string":
        return { value: text }
      case "integer":
        return { value: n }
      case "float":
        return { value: n + 0.5 }
      case "boolean":
        return { value: b }
      case "object":
        return { value: { nested: text } }
      case "array":
        return { value: [n] }
    }
  }))

  it.prop("one header per parameter with a value of its type, encoded; none for null or absent", {
    region: valueArb,
    count: valueArb,
    dryRun: valueArb,
    optsNull: bool
  }, ({ count, dryRun, optsNull, region }) => {
    const put = (target: Record<string, unknown>, key: string, v: { absent: true } | { value: unknown }) => {
      if ("value" in v) target[key] = v.value
    }
    const opts: Record<string, unknown> = {}
    put(opts, "count", count)
    put(opts, "dryRun", dryRun)
    const args: Record<string, unknown> = { opts: optsNull ? null : opts }
    put(args, "region", region)
    const headers = RequestMeta.paramHeaders(params, args)

    const expected: Record<string, string> = {}
    const r = "value" in region ? region.value : undefined
    if (typeof r === "string") expected["mcp-param-region"] = RequestMeta.encodeHeaderValue(r)
    const c = !optsNull && "value" in count ? count.value : undefined
    if (typeof c === "number" && Number.isInteger(c)) expected["mcp-param-count"] = String(c)
    const d = !optsNull && "value" in dryRun ? dryRun.value : undefined
    if (typeof d === "boolean") expected["mcp-param-dry-run"] = String(d)
    expect(headers).toEqual(expected)
    for (const value of Object.values(headers)) expect(value).toMatch(HEADER_SAFE)
  }, runs)

  it("arguments that are not an object give no headers", () => {
    for (const args of [null, undefined, "x", 1, [{ region: "a" }]]) {
      expect(RequestMeta.paramHeaders(params, args)).toEqual({})
    }
  })
})

describe("headerMatches", () => {
  it.prop("integers compare numerically: 42, 42.0, 42.000 all stand for 42", {
    n: int(-1_000_000_000, 1_000_000_000),
    zeros: int(0, 4),
    lead: int(0, 2)
  }, ({ lead, n, zeros }) => {
    const digits = "0".repeat(lead) + String(Math.abs(n))
    const text = (n < 0 ? "-" : "") + digits + (zeros > 0 ? "." + "0".repeat(zeros) : "")
    expect(RequestMeta.headerMatches(text, n, "integer")).toBe(true)
    expect(RequestMeta.headerMatches(String(n + 1), n, "integer")).toBe(false)
    expect(RequestMeta.headerMatches(`${n}.5`, n, "integer")).toBe(false)
  }, runs)

  it("integers: text that is not a decimal integer never matches", () => {
    for (const text of ["", "4e1", "0x2a", "42a", "4 2", "forty-two", "42.1", "NaN", "Infinity"]) {
      expect(RequestMeta.headerMatches(text, 42, "integer"), text).toBe(false)
    }
    expect(RequestMeta.headerMatches("42", "42", "integer")).toBe(false)
  })

  it("integers outside the safe range never match (they would compare after rounding)", () => {
    expect(RequestMeta.headerMatches("9007199254740993", 9007199254740992, "integer")).toBe(false)
    expect(RequestMeta.headerMatches("9007199254740992", 9007199254740992, "integer")).toBe(false)
    expect(RequestMeta.headerMatches("9007199254740991", 9007199254740991, "integer")).toBe(true)
  })

  it("strings and booleans compare exactly", () => {
    expect(RequestMeta.headerMatches("us-west1", "us-west1", "string")).toBe(true)
    expect(RequestMeta.headerMatches("US-WEST1", "us-west1", "string")).toBe(false)
    expect(RequestMeta.headerMatches("42", 42, "string")).toBe(false)
    expect(RequestMeta.headerMatches("true", true, "boolean")).toBe(true)
    expect(RequestMeta.headerMatches("True", true, "boolean")).toBe(false)
    expect(RequestMeta.headerMatches("false", true, "boolean")).toBe(false)
    expect(RequestMeta.headerMatches("true", "true", "boolean")).toBe(false)
  })

  it.prop("what paramHeaders sends, decoded, matches the body value it came from", {
    text: anyText,
    n: int(-1_000_000, 1_000_000),
    b: bool
  }, ({ b, n, text }) => {
    for (const [value, type] of [[text, "string"], [n, "integer"], [b, "boolean"]] as const) {
      const sent = RequestMeta.encodeHeaderValue(RequestMeta.headerText(value, type)!)
      expect(RequestMeta.headerMatches(RequestMeta.decodeHeaderValue(sent)!, value, type)).toBe(true)
    }
  }, runs)
})

// ---------------------------------------------------------------------------
// x-mcp-header

type Position =
  | "properties"
  | "nested-properties"
  | "root"
  | "items"
  | "prefixItems"
  | "oneOf"
  | "anyOf"
  | "allOf"
  | "not"
  | "if"
  | "then"
  | "else"
  | "$defs"
  | "additionalProperties"
  | "patternProperties"

const positions: ReadonlyArray<Position> = [
  "properties",
  "nested-properties",
  "root",
  "items",
  "prefixItems",
  "oneOf",
  "anyOf",
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "$defs",
  "additionalProperties",
  "patternProperties"
]

interface Annotation {
  readonly name: unknown
  readonly type: string | undefined
  readonly position: Position
}

/** Puts an annotated property schema at a position of a tool's input schema; returns the schema and the path it is at. */
const place = (schema: Record<string, any>, key: string, annotated: Record<string, unknown>, position: Position) => {
  schema.properties ??= {}
  switch (position) {
    case "properties":
      schema.properties[key] = annotated
      return [key]
    case "nested-properties":
      schema.properties.outer ??= { type: "object", properties: {} }
      schema.properties.outer.properties[key] = annotated
      return ["outer", key]
    case "root":
      Object.assign(schema, annotated, { type: "object" })
      return undefined
    case "items":
      schema.properties[key] = { type: "array", items: annotated }
      return undefined
    case "prefixItems":
      schema.properties[key] = { type: "array", prefixItems: [annotated] }
      return undefined
    case "oneOf":
    case "anyOf":
    case "allOf":
      schema.properties[key] = { [position]: [annotated, { type: "null" }] }
      return undefined
    case "not":
    case "if":
    case "then":
    case "else":
      schema.properties[key] = { type: "string", [position]: annotated }
      return undefined
    case "$defs":
      schema.$defs = { ...schema.$defs, [key]: annotated }
      schema.properties[key] = { $ref: `#/$defs/${key}` }
      return undefined
    case "additionalProperties":
      schema.properties[key] = { type: "object", additionalProperties: annotated }
      return undefined
    case "patternProperties":
      schema.properties[key] = { type: "object", patternProperties: { "^a": annotated } }
      return undefined
  }
}

const nameArb = pick([
  "Region",
  "region",
  "X-Tenant",
  "a.b_c~d!#$%&'*+^`|",
  "Count9",
  "",
  "a b",
  "a\r\nb",
  "a\nb",
  "é",
  "a:b",
  "a/b",
  "a@b",
  "(x)",
  "a\"b",
  "a,b",
  42,
  true
])
const typeArb = pick(["string", "integer", "boolean", "number", "object", "array", "null", "none"]).pipe(
  Arbitrary.map((t) => (t === "none" ? undefined : t))
)
const annotationArb = Arbitrary.all({ name: nameArb, type: typeArb, position: pick(positions) })

const TCHAR = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/** The spec's rules for one tool, stated independently of the implementation. */
const model = (annotations: ReadonlyArray<Annotation>) => {
  const seen = new Set<string>()
  for (const a of annotations) {
    if (a.position !== "properties" && a.position !== "nested-properties") return false
    if (typeof a.name !== "string" || !TCHAR.test(a.name)) return false
    if (a.type !== "string" && a.type !== "integer" && a.type !== "boolean") return false
    const lower = a.name.toLowerCase()
    if (seen.has(lower)) return false
    seen.add(lower)
  }
  return true
}

describe("headerParams", () => {
  it.prop("accepts exactly the annotations the spec allows, and reports them with their paths", {
    annotations: Arbitrary.array(annotationArb, { maxLength: 4 })
  }, ({ annotations }) => {
    const schema: Record<string, any> = { type: "object" }
    const expected: Array<RequestMeta.HeaderParam> = []
    // At most one annotation at the root: a second would overwrite the first.
    const kept = annotations.filter((a, i) => a.position !== "root" || annotations.findIndex((b) => b.position === "root") === i)
    kept.forEach((a, i) => {
      const annotated: Record<string, unknown> = { "x-mcp-header": a.name }
      if (a.type !== undefined) annotated.type = a.type
      const path = place(schema, `p${i}`, annotated, a.position)
      if (path !== undefined) expected.push({ header: a.name as string, path, type: a.type as RequestMeta.HeaderParamType })
    })
    const found = RequestMeta.headerParams(schema)
    if (model(kept)) {
      expect(found).toEqual({ _tag: "Valid", params: expected })
    } else {
      expect(found._tag).toBe("Invalid")
    }
  }, { arbitrary: { runs: 2000 } })

  it("a valid schema: every rule met", () => {
    expect(RequestMeta.headerParams({
      type: "object",
      properties: {
        region: { type: "string", "x-mcp-header": "Region" },
        opts: { type: "object", properties: { count: { type: "integer", "x-mcp-header": "Count" } } },
        dry: { type: "boolean", "x-mcp-header": "Dry-Run" },
        plain: { type: "number" }
      }
    })).toEqual({
      _tag: "Valid",
      params: [
        { header: "Region", path: ["region"], type: "string" },
        { header: "Count", path: ["opts", "count"], type: "integer" },
        { header: "Dry-Run", path: ["dry"], type: "boolean" }
      ]
    })
  })

  const invalid: ReadonlyArray<[string, unknown]> = [
    ["an empty name", { properties: { a: { type: "string", "x-mcp-header": "" } } }],
    ["a name with CR LF", { properties: { a: { type: "string", "x-mcp-header": "A\r\nB" } } }],
    ["a name with a space", { properties: { a: { type: "string", "x-mcp-header": "A B" } } }],
    ["a non-ASCII name", { properties: { a: { type: "string", "x-mcp-header": "Région" } } }],
    ["a name that is not a string", { properties: { a: { type: "string", "x-mcp-header": 1 } } }],
    ["a number property", { properties: { a: { type: "number", "x-mcp-header": "A" } } }],
    ["an object property", { properties: { a: { type: "object", "x-mcp-header": "A" } } }],
    ["a property without a type", { properties: { a: { "x-mcp-header": "A" } } }],
    ["a nullable union type", { properties: { a: { type: ["string", "null"], "x-mcp-header": "A" } } }],
    ["the same name twice, ignoring case", {
      properties: { a: { type: "string", "x-mcp-header": "Region" }, b: { type: "string", "x-mcp-header": "REGION" } }
    }],
    ["under items", { properties: { a: { type: "array", items: { type: "string", "x-mcp-header": "A" } } } }],
    ["under properties under items", {
      properties: { a: { type: "array", items: { type: "object", properties: { b: { type: "string", "x-mcp-header": "B" } } } } }
    }],
    ["under oneOf", { properties: { a: { oneOf: [{ type: "string", "x-mcp-header": "A" }] } } }],
    ["under anyOf", { properties: { a: { anyOf: [{ type: "string", "x-mcp-header": "A" }] } } }],
    ["under allOf", { properties: { a: { allOf: [{ type: "string", "x-mcp-header": "A" }] } } }],
    ["under not", { properties: { a: { not: { type: "string", "x-mcp-header": "A" } } } }],
    ["under if", { properties: { a: { if: { type: "string", "x-mcp-header": "A" } } } }],
    ["under then", { properties: { a: { then: { type: "string", "x-mcp-header": "A" } } } }],
    ["under else", { properties: { a: { else: { type: "string", "x-mcp-header": "A" } } } }],
    ["behind a $ref", { $defs: { R: { type: "string", "x-mcp-header": "R" } }, properties: { a: { $ref: "#/$defs/R" } } }],
    ["on the root", { type: "string", "x-mcp-header": "Root" }]
  ]
  for (const [name, schema] of invalid) {
    it(`rejects ${name}`, () => {
      expect(RequestMeta.headerParams(schema)._tag).toBe("Invalid")
    })
  }

  it("ignores the key where it is data, not an annotation", () => {
    expect(RequestMeta.headerParams({
      type: "object",
      description: "mentions x-mcp-header",
      properties: {
        "x-mcp-header": { type: "string" },
        a: { type: "object", default: { "x-mcp-header": "A" }, examples: [{ "x-mcp-header": "B" }] },
        b: { type: "string", enum: ["x-mcp-header"], const: "x-mcp-header" }
      }
    })).toEqual({ _tag: "Valid", params: [] })
  })

  it("schemas without annotations give no parameters", () => {
    for (const schema of [undefined, null, "x", 1, {}, { type: "object", properties: { a: { type: "string" } } }]) {
      expect(RequestMeta.headerParams(schema)).toEqual({ _tag: "Valid", params: [] })
    }
  })
})

describe("standard headers", () => {
  it("Mcp-Name goes on tools/call, prompts/get and resources/read only, encoded", () => {
    expect(RequestMeta.standardHeaders("2026-07-28", "tools/call", { name: "echo" })).toEqual({
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "echo"
    })
    expect(RequestMeta.standardHeaders("2026-07-28", "resources/read", { uri: "file:///tmp/ä b.txt" })["mcp-name"])
      .toBe(RequestMeta.encodeHeaderValue("file:///tmp/ä b.txt"))
    expect(RequestMeta.standardHeaders("2026-07-28", "prompts/get", { name: " padded" })["mcp-name"]).toMatch(
      /^=\?base64\?/
    )
    expect(RequestMeta.standardHeaders("2026-07-28", "tools/list", { name: "echo" })).toEqual({
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/list"
    })
    expect(RequestMeta.standardHeaders("2026-07-28", "tools/call", { name: 1 })["mcp-name"]).toBeUndefined()
  })

})

const SCHEMA_REVISION = "2026-07-28"

describe.skipIf(!hasSpecSchema(SCHEMA_REVISION))("_meta against the official schema", () => {
  const validate = specValidator(SCHEMA_REVISION, "RequestMetaObject")

  it.prop("requestMeta conforms to the 2026-07-28 RequestMetaObject schema", {
    capabilities: Arbitrary.all({ sampling: bool, roots: bool, elicitation: bool, experimental: bool }),
    info: bool,
    logLevel: pick(["none", "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]),
    name: anyText
  }, ({ capabilities, info, logLevel, name }) => {
    const clientCapabilities: Record<string, unknown> = {}
    if (capabilities.sampling) clientCapabilities.sampling = {}
    if (capabilities.roots) clientCapabilities.roots = {}
    if (capabilities.elicitation) clientCapabilities.elicitation = { form: {} }
    if (capabilities.experimental) clientCapabilities.experimental = { "x.example": { on: true } }
    const meta = RequestMeta.requestMeta({
      protocolVersion: "2026-07-28",
      clientCapabilities,
      clientInfo: info ? { name, version: "1.0.0" } : undefined,
      logLevel: logLevel === "none" ? undefined : logLevel
    })
    expect(validate(meta)).toBeUndefined()
    expect(meta[RequestMeta.MetaKey.protocolVersion]).toBe("2026-07-28")
    expect(meta[RequestMeta.MetaKey.clientCapabilities]).toBe(clientCapabilities)
    expect(RequestMeta.MetaKey.clientInfo in meta).toBe(info)
    expect(RequestMeta.MetaKey.logLevel in meta).toBe(logLevel !== "none")
  }, { arbitrary: { runs: 200 } })

  it("the schema check itself rejects _meta without the required keys", () => {
    expect(validate({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" })).toBeDefined()
    expect(validate({ ...RequestMeta.requestMeta({ protocolVersion: "2026-07-28", clientCapabilities: {} }), "io.modelcontextprotocol/logLevel": "loud" })).toBeDefined()
  })
})
