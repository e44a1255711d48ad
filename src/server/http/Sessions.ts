/**
 * The sessions of one HTTP server transport: each is a ServerSession (the
 * handler's engine) plus the SSE streams that carry its server-to-client
 * messages, in a Scope of its own so that ending it (DELETE, idle expiry,
 * the SSE connection of a legacy client going away, server shutdown)
 * interrupts its handlers, fails its pending requests to the client and ends
 * its streams in one step.
 *
 * Also the admission limits (sessions, concurrent streams) and the
 * bookkeeping that idle expiry and the leak tests read.
 */
import { randomBytes, randomUUID } from "node:crypto"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Latch from "effect/Latch"
import * as Scope from "effect/Scope"
import type * as JsonRpc from "../../JsonRpc.ts"
import { TransportClosed } from "../../McpError.ts"
import * as ServerSession from "../../internal/ServerSession.ts"
import type { EventStoreShape } from "../EventStore.ts"
import type { Handler } from "../Handler.ts"
import * as KeepAlive from "./KeepAlive.ts"
import * as OutStream from "./OutStream.ts"

export type SessionKind = "streamable" | "legacy" | "ephemeral"

export interface RequestRoute {
  readonly out: OutStream.OutStream
  /** Whether the client accepts SSE on this POST; otherwise its messages go to the standalone stream. */
  readonly canStream: boolean
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
  connections: number
  lastActive: number
  closed: boolean
}

export interface SessionsConfig {
  readonly handler: Handler<never>
  /** What the handler runs with (the services present when the transport was built). */
  readonly services: Context.Context<never>
  readonly store: EventStoreShape
  readonly maxSessions: number
  readonly maxStreams: number
  readonly maxStreamsPerSession: number
  readonly idleTimeoutMs: number | undefined
  readonly standaloneBuffer: number
  /** Bytes any one stream holds for a slow reader before that reader is dropped. */
  readonly maxBufferedBytes: number
  readonly requestTimeoutMs: number
  /** Interval of keep-alive comments on idle SSE connections; none when undefined. */
  readonly keepAliveMs: number | undefined
  /** Told the id of every session with one (streamable, legacy) once it has ended. */
  readonly onSessionEnd?: ((sessionId: string) => Effect.Effect<void>) | undefined
}

export type Admission = "ok" | "server-full" | "session-full"

/**
 * Finished streams a session can still resume; older ones are forgotten
 * (their events too), so a long session answering over SSE holds bounded state.
 */
export const FINISHED_STREAMS_KEPT = 256

export interface Stats {
  readonly sessions: number
  readonly legacySessions: number
  readonly ephemeralSessions: number
  readonly openStreams: number
  readonly inFlight: number
  readonly work: number
  readonly storedEvents: number
  /** Bytes the sessions' resumable and standalone streams hold for their clients right now. */
  readonly bufferedBytes: number
  /** SSE connections dropped so far because their client fell too far behind (broadcast listeners aside). */
  readonly streamsDropped: number
}

export interface Sessions {
  readonly create: (kind: SessionKind, principalId: string) => Effect.Effect<Session | "full">
  readonly get: (id: string) => Session | undefined
  readonly getLegacy: (id: string) => Session | undefined
  readonly close: (session: Session) => Effect.Effect<void>
  readonly closeAll: Effect.Effect<void>
  /** A new resumable (or, without a store, plain) stream owned by the session. */
  readonly newStream: (session: Session, resumable: boolean) => Effect.Effect<OutStream.OutStream>
  /** Counts the request (and, with `stream`, an SSE slot) until the current request scope closes. */
  readonly enter: (session: Session | undefined, stream: boolean) => Effect.Effect<Admission, never, Scope.Scope>
  readonly stats: Effect.Effect<Stats>
  readonly list: () => ReadonlyArray<Session>
  /** Completes when no request is being answered and no stream is open. */
  readonly awaitNoStreams: Effect.Effect<void>
}

// Stream ids end up inside SSE event ids and in a possibly shared event store:
// unique across processes (a random prefix per process), cheap per stream (a
// counter). They grant nothing: a resumption is checked against the session
// that owns the stream.
const streamPrefix = randomBytes(9).toString("base64url")
let streams = 0
const streamId = () => `${streamPrefix}-${(++streams).toString(36)}`

