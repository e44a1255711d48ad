/**
 * Where the sessions of the handshake era (2024-11-05 … 2025-11-25, over
 * Streamable HTTP) are known to every instance of a fleet: what `initialize`
 * settled (the principal, the negotiated revision, the client's info and
 * capabilities), whether the client finished the handshake, its log level.
 * An instance that gets a request naming a session it does not hold loads
 * the record and serves the session as its own (it adopts it); ending a
 * session anywhere (DELETE) ends it on every instance.
 *
 * Without the service the HTTP server transport keeps its sessions to
 * itself, as it always has: a session lives on the instance that made it.
 * A fleet provides the Redis one (`RedisFleet.layer`).
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Scope from "effect/Scope"

/**
 * A session as the fleet knows it.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionRecord {
  /** The principal that made the session; only it may use the session. */
  readonly principal: string
  /** The revision `initialize` negotiated (read from the handler's answer). */
  readonly protocolVersion: string
  /** `ready` once the client sent `notifications/initialized`. */
  readonly phase: "initializing" | "ready"
  readonly clientInfo: { readonly name: string; readonly version: string; readonly [key: string]: unknown }
  readonly clientCapabilities: Readonly<Record<string, unknown>>
  /** The client's latest `logging/setLevel`, if any. */
  readonly logLevel: string | undefined
  /** Milliseconds since the epoch. */
  readonly createdAt: number
}

/**
 * What may change after `initialize`.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionUpdate {
  readonly phase?: "initializing" | "ready" | undefined
  readonly logLevel?: string | undefined
}

/**
 * The registry could not be reached (or answered nonsense); the HTTP
 * transport answers 503 with `Retry-After`.
 *
 * @since 0.1.0
 * @category errors
 */
export class RegistryUnavailable extends Data.TaggedError("RegistryUnavailable")<{
  readonly operation: "create" | "load" | "update" | "end" | "claim"
  readonly sessionId: string
  readonly cause: unknown
}> {
  override get message(): string {
    return `Session registry unavailable (${this.operation} ${this.sessionId})`
  }
}

/**
 * What a registry does.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionRegistryShape {
  /** Records a new session; it expires after `ttlMs` unless loaded again. */
  readonly create: (sessionId: string, record: SessionRecord, ttlMs: number) => Effect.Effect<void, RegistryUnavailable>
  /**
   * The record, its expiry set `ttlMs` from now, in one round trip; none
   * when the session ended or expired.
   */
  readonly load: (sessionId: string, ttlMs: number) => Effect.Effect<Option.Option<SessionRecord>, RegistryUnavailable>
  /** Changes the phase or the log level of a session that still exists (a no-op otherwise). */
  readonly update: (sessionId: string, update: SessionUpdate) => Effect.Effect<void, RegistryUnavailable>
  /**
   * Ends a session for the whole fleet: true for the one call that ended
   * it (and announced it), false when it had ended already.
   */
  readonly end: (sessionId: string) => Effect.Effect<boolean, RegistryUnavailable>
  /**
   * Runs `onEnded` with the id of every session ended from now until the
   * scope closes, by any instance (this one included). Delivery is at most
   * once: an instance that misses one learns it at the session's next
   * request, whose `load` finds nothing.
   */
  readonly ended: (onEnded: (sessionId: string) => Effect.Effect<void>) => Effect.Effect<void, never, Scope.Scope>
  /**
   * True for the one caller, across the fleet, that claims delivering
   * `deliveryId` to the session (every instance holding a copy of the
   * session is asked); false for the others, and when the session ended.
   * Absent: every caller delivers.
   */
  readonly claimDelivery?: ((sessionId: string, deliveryId: string) => Effect.Effect<boolean, RegistryUnavailable>) | undefined
}

/**
 * The registry as a service: the HTTP server transport uses it when present.
 *
 * @since 0.1.0
 * @category services
 */
export class SessionRegistry extends Context.Service<SessionRegistry, SessionRegistryShape>()(
  "effect-mcp-transport/SessionRegistry"
) {}

/**
 * The Bus topic an ended session is announced on (its payload: the session id).
 *
 * @since 0.1.0
 * @category constants
 */
export const ENDED_TOPIC = "session-ended"

/**
 * How long a record lives without a request when the transport's sessions
 * have no idle timeout (`sessionIdleTimeout: "never"`): one hour.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 60 * 60 * 1000
