/**
 * Arbitraries for JSON-RPC traffic, derived from the Schemas in `JsonRpc`
 * (`effect/Arbitrary`, no fast-check). Every generated value survives a trip
 * over a real wire unchanged: it is what `JSON.parse` of its UTF-8 encoding
 * gives back (no -0, no lone surrogates, no undefined members), so a property
 * may compare what was sent with what arrived.
 */
import * as Arbitrary from "effect/Arbitrary"
import * as Schema from "effect/Schema"
import * as JsonRpc from "../JsonRpc.ts"
import * as JsonRpcSchema from "../JsonRpcSchema.ts"
import * as FaultInjection from "./FaultInjection.ts"

const wellFormed = (s: string): string => (s as unknown as { toWellFormed(): string }).toWellFormed()

/**
 * What a value becomes after JSON encoding, UTF-8 transport and decoding.
 * Exported so properties can normalize their own expectations the same way.
 */
export const wireNormalize = (value: unknown): unknown => {
  switch (typeof value) {
    case "string":
      return wellFormed(value)
    case "number":
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : null
    case "boolean":
      return value
    case "object": {
      if (value === null) return null
      if (Array.isArray(value)) return value.map((v) => (v === undefined || typeof v === "function" ? null : wireNormalize(v)))
      const entries: Array<[string, unknown]> = []
      for (const [k, v] of Object.entries(value)) {
        if (v === undefined || typeof v === "function" || typeof v === "symbol") continue
        entries.push([wellFormed(k), wireNormalize(v)])
      }
      // fromEntries defines own properties, so a "__proto__" key stays a key.
      return Object.fromEntries(entries)
    }
    default:
      return null
  }
}

const normalized = <A>(arb: Arbitrary.Arbitrary<A>): Arbitrary.Arbitrary<A> =>
  Arbitrary.map(arb, (a) => wireNormalize(a) as A)

/** Any JSON value. */
export const json: Arbitrary.Arbitrary<Schema.Json> = normalized(Arbitrary.schema(Schema.Json))

export const requestId: Arbitrary.Arbitrary<JsonRpc.RequestId> = normalized(Arbitrary.schema(JsonRpcSchema.RequestId))

export const request: Arbitrary.Arbitrary<JsonRpc.JsonRpcRequest> = normalized(
  Arbitrary.schema(JsonRpcSchema.Request)
)

export const notification: Arbitrary.Arbitrary<JsonRpc.JsonRpcNotification> = normalized(
  Arbitrary.schema(JsonRpcSchema.Notification)
)

export const success: Arbitrary.Arbitrary<JsonRpc.JsonRpcSuccess> = normalized(
  Arbitrary.schema(JsonRpcSchema.Success)
)

export const failure: Arbitrary.Arbitrary<JsonRpc.JsonRpcFailure> = normalized(
  Arbitrary.schema(JsonRpcSchema.Failure)
)

export const response: Arbitrary.Arbitrary<JsonRpc.JsonRpcResponse> = normalized(
  Arbitrary.schema(Schema.Union([JsonRpcSchema.Success, JsonRpcSchema.Failure]))
)

export const message: Arbitrary.Arbitrary<JsonRpc.JsonRpcMessage> = normalized(
  Arbitrary.schema(JsonRpcSchema.Message)
)

export const batch: Arbitrary.Arbitrary<JsonRpc.JsonRpcBatch> = Arbitrary.array(message, { minLength: 1, maxLength: 8 })

/** Text that is not JSON at all (a non-JSON lead character, then anything but a newline). */
export const garbage: Arbitrary.Arbitrary<string> = Arbitrary.map(
  Arbitrary.all([Arbitrary.schema(Schema.Literals(["{", "[", "x", "\"", "}", "nul", "1e", "-"])), Arbitrary.schema(Schema.String)]),
  ([lead, rest]) => {
    const text = lead + wellFormed(rest).replace(/[\n\r]/g, " ")
    try {
      JSON.parse(text)
      return text + "\u0001"
    } catch {
      return text
    }
  }
)

/**
 * A number in [0, 1], spread evenly. (A Schema-derived number in a range is
 * biased towards tiny values, which would leave fault rates and cut points
 * near zero in most runs.)
 */
export const fraction: Arbitrary.Arbitrary<number> = Arbitrary.map(
  Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000 }))),
  (n) => n / 1_000_000
)

/** Splits bytes at arbitrary points (empty chunks excluded), to test framing against any chunking. */
export const chunked = (bytes: Uint8Array): Arbitrary.Arbitrary<ReadonlyArray<Uint8Array>> =>
  Arbitrary.map(
    Arbitrary.array(fraction, { maxLength: Math.min(64, bytes.length) }),
    (fractions) => {
      const cuts = [...new Set(fractions.map((f) => Math.floor(f * bytes.length)))].filter((c) => c > 0 && c < bytes.length)
        .sort((a, b) => a - b)
      const chunks: Array<Uint8Array> = []
      let at = 0
      for (const cut of cuts) {
        chunks.push(bytes.subarray(at, cut))
        at = cut
      }
      if (at < bytes.length) chunks.push(bytes.subarray(at))
      return chunks
    }
  )

const probability = (max: number) => Arbitrary.map(fraction, (f) => f * max)

/**
 * Random fault plans for `FaultInjection.make({ random })`: a replay key and rates
 * of message-level faults (drop, delay, duplicate, reorder, corrupt,
 * truncate), each at most `maxRate`. Link cuts and kills are left out, since
 * they end a run at once; add them with `Arbitrary.map` when wanted.
 */
export const randomFaults = (maxRate = 0.15): Arbitrary.Arbitrary<FaultInjection.RandomFaults> =>
  Arbitrary.map(
    Arbitrary.all({
      replayKey: Arbitrary.schema(Schema.Int),
      drop: probability(maxRate),
      delay: probability(maxRate),
      duplicate: probability(maxRate),
      reorder: probability(maxRate),
      corrupt: probability(maxRate),
      truncate: probability(maxRate),
      maxDelayMs: Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 200 })))
    }),
    (r): FaultInjection.RandomFaults => ({ ...r, replayKey: r.replayKey === 0 ? 0 : r.replayKey })
  )

/** One fault of any kind (for command sequences). */
export const fault: Arbitrary.Arbitrary<FaultInjection.Fault> = Arbitrary.map(
  Arbitrary.all([
    Arbitrary.schema(Schema.Literals(["Drop", "Delay", "Duplicate", "Reorder", "Corrupt", "Truncate", "Cut", "Kill"])),
    Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 200 })))
  ]),
  ([tag, millis]) => tag === "Delay" ? FaultInjection.Fault.Delay({ millis }) : FaultInjection.Fault[tag]()
)
