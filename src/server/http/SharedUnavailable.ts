/**
 * The answer to a request that needs the store a fleet shares while that
 * store cannot be reached: 503 with `Retry-After`, at once. What needs it:
 * everything of the handshake era (its streams are written to the shared
 * event log), the broadcast stream, and a stateless-era
 * `subscriptions/listen` (its notifications come over the bus). Any other
 * stateless-era request is served without it.
 */
import * as Cause from "effect/Cause"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as RequestMeta from "../../RequestMeta.ts"
import type { AvailabilityShape } from "../Availability.ts"
import * as MetaHeaders from "./MetaHeaders.ts"
import * as Security from "./Security.ts"

const needsShared = (request: HttpServerRequest.HttpServerRequest): boolean =>
  !(request.method === "POST" && MetaHeaders.isStatelessVersion(request.headers[RequestMeta.Header.protocolVersion])) ||
  request.headers[RequestMeta.Header.method] === "subscriptions/listen"

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
  request: HttpServerRequest.HttpServerRequest
): HttpServerResponse.HttpServerResponse | undefined =>
  availability === undefined || availability.available() || !needsShared(request)
    ? undefined
    : unavailable(availability)
