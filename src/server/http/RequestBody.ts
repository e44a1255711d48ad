/**
 * Reading what a client POSTs: the body under a byte limit (a declared
 * `Content-Length` is checked before reading; a chunked body while the bytes
 * arrive, and reading stops at the limit; the answer closes the connection),
 * and the media-type checks around it.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { Readable } from "node:stream"
import { boundedMemo } from "../../internal/BoundedMemo.ts"
import * as JsonRpc from "../../JsonRpc.ts"
import type { RequestHeaders } from "./RequestHeaders.ts"
import { errorResponse, invalid } from "./Security.ts"

export class BodyTooLarge extends Data.TaggedError("BodyTooLarge")<{ readonly limit: number; readonly seen: number }> {}
export class BodyUnreadable extends Data.TaggedError("BodyUnreadable")<{ readonly cause: unknown }> {}

const decoder = new TextDecoder()

/**
 * The body as text, or `BodyTooLarge`; any other failure (`BodyUnreadable`,
 * or the request's own error on a body of declared length) means the body
 * could not be read. Plain code until the read: it runs for every POST.
 */
export const read = (
  request: HttpServerRequest.HttpServerRequest,
  headers: RequestHeaders,
  limit: number
): Effect.Effect<string, BodyTooLarge | BodyUnreadable | HttpServerError.HttpServerError> => {
  const declared = Number(headers["content-length"])
  if (Number.isFinite(declared)) {
    if (declared > limit) return Effect.fail(new BodyTooLarge({ limit, seen: declared }))
    // The HTTP parser delivers exactly the declared length, so the limit already holds.
    const body = unreadNodeBody(request, headers)
    if (body === undefined) return request.text
    return Effect.map(NodeStream.toArrayBuffer(() => body, { onError: bodyUnreadable }), (bytes) => {
      keepForLaterReads(request, bytes)
      return decoder.decode(bytes)
    })
  }
  const chunks: Array<Uint8Array> = []
  let size = 0
  return request.stream.pipe(
    Stream.mapError((cause) => new BodyUnreadable({ cause })),
    Stream.runForEachArray((array) => {
      for (const chunk of array) {
        size += chunk.length
        if (size > limit) return Effect.fail(new BodyTooLarge({ limit, seen: size }))
        chunks.push(chunk)
      }
      return Effect.void
    }),
    Effect.map(() => decoder.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)))
  )
}

const bodyUnreadable = (cause: unknown) => new BodyUnreadable({ cause })

/**
 * The Node stream of a request whose body nobody has started reading, read
 * here with effect's own reader: `request.text` wraps that reader in a cached
 * effect run in fibers of its own, 24,000 instructions of a stateless
 * `tools/call`'s 232,000 (BENCHMARKS.md, "The body read from Node's stream").
 * `undefined` sends the request through `request.text`: a body an
 * application's middleware read first is in its cache; a client waiting for
 * `100 Continue` gets it from there; and a request that is not Node's
 * (a web handler's) has no stream here.
 */
const unreadNodeBody = (request: HttpServerRequest.HttpServerRequest, headers: RequestHeaders): Readable | undefined => {
  if (headers["expect"] !== undefined) return undefined
  const source: Partial<Readable> | undefined = NodeHttpServerRequest.toIncomingMessage(request)
  return typeof source === "object" && source !== null && typeof source.on === "function" &&
      source.readableFlowing === null && source.readableDidRead === false
    ? source as Readable
    : undefined
}

/**
 * What was read goes where effect's own read keeps it, so that a later
 * `request.text` (`json`, `arrayBuffer`), in a middleware that reads the body
 * after the route, gets these bytes and not a stream already at its end.
 */
const keepForLaterReads = (request: HttpServerRequest.HttpServerRequest, bytes: ArrayBuffer) => {
  const cache = request as { arrayBufferEffect?: unknown }
  if ("arrayBufferEffect" in cache && cache.arrayBufferEffect === undefined) {
    cache.arrayBufferEffect = Effect.succeed(bytes)
  }
}

/** 413 with a JSON-RPC error; `Connection: close` so the rest of the body is never read. */
export const tooLarge = (error: BodyTooLarge) =>
  errorResponse(
    413,
    JsonRpc.ErrorCode.ParseError,
    "Request body too large",
    { limit: error.limit },
    { connection: "close" }
  )

export const unreadable = () => errorResponse(400, JsonRpc.ErrorCode.ParseError, "Parse error", "request body could not be read")

const mediaTypes = (header: string | undefined): ReadonlyArray<string> =>
  header === undefined ? [] : header.split(",").map((part) => part.split(";")[0].trim().toLowerCase()).filter((t) => t !== "")

/** A body we can parse: JSON, or no `Content-Type` at all (plain clients of `POST /mcp`). */
export const isJsonContent = (header: string | undefined): boolean => {
  if (header === undefined || header === "application/json") return true
  if (header.trim() === "") return true
  const type = mediaTypes(header)[0]
  return type === "application/json" || (type !== undefined && type.endsWith("+json"))
}

export interface Accepts {
  readonly json: boolean
  /** Only an explicit `text/event-stream`: a wildcard client (plain fetch) is answered with JSON. */
  readonly sse: boolean
}

const parseAccept = (header: string | undefined): Accepts => {
  const types = mediaTypes(header)
  if (types.length === 0) return { json: true, sse: false }
  return {
    json: types.includes("*/*") || types.includes("application/json") || types.includes("application/*"),
    sse: types.includes("text/event-stream")
  }
}

// A client sends the same `Accept` with every POST: parsed once per distinct value, up to a bound.
const ACCEPT_VALUES_KEPT = 64
const parsedAccept = boundedMemo(parseAccept, ACCEPT_VALUES_KEPT)

/** A missing `Accept` means JSON only (plain clients send none and read JSON). */
export const accepts = (header: string | undefined): Accepts =>
  header === undefined ? parseAccept(header) : parsedAccept(header)

/** For endpoints that only stream (GET): a missing `Accept` or a wildcard will do. */
export const acceptsEventStream = (header: string | undefined): boolean => {
  const types = mediaTypes(header)
  return types.length === 0 || types.includes("text/event-stream") || types.includes("text/*") || types.includes("*/*")
}

/** The 406 for a GET whose `Accept` leaves out `text/event-stream`; `undefined` when the stream may be sent. */
export const eventStreamRefusal = (headers: RequestHeaders): HttpServerResponse.HttpServerResponse | undefined =>
  acceptsEventStream(headers["accept"])
    ? undefined
    : invalid(406, "Not Acceptable: Accept must include text/event-stream")