export const make = Effect.fnUntraced(function*(config: SessionsConfig): Effect.fn.Return<Sessions, never, Scope.Scope> {
  const parentScope = yield* Effect.scope
  const keepAlive = yield* KeepAlive.make(config.keepAliveMs)
  const sessions = new Map<string, Session>()
  const legacy = new Map<string, Session>()
  const ephemeral = new Set<Session>()
  const scopes = new WeakMap<Session, Scope.Closeable>()
  let openStreams = 0
  let streamsDropped = 0
  const onDropped = () => {
    streamsDropped++
  }
  // Open while no stream is open: shutdown waits on it so connections are idle before the listener closes.
  const noStreams = Latch.makeUnsafe(true)

  const touch = (session: Session) => Effect.map(Clock.currentTimeMillis, (now) => {
    session.lastActive = now
  })

  const close = (session: Session): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (session.closed) return Effect.void
      session.closed = true
      if (session.id !== undefined) {
        if (session.kind === "legacy") legacy.delete(session.id)
        else sessions.delete(session.id)
      }
      ephemeral.delete(session)
      const scope = scopes.get(session)
      return Effect.gen(function*() {
        // Streams first, so open connections end gracefully instead of being cut.
        yield* session.standalone.close
        for (const out of session.liveStreams.values()) yield* out.close
        session.liveStreams.clear()
        session.requestRoutes.clear()
        if (scope !== undefined) yield* Scope.close(scope, Exit.void)
        for (const id of session.ownedStreams) yield* config.store.removeStream(id)
        session.ownedStreams.clear()
        session.finishedStreams.length = 0
        if (session.id !== undefined && config.onSessionEnd !== undefined) {
          // The hook's defects are its own: the session is closed either way.
          yield* Effect.exit(config.onSessionEnd(session.id))
        }
      })
    })

  const newStream = (session: Session, resumable: boolean) =>
    Effect.gen(function*() {
      const id = streamId()
      const out = yield* OutStream.make({
        streamId: id,
        store: resumable ? config.store : undefined,
        keepAlive,
        maxBufferedBytes: config.maxBufferedBytes,
        onDropped,
        onDrained: Effect.suspend(() => {
          session.liveStreams.delete(id)
          if (!resumable || session.closed) return Effect.void
          session.finishedStreams.push(id)
          if (session.finishedStreams.length <= FINISHED_STREAMS_KEPT) return Effect.void
          const oldest = session.finishedStreams.shift()!
          session.ownedStreams.delete(oldest)
          return config.store.removeStream(oldest)
        })
      })
      if (resumable) {
        session.ownedStreams.add(id)
        session.liveStreams.set(id, out)
      }
      return out
    })

  // Expiry never interrupts work: it only looks when nothing runs and no
  // request or stream is open, and it closes from outside the session scope.
  const expireWhenIdle = (session: Session, idleMs: number): Effect.Effect<void> =>
    Effect.gen(function*() {
      while (!session.closed) {
        const now = yield* Clock.currentTimeMillis
        const busy = session.active > 0 || (yield* session.server.inFlight) > 0 || (yield* FiberSet.size(session.work)) > 0
        const idleFor = now - session.lastActive
        if (!busy && idleFor >= idleMs) {
          yield* Effect.forkIn(close(session), parentScope)
          return
        }
        yield* Effect.sleep(Duration.millis(busy ? idleMs : idleMs - idleFor))
      }
    })

  const create = (kind: SessionKind, principalId: string): Effect.Effect<Session | "full"> =>
    Effect.gen(function*() {
      if (kind !== "ephemeral" && sessions.size + legacy.size >= config.maxSessions) return "full" as const
      const scope = yield* Scope.fork(parentScope, "sequential")
      const id = kind === "ephemeral" ? undefined : randomUUID()
      const standaloneId = streamId()
      const standalone = yield* OutStream.make({
        streamId: standaloneId,
        store: kind === "streamable" ? config.store : undefined,
        capacity: kind === "legacy" ? undefined : config.standaloneBuffer,
        maxBufferedBytes: config.maxBufferedBytes,
        onDropped,
        keepAlive
      })
      const requestRoutes = new Map<JsonRpc.RequestId, RequestRoute>()
      const closedError = () => new TransportClosed({ reason: "HTTP session closed" })
      const send = (message: JsonRpc.JsonRpcMessage) =>
        Effect.flatMap(standalone.offer(message), (accepted) => accepted ? Effect.void : Effect.fail(closedError()))
      // Once a request's own stream has ended (or ends on this message: its reader fell
      // behind), the standalone stream carries the rest.
      const sendFor = (requestId: JsonRpc.RequestId) => (message: JsonRpc.JsonRpcMessage) =>
        Effect.suspend(() => {
          const route = requestRoutes.get(requestId)
          if (route === undefined || !route.canStream || route.out.isEnded()) return send(message)
          return Effect.flatMap(route.out.offer(message), (accepted) => accepted ? Effect.void : send(message))
        })
      const work = yield* FiberSet.make<unknown, unknown>().pipe(Scope.provide(scope))
      const server = yield* ServerSession.make({
        handler: config.handler,
        send,
        sendFor,
        sessionId: id,
        defaultRequestTimeoutMs: config.requestTimeoutMs,
        // Separate POSTs race: a cancel may arrive before the request it cancels.
        earlyCancels: {},
        onHandlerError: (message, cause) =>
          Effect.logWarning(`MCP handler failed on ${message.method}`, Cause.pretty(cause)),
        // Only a resumable stream may be cut short: elsewhere the client could not come back for the rest.
        extendContext: kind === "streamable"
          ? (requestId) => ({
            closeSseStream: () => Effect.suspend(() => requestRoutes.get(requestId)?.out.closeConnection ?? Effect.void)
          })
          : undefined
      }).pipe(
        Scope.provide(scope),
        // The handler runs with the transport's services, never with the request that happened to create the session.
        Effect.updateContext((_: Context.Context<never>) => config.services)
      )
      const session: Session = {
        id,
        kind,
        principalId,
        server,
        standalone,
        work,
        requestRoutes,
        liveStreams: new Map(),
        ownedStreams: new Set(),
        finishedStreams: [],
        protocolVersion: undefined,
        active: 0,
        connections: 0,
        lastActive: yield* Clock.currentTimeMillis,
        closed: false
      }
      scopes.set(session, scope)
      if (kind === "streamable") {
        session.ownedStreams.add(standaloneId)
        session.liveStreams.set(standaloneId, standalone)
      }
      if (id === undefined) ephemeral.add(session)
      else if (kind === "legacy") legacy.set(id, session)
      else sessions.set(id, session)
      if (kind === "streamable" && config.idleTimeoutMs !== undefined) {
        yield* Effect.forkIn(expireWhenIdle(session, config.idleTimeoutMs), scope)
      }
      return session
    })

  const enter = (session: Session | undefined, stream: boolean): Effect.Effect<Admission, never, Scope.Scope> =>
    Effect.gen(function*() {
      if (stream) {
        if (openStreams >= config.maxStreams) return "server-full" as const
        if (session !== undefined && session.connections >= config.maxStreamsPerSession) return "session-full" as const
        if (openStreams++ === 0) noStreams.closeUnsafe()
        if (session !== undefined) session.connections++
      }
      if (session !== undefined) {
        session.active++
        yield* touch(session)
      }
      yield* Effect.addFinalizer(() =>
        Effect.suspend(() => {
          if (stream) {
            if (--openStreams === 0) noStreams.openUnsafe()
            if (session !== undefined) session.connections--
          }
          if (session === undefined) return Effect.void
          session.active--
          return touch(session)
        })
      )
      return "ok" as const
    })

  const all = () => [...sessions.values(), ...legacy.values(), ...ephemeral]

  const closeAll = Effect.suspend(() => Effect.forEach(all(), close, { concurrency: "unbounded", discard: true }))

  yield* Effect.addFinalizer(() => closeAll)

  const stats = Effect.gen(function*() {
    let inFlight = 0
    let workSize = 0
    let bufferedBytes = 0
    for (const s of all()) {
      inFlight += yield* s.server.inFlight
      workSize += yield* FiberSet.size(s.work)
      if (!s.liveStreams.has(s.standalone.streamId)) bufferedBytes += s.standalone.bufferedBytes()
      for (const out of s.liveStreams.values()) bufferedBytes += out.bufferedBytes()
    }
    return {
      sessions: sessions.size,
      legacySessions: legacy.size,
      ephemeralSessions: ephemeral.size,
      openStreams,
      inFlight,
      work: workSize,
      storedEvents: yield* config.store.size,
      bufferedBytes,
      streamsDropped
    }
  })

  return {
    create,
    get: (id) => sessions.get(id),
    getLegacy: (id) => legacy.get(id),
    close,
    closeAll,
    newStream,
    enter,
    stats,
    list: all,
    awaitNoStreams: noStreams.await
  } satisfies Sessions
})

/** Runs work in the session, outside the HTTP request that started it (a disconnect does not cancel it). */
export const runInSession = <A, E>(session: Session, effect: Effect.Effect<A, E>): Effect.Effect<Fiber.Fiber<A, E>> =>
  FiberSet.run(session.work, effect)
