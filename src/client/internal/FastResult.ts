/**
 * Hand-checked decoding of the commonest results, for the per-call path of
 * `McpClient`: a Schema pass over a small `tools/call` result costs more than
 * the rest of the protocol layer. Each function returns exactly what the
 * Schema would decode, or `undefined` for anything it does not recognise at a
 * glance (extra known fields, odd prototypes, wrong types); the caller then
 * runs the Schema, so unusual and malformed results get the Schema's own
 * answer and error. test/client/FastResult.test.ts holds the two to each
 * other on generated valid and invalid results.
 */
import * as McpSchema from "effect/ai/McpSchema"

const ObjectProto = Object.prototype
const hasOwn = (o: object, key: string): boolean => ObjectProto.hasOwnProperty.call(o, key)

/** What `JSON.parse` builds: a non-null object with the ordinary prototype (arrays excluded by it too). */
const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && Object.getPrototypeOf(u) === ObjectProto

// A decoded Schema.Class value is an object with the class's prototype and the
// decoded fields as its own properties, in field order; building it directly
// skips the constructor's second validation of what was just checked.
const CallToolResultProto: object = McpSchema.CallToolResult.prototype

/**
 * `CallToolResult` whose content is text blocks only (`{ type: "text", text }`),
 * with optional `structuredContent` and `isError`. Unknown fields are dropped,
 * as the Schema does.
 */
export const callToolResult = (raw: unknown): McpSchema.CallToolResult | undefined => {
  if (!isPlainObject(raw) || hasOwn(raw, "_meta") || !hasOwn(raw, "content")) return undefined
  const content = raw.content
  if (!Array.isArray(content)) return undefined
  const n = content.length
  const blocks = new Array<{ readonly type: "text"; readonly text: string }>(n)
  for (let i = 0; i < n; i++) {
    const block: unknown = content[i]
    if (
      !isPlainObject(block) || block.type !== "text" || typeof block.text !== "string" ||
      hasOwn(block, "annotations") || hasOwn(block, "_meta") || !hasOwn(block, "type") || !hasOwn(block, "text")
    ) return undefined
    blocks[i] = { type: "text", text: block.text }
  }
  const out = Object.create(CallToolResultProto) as { content: unknown; structuredContent?: unknown; isError?: boolean }
  out.content = blocks
  if (hasOwn(raw, "structuredContent")) {
    const structured = raw.structuredContent
    if (structured === undefined) return undefined
    out.structuredContent = structured
  }
  if (hasOwn(raw, "isError")) {
    const isError = raw.isError
    if (typeof isError !== "boolean") return undefined
    out.isError = isError
  }
  return out as unknown as McpSchema.CallToolResult
}

/** A result with nothing in it (`Schema.Struct({})`), which the Schema passes through unchanged. */
export const emptyResult = (raw: unknown): {} | undefined => (isPlainObject(raw) ? raw : undefined)
