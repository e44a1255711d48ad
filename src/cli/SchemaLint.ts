/**
 * What `lint` finds in a server's tools, without a JSON Schema validator:
 * the structural rules of JSON Schema 2020-12 for `inputSchema` and
 * `outputSchema` (each keyword's value has the type the dialect gives it;
 * local `$ref`s resolve; patterns compile), what MCP asks of a tool (an
 * object schema, a unique name of 1 to 128 of `A-Z a-z 0-9 _ - .`), the
 * `x-mcp-header` annotations as `RequestMeta.headerParams` reads them, and
 * descriptions (of the tool and of each argument) a model needs.
 *
 * Errors are what a client may refuse or a validator reject; warnings are
 * what works but serves a model or another client badly.
 */
import type * as McpSchema from "effect/ai/McpSchema"
import * as RequestMeta from "../RequestMeta.ts"
import { isRecord } from "../internal/Records.ts"

export interface Problem {
  readonly tool: string
  readonly severity: "error" | "warning"
  /** Where in the tool: `name`, `description`, `inputSchema.properties.q.type`, … */
  readonly path: string
  readonly message: string
}

const DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
const TYPES = new Set(["null", "boolean", "object", "array", "number", "string", "integer"])
const NAME = /^[A-Za-z0-9_.-]{1,128}$/

const SUBSCHEMA = [
  "additionalProperties",
  "contains",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contentSchema"
]
const SCHEMA_MAPS = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]
const SCHEMA_ARRAYS = ["allOf", "anyOf", "oneOf", "prefixItems"]
const COUNTS = ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"]
const NUMBERS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]
const STRINGS = ["title", "description", "format", "$id", "$anchor", "$dynamicAnchor", "$comment", "$ref", "$dynamicRef", "$schema", "contentEncoding", "contentMediaType"]
const BOOLEANS = ["uniqueItems", "readOnly", "writeOnly", "deprecated"]

const kindOf = (u: unknown): string => (u === null ? "null" : Array.isArray(u) ? "an array" : `a ${typeof u}`)

/** The node a local JSON pointer (`#/$defs/x`) names, or undefined. */
const resolvePointer = (root: unknown, ref: string): unknown => {
  if (ref === "#") return root
  let node: unknown = root
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~")
    if (isRecord(node)) node = node[key]
    else if (Array.isArray(node) && /^\d+$/.test(key)) node = node[Number(key)]
    else return undefined
  }
  return node
}

/** The structural problems of one schema (a tool's `inputSchema` or `outputSchema`), found at `where`. */
export const schemaProblems = (
  schema: unknown,
  where: string
): Array<Omit<Problem, "tool">> => {
  const problems: Array<Omit<Problem, "tool">> = []
  const error = (path: string, message: string) => problems.push({ severity: "error", path, message })
  const warning = (path: string, message: string) => problems.push({ severity: "warning", path, message })

  const visit = (node: unknown, path: string): void => {
    if (typeof node === "boolean") return
    if (!isRecord(node)) return void error(path, `a schema is an object or a boolean, not ${kindOf(node)}`)
    for (const [key, value] of Object.entries(node)) {
      const at = `${path}.${key}`
      if (SUBSCHEMA.includes(key)) visit(value, at)
      else if (SCHEMA_MAPS.includes(key)) {
        if (!isRecord(value)) error(at, `must be an object of schemas, not ${kindOf(value)}`)
        else {
          for (const [name, child] of Object.entries(value)) {
            if (key === "patternProperties") checkPattern(name, at)
            visit(child, `${at}.${name}`)
          }
        }
        if (key === "definitions") warning(at, "\"definitions\" is the draft-07 name; 2020-12 uses \"$defs\"")
      } else if (SCHEMA_ARRAYS.includes(key)) {
        if (!Array.isArray(value) || value.length === 0) error(at, `must be a non-empty array of schemas`)
        else value.forEach((child, i) => visit(child, `${at}[${i}]`))
      } else if (key === "items") {
        if (Array.isArray(value)) error(at, "an array of schemas is the pre-2020-12 form: 2020-12 uses \"prefixItems\"")
        else visit(value, at)
      } else if (key === "additionalItems") {
        warning(at, "\"additionalItems\" is not a 2020-12 keyword (use \"items\" after \"prefixItems\")")
      } else if (key === "dependencies") {
        warning(at, "\"dependencies\" is the draft-07 keyword: 2020-12 splits it into \"dependentRequired\" and \"dependentSchemas\"")
      } else if (key === "type") checkType(value, at)
      else if (key === "enum") {
        if (!Array.isArray(value)) error(at, `must be an array, not ${kindOf(value)}`)
        else if (value.length === 0) warning(at, "an empty enum accepts nothing")
      } else if (key === "required") checkStrings(value, at)
      else if (key === "dependentRequired") {
        if (!isRecord(value)) error(at, `must be an object of string arrays, not ${kindOf(value)}`)
        else for (const [name, list] of Object.entries(value)) checkStrings(list, `${at}.${name}`)
      } else if (COUNTS.includes(key)) {
        if (typeof value !== "number" || !Number.isInteger(value) || value < 0) error(at, `must be a non-negative integer, not ${JSON.stringify(value)}`)
      } else if (NUMBERS.includes(key)) {
        if (typeof value === "boolean") error(at, `a boolean here is the draft-04 form: 2020-12 takes the bound itself (a number)`)
        else if (typeof value !== "number") error(at, `must be a number, not ${kindOf(value)}`)
        else if (key === "multipleOf" && value <= 0) error(at, "must be greater than 0")
      } else if (key === "pattern") {
        if (typeof value !== "string") error(at, `must be a string, not ${kindOf(value)}`)
        else checkPattern(value, at)
      } else if (STRINGS.includes(key)) {
        if (typeof value !== "string") error(at, `must be a string, not ${kindOf(value)}`)
        else if (key === "$ref" && (value === "#" || value.startsWith("#/"))) {
          if (resolvePointer(schema, value) === undefined) error(at, `${value} does not resolve within the schema`)
        } else if (key === "$schema" && value.replace(/#$/, "") !== DRAFT_2020_12) {
          warning(at, `the dialect is ${value}; MCP schemas default to JSON Schema 2020-12 (${DRAFT_2020_12})`)
        }
      } else if (BOOLEANS.includes(key)) {
        if (typeof value !== "boolean") error(at, `must be a boolean, not ${kindOf(value)}`)
      }
    }
    if (isRecord(node.properties) && Array.isArray(node.required)) {
      for (const name of node.required) {
        if (typeof name === "string" && !(name in node.properties) && node.additionalProperties === false) {
          error(`${path}.required`, `"${name}" is required but not a property, and additionalProperties is false`)
        }
      }
    }
  }

  const checkType = (value: unknown, at: string): void => {
    const names = Array.isArray(value) ? value : [value]
    if (names.length === 0) return void error(at, "an empty list of types accepts nothing")
    for (const name of names) {
      if (typeof name !== "string" || !TYPES.has(name)) {
        error(at, `${JSON.stringify(name)} is not a JSON Schema type (${[...TYPES].join(", ")})`)
      }
    }
    if (new Set(names).size !== names.length) error(at, "lists a type twice")
  }
  const checkStrings = (value: unknown, at: string): void => {
    if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) error(at, "must be an array of strings")
    else if (new Set(value).size !== value.length) error(at, "lists a name twice")
  }
  const checkPattern = (pattern: string, at: string): void => {
    try {
      new RegExp(pattern, "u")
    } catch (e) {
      error(at, `${JSON.stringify(pattern)} is not a valid regular expression: ${(e as Error).message}`)
    }
  }

  visit(schema, where)
  return problems
}

