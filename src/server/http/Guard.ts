/**
 * The front door every route of the transport shares: Host and Origin
 * checks, authentication, CORS headers on the answer, and a last-resort
 * -32603 (never a stack trace) when something inside fails unexpectedly.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { buildNow } from "../../internal/BuildNow.ts"
import * as JsonRpc from "../../JsonRpc.ts"
import * as ServerSpans from "../internal/ServerSpans.ts"
import type { AvailabilityShape } from "../Availability.ts"
import type { EventStoreShape } from "../EventStore.ts"
import type { Handler } from "../Handler.ts"
import type { InFlightShape } from "../InFlight.ts"
import type { Resolved } from "./Config.ts"
import * as Drain from "./Drain.ts"
import * as RequestHeaders from "./RequestHeaders.ts"
import * as ResponseHeaders from "./ResponseHeaders.ts"
import * as Security from "./Security.ts"
import type { SendWatch } from "./SendWatch.ts"
import * as SharedUnavailable from "./SharedUnavailable.ts"
import type { Sessions } from "./Sessions.ts"
import type { Shared } from "./SharedSessions.ts"

export interface Env {
  readonly config: Resolved
  readonly sessions: Sessions
  readonly store: EventStoreShape
  readonly lists: Security.AllowLists
  /** The handler, for stateless-era requests (the sessions hold it for the rest). */
  readonly handler: Handler<never>
  /** What the handler runs with. */
  readonly services: Context.Context<never>
  /** Whether metrics or spans can record a request whose handler runs with `services` (`HandlerContext.observed`). */
  readonly observed: boolean
  /** Cuts the connections of clients that stop taking their answer; absent: none are watched. */
  readonly sendWatch?: SendWatch | undefined
  /**
   * Whether the principal may send these messages (the scopes they need);
   * a refusal is the answer to the whole POST. Absent: every message may be sent.
   */
  readonly authorize?:
    | ((
      principal: Security.Principal,
      messages: ReadonlyArray<JsonRpc.Classified>
    ) => HttpServerResponse.HttpServerResponse | undefined)
    | undefined
  /** Whether the store a fleet shares can be reached; absent: nothing is shared. */
  readonly availability?: AvailabilityShape | undefined
  /** Whether the transport is shutting down; absent: it never drains. */
  readonly drain?: Drain.Drain | undefined
  /** Where the requests of handshake-era sessions are recorded while they run; absent: nowhere. */
  readonly inFlight?: InFlightShape | undefined
  /** Sessions known to every instance of a fleet (a `SessionRegistry` present); absent: each instance keeps its own. */
  readonly shared?: Shared | undefined
}

export type Route = (
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope>

/**
 * A route as the router's handler: the request read from the context of the
 * fiber that runs it, in the route's first step. Given the route itself, the
 * router looks the request up as a service and passes it on: three steps.
 */
export const handler = (
  route: Route
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope> =>
  Effect.withFiber((fiber) => route(Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)))

export type Guarded = (
  request: HttpServerRequest.HttpServerRequest,
  principal: Security.Principal,
  /** The request's headers, read once (`RequestHeaders.of`). */
  headers: RequestHeaders.RequestHeaders
) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope>

/**
 * `f` serving its messages with the request's peer known (`ServerSpans.withHttpPeer`) when the
 * transport's services record anything (`Env.observed`), and `f` itself when they record nothing:
 * decided once, when the route is made, so that such a request pays no step for a peer.
 */
export const withPeer = (env: Env, f: Guarded): Guarded =>
  env.observed
    ? (request, principal, headers) => ServerSpans.withHttpPeer(request, headers, f(request, principal, headers))
    : f

export const guard = (env: Env, options: { readonly auth: boolean }, f: Guarded): Route => (request) => {
  const headers = RequestHeaders.of(request, env.config.ownListener)
  const origin = headers["origin"]
  const originAllowed = Security.isOriginAllowed(env.lists, origin)
  const authenticate = options.auth ? env.config.authenticate : undefined
  const unavailable = options.auth
    ? Drain.refusal(env.drain, env.availability?.retryAfterSeconds ?? 1) ??
      SharedUnavailable.refusal(env.availability, request.method, headers)
    : undefined
  const answer: Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope> =
    !Security.isHostAllowed(env.lists, headers["host"])
      ? Effect.succeed(Security.invalid(403, "Forbidden: Host header not allowed"))
      : !originAllowed
      ? Effect.succeed(Security.invalid(403, "Forbidden: Origin not allowed"))
      : unavailable !== undefined
      ? Effect.succeed(unavailable)
      : authenticate === undefined
      // Built now, the route's function or the authentication: a route runs in a step of its own already
      // (`handler`).
      ? buildNow(() => f(request, Security.anonymous, headers))
      : Effect.flatMap(Effect.result(buildNow(() => authenticate(request))), (checked) => {
        if (Result.isSuccess(checked)) return f(request, checked.success, headers)
        const e = checked.failure
        return Effect.succeed(Security.invalid(
          e.status ?? 401,
          e.description ?? "Unauthorized",
          e.wwwAuthenticate === "" ? undefined : { "www-authenticate": e.wwwAuthenticate }
        ))
      })
  const startWatch = env.sendWatch?.watchUnsafe(request)
  const watched = startWatch === undefined ? answer : Effect.andThen(startWatch, answer)
  return Effect.matchCauseEffect(watched, {
    onFailure: (cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : env.availability !== undefined && SharedUnavailable.isStoreFailure(cause)
        ? Effect.succeed(withCors(SharedUnavailable.lost(env.availability), origin, originAllowed))
        : Effect.as(
          Effect.logWarning("HTTP server transport: unexpected failure", Cause.pretty(cause)),
          withCors(Security.errorResponse(500, JsonRpc.ErrorCode.InternalError, "Internal error"), origin, originAllowed)
        ),
    onSuccess: (response) => Effect.succeed(withCors(response, origin, originAllowed))
  })
}

/**
 * `Security.corsHeaders` on an answer. Most clients send no `Origin`: their
 * answers get the one header it then holds, set alone.
 */
const withCors = (response: HttpServerResponse.HttpServerResponse, origin: string | undefined, allowed: boolean) =>
  origin === undefined || !allowed
    ? HttpServerResponse.setHeader(response, "vary", "Origin")
    : ResponseHeaders.add(response, Security.corsHeaders(origin, allowed))

/** Preflight: 204 with the CORS grants for an allowed origin, 403 for another. */
export const preflight = (env: Env): Route => (request) =>
  Effect.sync(() => {
    const headers = RequestHeaders.of(request, env.config.ownListener)
    const origin = headers["origin"]
    if (!Security.isHostAllowed(env.lists, headers["host"])) {
      return Security.invalid(403, "Forbidden: Host header not allowed")
    }
    const allowed = Security.isOriginAllowed(env.lists, origin)
    if (!allowed) {
      return ResponseHeaders.add(Security.invalid(403, "Forbidden: Origin not allowed"), Security.corsHeaders(origin, false))
    }
    return HttpServerResponse.empty({
      status: 204,
      headers: Security.preflightHeaders(
        origin,
        allowed,
        env.config.corsMaxAge,
        headers["access-control-request-headers"]
      )
    })
  })
