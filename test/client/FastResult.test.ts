/**
 * The hand-checked result decoders (src/internal/FastResult.ts) against the
 * Schemas they stand in for: on generated valid, unusual and malformed
 * results, a fast answer is always exactly the Schema's (same class, same
 * fields in the same order), and anything else is left to the Schema; through
 * McpClient, malformed results still fail with the Schema's InvalidPayload.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Equal, Exit, Schema } from "effect"
import * as McpSchema from "effect/ai/McpSchema"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as FastResult from "../../src/client/internal/FastResult.ts"
import * as JsonRpc from "../../src/JsonRpc.ts"
import type { Handler } from "../../src/server/Handler.ts"

const decodeCallTool = Schema.decodeUnknownExit(McpSchema.CallToolResult)
const decodeEmpty = Schema.decodeUnknownExit(Schema.Struct({}))

const pick = <const A extends ReadonlyArray<string>>(options: A) => Arbitrary.schema(Schema.Literals(options))

/** Key order included: the fast path must build what the Schema builds, field by field. */
const shape = (u: unknown): unknown => {
  if (Array.isArray(u)) return u.map(shape)
  if (typeof u !== "object" || u === null) return u
  return [Object.getPrototypeOf(u), Object.keys(u), ...Object.values(u).map(shape)]
}

/** `times` copies of `a`: weights the choices of `pick`. */
const times = <const A extends string>(n: number, a: A): Array<A> => Array.from({ length: n }, () => a)

const block = Arbitrary.all({
  kind: pick([
    "text",
    "text",
    "text",
    "text-extra",
    "text-annotations",
    "text-meta",
    "text-number",
    "text-missing",
    "null-proto",
    "image",
    "image-bad",
    "null",
    "string",
    "array"
  ]),
  text: Arbitrary.schema(Schema.String)
}).pipe(Arbitrary.map(({ kind, text }): unknown => {
  switch (kind) {
    case "text":
      return { type: "text", text }
    case "text-extra":
      return { text, extra: [1], type: "text" }
    case "text-annotations":
      return { type: "text", text, annotations: { priority: 0.5 } }
    case "text-meta":
      return { type: "text", text, _meta: { k: text } }
    case "text-number":
      return { type: "text", text: 42 }
    case "text-missing":
      return { type: "text" }
    case "null-proto":
      return Object.assign(Object.create(null), { type: "text", text })
    case "image":
      return { type: "image", data: "aGk=", mimeType: "image/png" }
    case "image-bad":
      return { type: "image", data: 7, mimeType: "image/png" }
    case "null":
      return null
    case "string":
      return text
    default:
      return [text]
  }
}))

const result = Arbitrary.all({
  top: pick([...times(12, "object"), "null-proto", "array", "null", "number"]),
  content: pick([...times(12, "array"), "missing", "string", "object"]),
  blocks: Arbitrary.array(block, { maxLength: 3 }),
  structured: pick([...times(6, "absent"), "object", "number", "null", "undefined"]),
  isError: pick([...times(6, "absent"), "true", "false", "string", "undefined"]),
  meta: pick([...times(8, "absent"), "object", "object", "server-info", "empty", "null", "array", "proto-key", "string"]),
  extra: Arbitrary.schema(Schema.Boolean)
}).pipe(Arbitrary.map((r): unknown => {
  if (r.top === "null") return null
  if (r.top === "number") return 1
  if (r.top === "array") return [...r.blocks]
  const out: Record<string, unknown> = r.top === "null-proto" ? Object.create(null) : {}
  if (r.extra) out.unknownField = { x: 1 }
  if (r.isError !== "absent") {
    out.isError = r.isError === "true" ? true : r.isError === "false" ? false : r.isError === "string" ? "yes" : undefined
  }
  if (r.content !== "missing") {
    out.content = r.content === "array" ? r.blocks : r.content === "string" ? "text" : { 0: r.blocks[0] }
  }
  if (r.structured !== "absent") {
    out.structuredContent = r.structured === "object"
      ? { n: r.blocks.length }
      : r.structured === "number"
      ? 3
      : r.structured === "null"
      ? null
      : undefined
  }
  if (r.meta !== "absent") {
    out._meta = r.meta === "object"
      ? { trace: "t", n: r.blocks.length }
      : r.meta === "server-info"
      ? { "io.modelcontextprotocol/serverInfo": { name: "peer", version: "1.0.0" } }
      : r.meta === "empty"
      ? {}
      : r.meta === "null"
      ? null
      : r.meta === "array"
      ? ["m"]
      : r.meta === "proto-key"
      ? JSON.parse(`{"__proto__": {"polluted": true}, "k": 1}`)
      : "m"
  }
  return out
}))

