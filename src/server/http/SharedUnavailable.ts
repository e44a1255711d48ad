/**
 * The answer to a request that needs the store a fleet shares while that
 * store cannot be reached: 503 with `Retry-After`, at once. What needs it:
 * everything of the handshake era (its streams are written to the shared
 * event log), the broadcast stream, and a stateless-era
 * `subscriptions/listen` (its notifications come over the bus). Any other
 * stateless-era request is served without it.
 */
import * as Cause from "effect/Cause"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as RequestMeta from "../../RequestMeta.ts"
import type { AvailabilityShape } from "../Availability.ts"
import * as MetaHeaders from "./MetaHeaders.ts"
import type { RequestHeaders } from "./RequestHeaders.ts"
import * as Security from "./Security.ts"

const needsShared = (method: string, headers: RequestHeaders): boolean =>
  !(method === "POST" && MetaHeaders.isStatelessVersion(headers[RequestMeta.Header.protocolVersion])) ||
  headers[RequestMeta.Header.method] === "subscriptions/listen"

const unavailable = (availability: AvailabilityShape) =>
  Security.invalid(503, "Service unavailable: the shared store cannot be reached", {
    "retry-after": String(availability.retryAfterSeconds)
  })

/**
 * Whether a request failed because the shared store failed under it (a
 * command refused or unanswered: a `RedisError`), rather than for a reason
 * of its own.
 */
export const isStoreFailure = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.some((reason) => {
    const error = Cause.isDieReason(reason) ? reason.defect : Cause.isFailReason(reason) ? reason.error : undefined
    return typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "RedisError"
  })

/** The answer to a request the store failed under: the same 503 as a refusal, since a retry may succeed. */
export const lost = (availability: AvailabilityShape): HttpServerResponse.HttpServerResponse => unavailable(availability)

/** The refusal, or `undefined` when the request may go on. */
export const refusal = (
  availability: AvailabilityShape | undefined,
  method: string,
  headers: RequestHeaders
): HttpServerResponse.HttpServerResponse | undefined =>
  availability === undefined || availability.available() || !needsShared(method, headers)
    ? undefined
    : unavailable(availability)
