/**
 * What one session of the HTTP server transport is (its engine, its streams,
 * its counters) and how its streams are named: stream ids unique across
 * processes, grouped under a digest of the session id so a store shared by a
 * fleet can keep them together, and the check that a `Last-Event-ID` stays
 * within its session.
 */
import { createHash, randomBytes } from "node:crypto"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import type * as JsonRpc from "../../JsonRpc.ts"
import type { TransportClosed } from "../../McpError.ts"
import type * as ServerSession from "../internal/ServerSession.ts"
import type { AuthInfo } from "../auth/TokenVerifier.ts"
import type { EventStoreShape } from "../EventStore.ts"
import type * as OutStream from "./OutStream.ts"

export type SessionKind = "streamable" | "legacy" | "ephemeral"

export interface RequestRoute {
  readonly out: OutStream.OutStream
  /** Whether the client accepts SSE on this POST; otherwise its messages go to the standalone stream. */
  readonly canStream: boolean
  /**
   * What must be done before `out` is first used, when anything must: the
   * POST's requests recorded in the fleet's in-flight registry, for a POST
   * whose stream opens only when its handler sends something on the way.
   * False when the POST was answered meanwhile: its stream will not open.
   */
  readonly opening?: Effect.Effect<boolean, TransportClosed> | undefined
}

export interface Session {
  /** Undefined for an ephemeral session (stateless mode), which no later request can name. */
  readonly id: string | undefined
  readonly kind: SessionKind
  readonly principalId: string
  readonly server: ServerSession.ServerSession
  /** Server-initiated messages: the GET stream (Streamable HTTP) or the one SSE connection (legacy). */
  readonly standalone: OutStream.OutStream
  /** Work started by POSTs (running handlers and writing their replies); lives as long as the session. */
  readonly work: FiberSet.FiberSet<unknown, unknown>
  readonly requestRoutes: Map<JsonRpc.RequestId, RequestRoute>
  /** Streams still being written, by stream id (resumable with `Last-Event-ID`). */
  readonly liveStreams: Map<string, OutStream.OutStream>
  /**
   * The stream ids this session may resume, so `Last-Event-ID` cannot reach
   * another session's events: the live ones and the last
   * `FINISHED_STREAMS_KEPT` finished ones.
   */
  readonly ownedStreams: Set<string>
  /** Finished streams still resumable, oldest first. */
  readonly finishedStreams: Array<string>
  /** Negotiated in `initialize` (read from the handler's result). */
  protocolVersion: string | undefined
  /** HTTP requests in progress and SSE connections open. */
  active: number
  /** Slots of `maxStreamsPerSession` taken: streams open, and requests until both their exchange and handler end. */
  slots: number
  lastActive: number
  readonly createdAt: number
  /** The client completed the handshake (see `completesHandshake`). */
  initialized: boolean
  closed: boolean
  /** What the principal's latest bearer token says (the `authorization` option); handlers see it as `auth`. */
  auth: AuthInfo | undefined
}

/**
 * `notifications/initialized` ends the handshake; so does any request other
 * than `ping`, from a client that skips the notification but clearly
 * considers itself initialized.
 */
export const completesHandshake = (message: JsonRpc.Classified): boolean =>
  message._tag === "Notification"
    ? message.message.method === "notifications/initialized"
    : message._tag === "Request" && message.message.method !== "ping" && message.message.method !== "initialize"

/**
 * Finished streams a session can still resume; older ones are forgotten
 * (their events too), so a long session answering over SSE holds bounded state.
 */
export const FINISHED_STREAMS_KEPT = 256

// Stream ids end up inside SSE event ids and in a possibly shared event store:
// unique across processes (a random prefix per process), cheap per stream (a
// counter). They grant nothing: a resumption is checked against the session
// that owns the stream. A session's streams start with a digest of its id
// and `~`, so a shared store can keep (and bound, and expire) them together.
const streamPrefix = randomBytes(9).toString("base64url")
let streams = 0
/** The part of a session's stream ids before `~`. */
export const sessionDigest = (sessionId: string): string =>
  createHash("sha256").update(sessionId).digest("base64url").slice(0, 16)
const streamId = (sessionId?: string) => {
  const own = `${streamPrefix}-${(++streams).toString(36)}`
  if (sessionId === undefined) return own
  return `${sessionDigest(sessionId)}~${own}`
}
/** A new stream id for a session's stream, named before the stream opens (see `Sessions.openStream`). */
export const newStreamId = streamId
/** A session's standalone stream in a shared store: the same id on every instance. */
export const sharedStandaloneId = (sessionId: string): string => `${sessionDigest(sessionId)}~standalone`

/**
 * Whether `Last-Event-ID` of `streamId` may resume in this session: a stream
 * it owns here or, with a store shared by a fleet (where another instance
 * may have written it), any stream under its digest.
 */
export const mayResume = (session: Session, streamId: string, store: EventStoreShape): boolean =>
  session.ownedStreams.has(streamId) ||
  (store.tail !== undefined && session.id !== undefined && streamId.startsWith(`${sessionDigest(session.id)}~`))

/** Whether a handler of the session still runs (its answers are written in `work` fibers). */
export const runsWork = (session: Session): boolean => !session.work[Symbol.iterator]().next().done

/** A request is being answered or a stream is open (both count in `active`), or a handler runs: not idle. */
export const isBusy = (session: Session): boolean => session.active > 0 || runsWork(session)

/**
 * Runs work in the session, outside the HTTP request that started it (a
 * disconnect does not cancel it): started at once with the services of
 * `parent`, the fiber of the step that calls this (`Effect.withFiber`), as
 * `FiberSet.run` starts it, without a step of its own. In a closed session
 * the work never starts: its fiber is interrupted.
 */
export const runInSessionUnsafe = <A, E>(
  parent: Fiber.Fiber<unknown, unknown>,
  session: Session,
  effect: Effect.Effect<A, E>
): Fiber.Fiber<A, E> => {
  const run = Effect.runForkWith(parent.context)
  if (session.work.state._tag === "Closed") return run(Effect.interrupt)
  const fiber = run(effect)
  FiberSet.addUnsafe(session.work, fiber)
  return fiber
}
