/**
 * What a client that found no free slot (stream or request, see
 * `Sessions.enterSlots`) is told, on every endpoint alike: 503 when the
 * server is full, 429 when its principal or session is, with a JSON-RPC
 * error body and `Retry-After`.
 */
import * as Effect from "effect/Effect"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as JsonRpc from "../../JsonRpc.ts"
import * as Metrics from "../../observability/Metrics.ts"
import * as Security from "./Security.ts"
import type { Refusal } from "./Sessions.ts"

/**
 * Seconds a refused client is told to wait. Slots free as streams close and
 * handlers end, which the server cannot foresee: a short, fixed wait.
 */
export const RETRY_AFTER_SECONDS = 1

export const message = (refusal: Refusal): string => {
  switch (refusal) {
    case "server-full":
      return "Service unavailable: too many open streams"
    case "principal-full":
      return "Too many open streams for this principal"
    case "session-full":
      return "Too many open streams for this session"
  }
}

export const response = (refusal: Refusal): HttpServerResponse.HttpServerResponse =>
  Security.invalid(refusal === "server-full" ? 503 : 429, message(refusal), {
    "retry-after": String(RETRY_AFTER_SECONDS)
  })

/** The entry of a batch answer for a request that found no free slot: what a POST of its own would have been told. */
export const entry = (id: JsonRpc.RequestId, refusal: Refusal): JsonRpc.JsonRpcResponse =>
  JsonRpc.failure(id, JsonRpc.ErrorCode.InvalidRequest, message(refusal))

/** `response`, counted in `mcp.server.admission.refused`. */
export const refuse = (refusal: Refusal): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.as(Metrics.admissionRefused("stream", refusal), response(refusal))

/** `entry`, counted in `mcp.server.admission.refused`. */
export const refuseEntry = (id: JsonRpc.RequestId, refusal: Refusal): Effect.Effect<JsonRpc.JsonRpcResponse> =>
  Effect.as(Metrics.admissionRefused("stream", refusal), entry(id, refusal))
