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
// For a key that is usually absent, `"key" in o` first (a constant key at each place): it
// answers from V8's inline cache at a fraction of `hasOwnProperty`'s cost, and a key an
// object lacks altogether is not its own.

/** What `JSON.parse` builds: a non-null object with the ordinary prototype (arrays excluded by it too). */
const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && Object.getPrototypeOf(u) === ObjectProto

// A decoded Schema.Class value is an object with the class's prototype and the
// decoded fields as its own properties, in field order; building it directly
// skips the constructor's second validation of what was just checked.
const CallToolResultProto: object = McpSchema.CallToolResult.prototype

/**
 * A copy of a result's `_meta` as the Schema's record decoding makes it (a
 * fresh object, same keys in the same order, values as they are), or
 * `undefined` when the Schema should look at it.
 */
const metaCopy = (meta: unknown): Record<string, unknown> | undefined => {
  // `__proto__` as an own key (JSON.parse makes one) would set the copy's prototype if assigned.
  if (!isPlainObject(meta) || hasOwn(meta, "__proto__")) return undefined
  const out: Record<string, unknown> = {}
  for (const key in meta) out[key] = meta[key]
  return out
}

/**
 * `CallToolResult` whose content is text blocks only (`{ type: "text", text }`),
 * with optional `_meta` (an object: every result of the stateless revision
 * carries one), `structuredContent` and `isError`. Unknown fields (such as
 * that revision's `resultType`) are dropped, as the Schema does.
 */
export const callToolResult = (raw: unknown): McpSchema.CallToolResult | undefined => {
  if (!isPlainObject(raw) || !hasOwn(raw, "content")) return undefined
  let meta: Record<string, unknown> | undefined
  if ("_meta" in raw && hasOwn(raw, "_meta")) {
    meta = metaCopy(raw._meta)
    if (meta === undefined) return undefined
  }
  const content = raw.content
  if (!Array.isArray(content)) return undefined
  const n = content.length
  const blocks = new Array<{ readonly type: "text"; readonly text: string }>(n)
  for (let i = 0; i < n; i++) {
    const block: unknown = content[i]
    if (
      !isPlainObject(block) || block.type !== "text" || typeof block.text !== "string" ||
      ("annotations" in block && hasOwn(block, "annotations")) || ("_meta" in block && hasOwn(block, "_meta")) ||
      !hasOwn(block, "type") || !hasOwn(block, "text")
    ) return undefined
    blocks[i] = { type: "text", text: block.text }
  }
  const out = Object.create(CallToolResultProto) as {
    _meta?: unknown
    content: unknown
    structuredContent?: unknown
    isError?: boolean
  }
  // The Schema's field order: `_meta` first.
  if (meta !== undefined) out._meta = meta
  out.content = blocks
  if ("structuredContent" in raw && hasOwn(raw, "structuredContent")) {
    const structured = raw.structuredContent
    if (structured === undefined) return undefined
    out.structuredContent = structured
  }
  if ("isError" in raw && hasOwn(raw, "isError")) {
    const isError = raw.isError
    if (typeof isError !== "boolean") return undefined
    out.isError = isError
  }
  return out as unknown as McpSchema.CallToolResult
}

/** A result with nothing in it (`Schema.Struct({})`), which the Schema passes through unchanged. */
export const emptyResult = (raw: unknown): {} | undefined => (isPlainObject(raw) ? raw : undefined)