/** A tool as the server sent it, before any decoding (lint looks at what a strict client would refuse). */
export type RawTool = Partial<McpSchema.Tool> & Record<string, unknown>

/** Everything `lint` finds in one tool (its name's uniqueness is `lint`'s to check across tools). */
export const toolProblems = (tool: RawTool): Array<Problem> => {
  const found: Array<Omit<Problem, "tool">> = []
  const name = typeof tool.name === "string" ? tool.name : ""
  if (typeof tool.name !== "string") {
    found.push({ severity: "error", path: "name", message: `must be a string, not ${kindOf(tool.name)}` })
  } else if (!NAME.test(name)) {
    found.push({
      severity: name === "" ? "error" : "warning",
      path: "name",
      message: name.length > 128
        ? `is ${name.length} characters long; tool names should be 1 to 128`
        : `${JSON.stringify(name)}: tool names should use only A-Z a-z 0-9 _ - . (1 to 128 characters)`
    })
  }
  if (typeof tool.description !== "string" || tool.description.trim() === "") {
    found.push({ severity: "warning", path: "description", message: "no description: a model has only the name to go by" })
  }
  const input: unknown = tool.inputSchema
  if (!isRecord(input) || input.type !== "object") {
    found.push({ severity: "error", path: "inputSchema.type", message: "an inputSchema must be an object schema (type: \"object\")" })
  }
  found.push(...schemaProblems(input, "inputSchema"))
  if (isRecord(input) && isRecord(input.properties)) {
    for (const [prop, child] of Object.entries(input.properties)) {
      if (isRecord(child) && (typeof child.description !== "string" || child.description.trim() === "")) {
        found.push({
          severity: "warning",
          path: `inputSchema.properties.${prop}`,
          message: "no description: a model has only the name to go by"
        })
      }
    }
  }
  const headers = RequestMeta.headerParams(input)
  if (headers._tag === "Invalid") {
    found.push({ severity: "error", path: "inputSchema", message: `${headers.reason}: a client drops the tool` })
  }
  const output: unknown = (tool as { outputSchema?: unknown }).outputSchema
  if (output !== undefined) {
    if (!isRecord(output) || output.type !== "object") {
      found.push({ severity: "error", path: "outputSchema.type", message: "an outputSchema must be an object schema (type: \"object\")" })
    }
    found.push(...schemaProblems(output, "outputSchema"))
  }
  return found.map((p) => ({ tool: name, ...p }))
}

/** Everything `lint` finds in a server's tools, in the order they were listed. */
export const lint = (tools: ReadonlyArray<unknown>): Array<Problem> => {
  const seen = new Set<string>()
  const problems: Array<Problem> = []
  for (const [i, tool] of tools.entries()) {
    if (!isRecord(tool)) {
      problems.push({ tool: `#${i + 1}`, severity: "error", path: "", message: `a tool is an object, not ${kindOf(tool)}` })
      continue
    }
    const name = typeof tool.name === "string" ? tool.name : ""
    if (seen.has(name)) {
      problems.push({ tool: name, severity: "error", path: "name", message: "another tool has the same name" })
    }
    seen.add(name)
    problems.push(...toolProblems(tool as RawTool))
  }
  return problems
}
