/**
 * Who makes room when a new session arrives at a full server, and what a
 * refused client is told. Clients that end without a DELETE (the usual way
 * of the official SDK's `close()`) leave idle sessions behind; without
 * eviction they would hold every slot until idle expiry, long after the
 * clients left.
 *
 * The rules:
 * - at the principal's own cap, only that principal's idle sessions can
 *   make room;
 * - at the server's cap, the idle sessions of the newcomer's principal and
 *   of every principal holding more sessions than it does can: a slot never
 *   moves to a principal from one that holds no more than it, so a principal
 *   opening sessions in a loop recycles its own once it holds more than
 *   anyone else, and shares tend to even out;
 * - among those, the least recently used idle session goes;
 * - when none is idle the client is refused, with a `Retry-After` of the
 *   seconds until the soonest handshake deadline among the sessions that
 *   blocked it (such a session is closed then), at least 1; when none of them
 *   is waiting on its handshake, RETRY_AFTER_MAX_SECONDS, the upper bound too:
 *   a busy session may end at any moment, the server cannot tell when.
 */
import * as Effect from "effect/Effect"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Metrics from "../../observability/Metrics.ts"
import * as Security from "./Security.ts"

/** What admission reads of a session. */
export interface Slot {
  readonly principalId: string
  readonly lastActive: number
  readonly createdAt: number
  readonly initialized: boolean
}

export interface Limits {
  readonly maxSessions: number
  readonly maxSessionsPerPrincipal: number | undefined
  readonly handshakeTimeoutMs: number | undefined
}

export interface Holdings<S extends Slot> {
  /** Sessions held (those being created included). */
  readonly total: number
  /** Sessions held by a principal (those being created included). */
  readonly count: (principalId: string) => number
  readonly all: () => Iterable<S>
  readonly of: (principalId: string) => Iterable<S>
  /** A request, stream or handler is running in it: it is not evicted. */
  readonly isBusy: (session: S) => boolean
}

/** `declined`: the handler refused the session (`Handler.admitSession`). */
export type Refusal = "server-full" | "principal-full" | "declined"

export type Decision<S> =
  | { readonly _tag: "Admit"; readonly evict: S | undefined }
  | { readonly _tag: "Refuse"; readonly reason: Refusal; readonly retryAfterSeconds: number }

export const RETRY_AFTER_MAX_SECONDS = 30

const leastRecentlyUsedIdle = <S extends Slot>(
  sessions: Iterable<S>,
  eligible: (s: S) => boolean,
  isBusy: (s: S) => boolean
): S | undefined => {
  let found: S | undefined
  for (const s of sessions) {
    if ((found === undefined || s.lastActive < found.lastActive) && eligible(s) && !isBusy(s)) found = s
  }
  return found
}

/** The rule above: seconds until the soonest handshake deadline among `blocking`, within [1, RETRY_AFTER_MAX_SECONDS]. */
export const retryAfterSeconds = <S extends Slot>(
  blocking: Iterable<S>,
  eligible: (s: S) => boolean,
  handshakeTimeoutMs: number | undefined,
  now: number
): number => {
  if (handshakeTimeoutMs === undefined) return RETRY_AFTER_MAX_SECONDS
  let soonest = Infinity
  for (const s of blocking) {
    if (!s.initialized && eligible(s)) soonest = Math.min(soonest, s.createdAt + handshakeTimeoutMs - now)
  }
  if (soonest === Infinity) return RETRY_AFTER_MAX_SECONDS
  return Math.min(RETRY_AFTER_MAX_SECONDS, Math.max(1, Math.ceil(soonest / 1000)))
}

export const decide = <S extends Slot>(
  principalId: string,
  holdings: Holdings<S>,
  limits: Limits,
  now: number
): Decision<S> => {
  const own = holdings.count(principalId)
  const cap = limits.maxSessionsPerPrincipal
  if (cap !== undefined && own >= cap) {
    const mine = () => true
    const evict = leastRecentlyUsedIdle(holdings.of(principalId), mine, holdings.isBusy)
    return evict !== undefined ? { _tag: "Admit", evict } : {
      _tag: "Refuse",
      reason: "principal-full",
      retryAfterSeconds: retryAfterSeconds(holdings.of(principalId), mine, limits.handshakeTimeoutMs, now)
    }
  }
  if (holdings.total < limits.maxSessions) return { _tag: "Admit", evict: undefined }
  const counts = new Map<string, number>()
  const eligible = (s: S) => {
    if (s.principalId === principalId) return true
    let held = counts.get(s.principalId)
    if (held === undefined) counts.set(s.principalId, held = holdings.count(s.principalId))
    return held > own
  }
  const evict = leastRecentlyUsedIdle(holdings.all(), eligible, holdings.isBusy)
  return evict !== undefined ? { _tag: "Admit", evict } : {
    _tag: "Refuse",
    reason: "server-full",
    retryAfterSeconds: retryAfterSeconds(holdings.all(), eligible, limits.handshakeTimeoutMs, now)
  }
}

/** 503 when the server is full, 429 when the principal is: both with the `Retry-After` of the rule above. */
export const refused = (
  refusal: { readonly reason: Refusal; readonly retryAfterSeconds: number; readonly message?: string | undefined }
): HttpServerResponse.HttpServerResponse => {
  const headers = { "retry-after": String(refusal.retryAfterSeconds) }
  if (refusal.reason === "declined") {
    return Security.invalid(503, refusal.message ?? "Service unavailable: no more sessions now", headers)
  }
  return refusal.reason === "server-full"
    ? Security.invalid(503, "Service unavailable: too many sessions", headers)
    : Security.invalid(429, "Too many sessions for this principal", headers)
}

/** `refused`, counted in `mcp.server.admission.refused`. */
export const refuse = (
  refusal: { readonly reason: Refusal; readonly retryAfterSeconds: number; readonly message?: string | undefined }
): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.as(Metrics.admissionRefused("session", refusal.reason), refused(refusal))
