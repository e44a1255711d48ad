/**
 * The hand-checked `notifications/progress` decoder (src/client/internal/FastNotification.ts)
 * against the Schema it stands in for: on generated valid, unusual and
 * malformed params, a fast answer is exactly what the Schema path of
 * `ServerNotification.decode` builds, and whatever the Schema rejects the
 * fast path leaves to it, so a malformed progress still becomes `Other` with
 * the Schema's reason.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Result, Schema } from "effect"
import * as McpSchema from "effect/ai/McpSchema"
import * as ServerNotification from "../../src/client/ServerNotification.ts"
import * as FastNotification from "../../src/client/internal/FastNotification.ts"

const decodeParams = Schema.decodeUnknownResult(Schema.Struct(McpSchema.ProgressNotification.payloadSchema.fields))

/** What the Schema path gives for these params. */
const bySchema = (params: unknown): ServerNotification.ServerNotification => {
  const r = decodeParams(params)
  return Result.isSuccess(r)
    ? ServerNotification.ServerNotification.Progress({
      progressToken: r.success.progressToken,
      progress: r.success.progress,
      total: r.success.total,
      message: r.success.message
    })
    : ServerNotification.ServerNotification.Other({ method: "notifications/progress", params, invalid: r.failure.message })
}

const pick = <const A extends ReadonlyArray<string>>(options: A) => Arbitrary.schema(Schema.Literals(options))
const times = <const A extends string>(n: number, a: A): Array<A> => Array.from({ length: n }, () => a)

const params = Arbitrary.all({
  top: pick([...times(10, "object"), "null-proto", "array", "null", "string"]),
  token: pick([...times(4, "string"), ...times(3, "number"), "float", "absent", "null", "object", "infinity"]),
  progress: pick([...times(6, "number"), "float", "negative", "absent", "string", "null", "infinity"]),
  total: pick([...times(4, "absent"), "number", "number", "string", "null"]),
  message: pick([...times(4, "absent"), "string", "string", "number", "null"]),
  meta: pick([...times(5, "absent"), "object", "empty", "null", "array", "string"]),
  extra: Arbitrary.schema(Schema.Boolean),
  text: Arbitrary.schema(Schema.String),
  n: Arbitrary.schema(Schema.Int)
}).pipe(Arbitrary.map((p): unknown => {
  if (p.top === "null") return null
  if (p.top === "string") return p.text
  if (p.top === "array") return [p.n]
  const out: Record<string, unknown> = p.top === "null-proto" ? Object.create(null) : {}
  if (p.extra) out.other = { x: 1 }
  if (p.meta !== "absent") {
    out._meta = p.meta === "object" ? { trace: p.text } : p.meta === "empty" ? {} : p.meta === "null" ? null : p.meta === "array" ? [] : "m"
  }
  if (p.token !== "absent") {
    out.progressToken = p.token === "string"
      ? p.text
      : p.token === "number"
      ? p.n
      : p.token === "float"
      ? p.n + 0.5
      : p.token === "null"
      ? null
      : p.token === "object"
      ? { t: 1 }
      : Number.POSITIVE_INFINITY
  }
  if (p.progress !== "absent") {
    out.progress = p.progress === "number"
      ? p.n
      : p.progress === "float"
      ? p.n / 3
      : p.progress === "negative"
      ? -1
      : p.progress === "string"
      ? "1"
      : p.progress === "null"
      ? null
      : Number.POSITIVE_INFINITY
  }
  if (p.total !== "absent") out.total = p.total === "number" ? p.n + 1 : p.total === "string" ? "10" : null
  if (p.message !== "absent") out.message = p.message === "string" ? p.text : p.message === "number" ? 3 : null
  return out
}))

/** Key order included: the fast path must build what the Schema path builds. */
const shape = (u: unknown): unknown =>
  typeof u === "object" && u !== null ? [Object.getPrototypeOf(u), Object.keys(u), ...Object.values(u).map(shape)] : u

describe("FastNotification", () => {
  it.effect.prop("progress: a fast answer is exactly the Schema path's; what the Schema rejects is never answered", { raw: params }, ({ raw }) =>
    Effect.sync(() => {
      const fast = FastNotification.progress(raw)
      const slow = bySchema(raw)
      if (fast !== undefined) {
        expect(slow._tag).toBe("Progress")
        expect(shape(fast)).toEqual(shape(slow))
      }
      // And the public decoder, fast path or not, answers as the Schema does.
      const decoded = ServerNotification.decode({ jsonrpc: "2.0", method: "notifications/progress", params: raw as never })
      expect(shape(decoded)).toEqual(shape(slow))
      return true
    }), { arbitrary: { runs: 1000 } })

  it.effect("the generated params exercise the fast path, the Schema fallback and malformed params", () =>
    Effect.gen(function*() {
      const samples = yield* Arbitrary.sampleEffect(params, { count: 400, seed: 7 })
      let fast = 0
      let invalid = 0
      for (const raw of samples) {
        if (FastNotification.progress(raw) !== undefined) fast++
        else if (bySchema(raw)._tag === "Other") invalid++
      }
      expect(fast).toBeGreaterThan(20)
      expect(invalid).toBeGreaterThan(20)
    }))

  it.effect("a malformed progress decodes to Other with the Schema's reason", () =>
    Effect.sync(() => {
      for (const raw of [{ progressToken: "p1", progress: "1" }, { progress: 1 }, { progressToken: "p1", progress: 1, total: "9" }]) {
        const decoded = ServerNotification.decode({ jsonrpc: "2.0", method: "notifications/progress", params: raw })
        expect(decoded).toStrictEqual(bySchema(raw))
        expect(decoded).toMatchObject({ _tag: "Other", method: "notifications/progress", invalid: expect.any(String) })
      }
    }))
})
