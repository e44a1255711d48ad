/**
 * What the sessions of one HTTP server transport are made with: the
 * handler and its services, the event store, the admission limits, the
 * timeouts and the sizes of their streams. Read by Sessions and by the
 * modules it is built from (SessionBuild, SessionExpiry).
 */
import type * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { EventStoreShape } from "../EventStore.ts"
import type { Handler } from "../Handler.ts"
import type { Resolved } from "./Config.ts"

/** The admission limits and timeouts, as the transport's configuration resolved them. */
type Limits = Pick<
  Resolved,
  | "maxSessions"
  | "maxSessionsPerPrincipal"
  | "handshakeTimeoutMs"
  | "maxStreams"
  | "maxStreamsPerPrincipal"
  | "maxStreamsPerSession"
  | "idleTimeoutMs"
>

export interface SessionsConfig extends Limits {
  readonly handler: Handler<never>
  /** What the handler runs with (the services present when the transport was built). */
  readonly services: Context.Context<never>
  readonly store: EventStoreShape
  readonly standaloneBuffer: number
  /** Bytes any one stream holds for a slow reader before that reader is dropped. */
  readonly maxBufferedBytes: number
  readonly requestTimeoutMs: number
  /** Interval of keep-alive comments on idle SSE connections; none when undefined. */
  readonly keepAliveMs: number | undefined
  /**
   * The event log is shared with other instances: a session this instance
   * lets go (`drop`, `closeAll`) keeps its streams there, for its
   * client to resume elsewhere (they expire by themselves).
   */
  readonly sharedLog?: boolean | undefined
  /** Told the id of every session with one (streamable, legacy) once it has ended. */
  readonly onSessionEnd?: ((sessionId: string) => Effect.Effect<void>) | undefined
  /** Whether principals are authenticated: handlers are then told theirs (`HandlerContext.principal`). */
  readonly namesPrincipal?: boolean | undefined
  /** What the ids of requests to clients start with (an instance of a fleet: `<instanceId>:`). */
  readonly idPrefix?: string | undefined
}