describe("FastResult", () => {
  it.effect.prop("callToolResult: a fast answer is exactly the Schema's; malformed input is never answered", { raw: result }, ({ raw }) =>
    Effect.sync(() => {
      const fast = FastResult.callToolResult(raw)
      if (fast === undefined) return true
      const slow = decodeCallTool(raw)
      expect(Exit.isSuccess(slow)).toBe(true)
      if (Exit.isSuccess(slow)) {
        expect(fast).toBeInstanceOf(McpSchema.CallToolResult)
        expect(fast).toStrictEqual(slow.value)
        expect(shape(fast)).toEqual(shape(slow.value))
        expect(Equal.equals(fast, slow.value)).toBe(true)
      }
      return true
    }), { arbitrary: { runs: 1000 } })

  it.effect.prop("emptyResult: a fast answer is exactly the Schema's", { raw: result }, ({ raw }) =>
    Effect.sync(() => {
      const fast = FastResult.emptyResult(raw)
      if (fast === undefined) return true
      const slow = decodeEmpty(raw)
      return Exit.isSuccess(slow) && slow.value === fast
    }), { arbitrary: { runs: 200 } })

  it.effect("the generated results exercise the fast path, the Schema fallback and malformed input", () =>
    Effect.gen(function*() {
      const samples = yield* Arbitrary.sampleEffect(result, { count: 500, seed: 7 })
      let fast = 0
      let fallback = 0
      let malformed = 0
      for (const raw of samples) {
        if (FastResult.callToolResult(raw) !== undefined) fast++
        else if (Exit.isSuccess(decodeCallTool(raw))) fallback++
        else malformed++
      }
      expect(fast).toBeGreaterThan(25)
      expect(fallback).toBeGreaterThan(25)
      expect(malformed).toBeGreaterThan(25)
    }))

  it("the common shapes take the fast path", () => {
    const common: ReadonlyArray<unknown> = [
      { content: [] },
      { content: [{ type: "text", text: "ok" }] },
      { content: [{ type: "text", text: "a" }, { type: "text", text: "b", extra: 1 }], isError: true },
      { content: [{ type: "text", text: "{}" }], structuredContent: { n: 1 }, isError: false },
      JSON.parse(`{"content":[{"type":"text","text":"x"}],"unknown":1}`)
    ]
    for (const raw of common) {
      const fast = FastResult.callToolResult(raw)
      expect(fast).toBeDefined()
      expect(shape(fast)).toEqual(shape(Exit.isSuccess(decodeCallTool(raw)) ? (decodeCallTool(raw) as Exit.Success<unknown>).value : null))
    }
    expect(FastResult.emptyResult({})).toEqual({})
  })

  describe("through McpClient", () => {
    /** A server that answers initialize properly and every other request with `results[method]`. */
    const serverAnswering = (results: Record<string, unknown>): Handler => (message) =>
      Effect.succeed(
        !("id" in message)
          ? null
          : message.method === "initialize"
          ? JsonRpc.success(message.id, {
            protocolVersion: "2025-11-25",
            capabilities: { tools: {} },
            serverInfo: { name: "fixed", version: "1" }
          })
          : JsonRpc.success(message.id, Object.hasOwn(results, message.method) ? results[message.method] : {})
      )

    const callWith = (toolResult: unknown) =>
      Effect.gen(function*() {
        const pair = yield* InMemoryTransport.makePair(serverAnswering({ "tools/call": toolResult }))
        const client = yield* McpClient.fromTransport(pair.client)
        return yield* Effect.exit(client.callTool({ name: "t" }))
      })

    it.effect("a text result is the Schema's CallToolResult", () =>
      Effect.gen(function*() {
        const raw = { content: [{ type: "text", text: "hi", extra: 1 }], isError: false, other: 2 }
        const exit = yield* callWith(raw)
        expect(Exit.isSuccess(exit)).toBe(true)
        if (Exit.isSuccess(exit)) {
          expect(exit.value).toBeInstanceOf(McpSchema.CallToolResult)
          expect(exit.value).toStrictEqual((decodeCallTool(raw) as Exit.Success<unknown>).value)
        }
      }))

    it.effect("a result the fast path leaves alone still decodes through the Schema", () =>
      Effect.gen(function*() {
        const raw = { content: [{ type: "image", data: "aGk=", mimeType: "image/png" }], _meta: { t: 1 } }
        const exit = yield* callWith(raw)
        expect(Exit.isSuccess(exit)).toBe(true)
        if (Exit.isSuccess(exit)) {
          expect(exit.value.content[0]?.type).toBe("image")
          expect(exit.value).toStrictEqual((decodeCallTool(raw) as Exit.Success<unknown>).value)
        }
      }))

    it.effect("malformed results fail with the Schema's InvalidPayload", () =>
      Effect.gen(function*() {
        const malformed: ReadonlyArray<unknown> = [
          { content: "text" },
          { content: [{ type: "text", text: 1 }] },
          { content: [{ type: "text" }] },
          { content: [], isError: "yes" },
          { content: [{ type: "text", text: "a", annotations: { priority: 7 } }] },
          {}
        ]
        for (const raw of malformed) {
          const exit = yield* callWith(raw)
          const schemaExit = decodeCallTool(raw)
          expect(Exit.isFailure(schemaExit)).toBe(true)
          const expected = Exit.isFailure(schemaExit) ? String((schemaExit.cause.reasons[0] as { error: { message: string } }).error.message) : ""
          expect(exit).toStrictEqual(
            Exit.fail(expect.objectContaining({
              _tag: "McpProtocolError",
              reason: expect.objectContaining({ _tag: "InvalidPayload", method: "tools/call", kind: "result", reason: expected })
            }))
          )
        }
      }))

    it.effect("ping accepts {} and rejects a null result", () =>
      Effect.gen(function*() {
        const ok = yield* InMemoryTransport.makePair(serverAnswering({ ping: {} }))
        expect(yield* Effect.exit((yield* McpClient.fromTransport(ok.client)).ping())).toStrictEqual(Exit.void)
        const bad = yield* InMemoryTransport.makePair(serverAnswering({ ping: null }))
        const error = yield* Effect.flip((yield* McpClient.fromTransport(bad.client)).ping())
        expect(error).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "InvalidPayload", method: "ping" } })
      }))
  })
})

describe("FastResult on the stateless revision", () => {
  it("answers a result with resultType and the server's identity in _meta without the Schema", () => {
    const raw = JSON.parse(
      `{"content":[{"type":"text","text":"echo: hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"peer","version":"2.4.0"}}}`
    )
    const fast = FastResult.callToolResult(raw)
    expect(fast).toBeInstanceOf(McpSchema.CallToolResult)
    const slow = decodeCallTool(raw)
    expect(Exit.isSuccess(slow) && shape(slow.value)).toEqual(shape(fast))
    expect(fast?._meta).not.toBe(raw._meta)
  })
})
