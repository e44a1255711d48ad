/**
 * The sessions of one HTTP server transport: each is a ServerSession (the
 * handler's engine) plus the SSE streams that carry its server-to-client
 * messages, in a Scope of its own so that ending it (DELETE, idle expiry,
 * the SSE connection of a legacy client going away, server shutdown)
 * interrupts its handlers, fails its pending requests to the client and ends
 * its streams in one step.
 *
 * Also the admission limits (sessions, with eviction of idle ones at the
 * cap, see SessionAdmission; slots for streams and requests, counted in
 * SessionSlots) and the bookkeeping the leak tests read. What a session
 * holds and how its streams are named: HttpSession; what the sessions are
 * made with: SessionsConfig; building one: SessionBuild; handshake and idle
 * expiry: SessionExpiry; the stateless-era requests: StatelessRequests.
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import { TransportClosed } from "../../McpError.ts"
import * as KeepAlive from "./KeepAlive.ts"
import * as OutStream from "./OutStream.ts"
import * as SessionAdmission from "./SessionAdmission.ts"
import { FINISHED_STREAMS_KEPT, newStreamId as streamId, type Session, type SessionKind } from "./HttpSession.ts"
import * as SessionBuild from "./SessionBuild.ts"
import type { SessionsConfig } from "./SessionsConfig.ts"
import * as SessionSlots from "./SessionSlots.ts"
import type { Stats } from "./SessionSlots.ts"
import * as SharedStream from "./SharedStream.ts"
import * as StatelessRequests from "./StatelessRequests.ts"

export {
  completesHandshake,
  FINISHED_STREAMS_KEPT,
  mayResume,
  newStreamId,
  type RequestRoute,
  type Session,
  sessionDigest,
  type SessionKind,
  sharedStandaloneId
} from "./HttpSession.ts"
export {
  type Admission,
  enterSlotsThen,
  type Grant,
  type Refusal,
  runHoldingSlots,
  runHoldingSlotsUnsafe,
  type Stats
} from "./SessionSlots.ts"
export type { SessionsConfig } from "./SessionsConfig.ts"

export interface Refused {
  readonly _tag: "Refused"
  readonly reason: SessionAdmission.Refusal
  readonly retryAfterSeconds: number
  /** The handler's words, when it declined the session. */
  readonly message?: string | undefined
}

export const isRefused = (created: Session | Refused): created is Refused => "_tag" in created

export interface Sessions {
  /**
   * A new session; at the session caps an idle one is ended first to make
   * room, or none is made. The session counts as busy until the current
   * request scope closes, so no other client's initialize evicts it before
   * its own is answered.
   */
  readonly create: (kind: SessionKind, principalId: string) => Effect.Effect<Session | Refused, never, Scope.Scope>
  /**
   * A streamable session with a known id (one another instance of a fleet
   * made), admitted as `create` admits one; `prepare` runs before anyone
   * else can use it. Concurrent adoptions of one id make one session.
   */
  readonly adopt: (
    id: string,
    principalId: string,
    prepare: (session: Session) => Effect.Effect<void>
  ) => Effect.Effect<Session | Refused, never, Scope.Scope>
  readonly get: (id: string) => Session | undefined
  readonly getLegacy: (id: string) => Session | undefined
  /** Ends the session: its streams leave the event log too. */
  readonly close: (session: Session) => Effect.Effect<void>
  /**
   * Lets go of this copy of the session (idle, eviction, shutdown): with a
   * store shared by a fleet, the session lives on elsewhere, so its streams
   * stay in the log (until the session ends or their expiry); otherwise `close`.
   */
  readonly drop: (session: Session) => Effect.Effect<void>
  /** Interrupts every handler still running, either era, then drops every session (shutdown). */
  readonly closeAll: Effect.Effect<void>
  /**
   * Completes when no handler runs: no session's POST work (handlers and
   * their replies) and no stateless-era request. Requests that arrive
   * meanwhile are waited for too.
   */
  readonly awaitIdle: Effect.Effect<void>
  /** A new resumable (or, without a store, plain) stream owned by the session. */
  readonly newStream: (session: Session, resumable: boolean) => Effect.Effect<OutStream.OutStream>
  /**
   * `newStream` outside an effect (opened on first use, from a handler's `notify`);
   * `id` is one made beforehand with `newStreamId` (the stream is named before it opens).
   */
  readonly openStream: (session: Session, resumable: boolean, id?: string) => OutStream.OutStream
  /** See `SessionSlots.StreamSlots`. */
  readonly enter: SessionSlots.StreamSlots["enter"]
  readonly enterSlots: SessionSlots.StreamSlots["enterSlots"]
  readonly enterSlotsUnsafe: SessionSlots.StreamSlots["enterSlotsUnsafe"]
  readonly stats: Effect.Effect<Stats>
  /** A stream for one stateless-era request: no session, no store (nothing to resume), the transport's keep-alive. */
  readonly requestStreamUnsafe: () => OutStream.OutStream
  /**
   * Starts a stateless-era request's handler at once, counted in `stats`
   * while it runs; the caller interrupts it when the request's scope closes
   * first (the client went away).
   */
  readonly runStatelessUnsafe: StatelessRequests.StatelessRequests["runStatelessUnsafe"]
  readonly list: () => ReadonlyArray<Session>
  /** Completes when no request is being answered and no stream is open. */
  readonly awaitNoStreams: Effect.Effect<void>
  /**
   * With a store shared by a fleet: the frames of a client resuming after
   * `lastEventId` a stream of its session that is not live here (another
   * instance writes or wrote it), until the stream's end mark or the
   * session's end. `undefined` without a shared store.
   */
  readonly follow: (session: Session, streamId: string, lastEventId: string) => Stream.Stream<Uint8Array> | undefined
}

/**
 * Ends a detached session: its streams, its scope, its stored streams unless
 * kept, then the `onSessionEnd` hook. One generator function for every
 * session (`fnUntraced`), not one made per teardown (an ephemeral session
 * ends with every sessionless POST): see docs/design.md, "Per-request code and the old generation".
 */
const endSession = Effect.fnUntraced(function*(
  config: SessionsConfig,
  session: Session,
  scope: Scope.Closeable | undefined,
  keepLog: boolean
) {
  // Streams first, so open connections end gracefully instead of being cut.
  yield* session.standalone.close
  for (const out of session.liveStreams.values()) yield* out.close
  session.liveStreams.clear()
  session.requestRoutes.clear()
  if (scope !== undefined) yield* Scope.close(scope, Exit.void)
  if (!keepLog) for (const id of session.ownedStreams) yield* config.store.removeStream(id)
  session.ownedStreams.clear()
  session.finishedStreams.length = 0
  if (session.id !== undefined && config.onSessionEnd !== undefined) {
    // The hook's defects are its own: the session is closed either way.
    yield* Effect.exit(config.onSessionEnd(session.id))
  }
})

export const make = Effect.fnUntraced(function*(config: SessionsConfig): Effect.fn.Return<Sessions, never, Scope.Scope> {
  const parentScope = yield* Effect.scope
  const keepAlive = yield* KeepAlive.make(config.keepAliveMs)
  const { sessions, legacy, ephemeral, hold, detach, holdings, reserve } = SessionSlots.makeRegistry()
  const scopes = new WeakMap<Session, Scope.Closeable>()
  const slots = SessionSlots.makeStreamSlots(config)
  const { enter, enterSlots, enterSlotsUnsafe } = slots
  let streamsDropped = 0
  const onDropped = () => {
    streamsDropped++
  }

  const touch = (session: Session) => Effect.map(Clock.currentTimeMillis, (now) => {
    session.lastActive = now
  })

  const close = (session: Session): Effect.Effect<void> =>
    Effect.suspend(() => detach(session) ? teardown(session) : Effect.void)

  // A copy of a session in a fleet shares its log with the other copies (and with the instance that resumes it).
  const keepsLog = (session: Session) =>
    config.sharedLog === true || (config.store.tail !== undefined && session.kind === "streamable")
  const drop = (session: Session): Effect.Effect<void> =>
    Effect.suspend(() => detach(session) ? teardown(session, keepsLog(session)) : Effect.void)

  const teardown = (session: Session, keepLog = false): Effect.Effect<void> =>
    Effect.suspend(() => endSession(config, session, scopes.get(session), keepLog))

  const openStream = (session: Session, resumable: boolean, preset?: string): OutStream.OutStream => {
    const id = preset ?? streamId(session.id)
    const out = OutStream.makeUnsafe({
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
  }
  const newStream = (session: Session, resumable: boolean) => Effect.sync(() => openStream(session, resumable))

  /**
   * Decides, evicts and reserves the slot in one synchronous step, so that
   * concurrent initializes neither pick the same victim nor pass the cap.
   */
  const admit = (principalId: string, now: number): Refused | Session | undefined => {
    const decision = SessionAdmission.decide(principalId, holdings, config, now)
    if (decision._tag === "Refuse") {
      return { _tag: "Refused", reason: decision.reason, retryAfterSeconds: decision.retryAfterSeconds }
    }
    if (decision.evict !== undefined) detach(decision.evict)
    reserve(principalId, 1)
    return decision.evict
  }

  // Uninterruptible from the decision on: a client that goes away meanwhile
  // must not leave a victim half ended or its reserved slot taken.
  const create = (kind: SessionKind, principalId: string, knownId?: string): Effect.Effect<Session | Refused, never, Scope.Scope> =>
    kind === "ephemeral" ? build(kind, principalId) : Effect.acquireRelease(
      Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<Session | Refused> => {
        const admitted = admit(principalId, now)
        if (admitted !== undefined && isRefused(admitted)) return Effect.succeed(admitted)
        // An evicted session ends as any other does: its scope closed, onSessionEnd told.
        return Effect.andThen(admitted === undefined ? Effect.void : teardown(admitted, keepsLog(admitted)), build(kind, principalId, knownId)).pipe(
          Effect.flatMap(askHandler)
        )
      }),
      (created) =>
        isRefused(created) ? Effect.void : Effect.suspend(() => {
          created.active--
          return touch(created)
        })
    )

  /** The handler's say on a new session (`Handler.admitSession`); a declined one is closed at once. */
  const askHandler = (session: Session): Effect.Effect<Session | Refused> => {
    const admitSession = config.handler.admitSession
    if (admitSession === undefined || session.id === undefined) return Effect.succeed(session)
    return Effect.flatMap(admitSession(session.id), (refusal): Effect.Effect<Session | Refused> =>
      refusal === undefined ? Effect.succeed(session) : Effect.as(close(session), {
        _tag: "Refused",
        reason: "declined",
        retryAfterSeconds: Math.max(1, Math.ceil(refusal.retryAfterSeconds)),
        message: refusal.message
      }))
  }

  const builder: SessionBuild.Builder = { config, parentScope, drop, keepAlive, onDropped, scopes, reserve, hold }
  const build = (kind: SessionKind, principalId: string, knownId?: string) =>
    SessionBuild.build(builder, kind, principalId, knownId)

  const adopting = new Map<string, Deferred.Deferred<Session | Refused>>()
  const adopt = (
    id: string,
    principalId: string,
    prepare: (session: Session) => Effect.Effect<void>
  ): Effect.Effect<Session | Refused, never, Scope.Scope> =>
    Effect.suspend(() => {
      const held = sessions.get(id)
      if (held !== undefined) return Effect.succeed(held)
      const pending = adopting.get(id)
      if (pending !== undefined) return Deferred.await(pending)
      const done = Deferred.makeUnsafe<Session | Refused>()
      adopting.set(id, done)
      return create("streamable", principalId, id).pipe(
        Effect.tap((made) => isRefused(made) ? Effect.void : prepare(made)),
        Effect.onExit((exit) => {
          adopting.delete(id)
          return Deferred.done(done, exit)
        })
      )
    })

  const all = () => [...sessions.values(), ...legacy.values(), ...ephemeral]

  const stateless = StatelessRequests.make({ keepAlive, maxBufferedBytes: config.maxBufferedBytes, onDropped })

  const shuttingDown = () => new TransportClosed({ reason: "HTTP server shutting down" })
  // A session's handlers are interrupted before its streams close, and its work (which writes their
  // replies) given a moment to end: a POST stream then carries what its requests are owed, the shutdown's
  // error, before it ends.
  const closeSession = (s: Session) =>
    Effect.andThen(
      Effect.andThen(s.server.close(shuttingDown()), Effect.timeoutOption(FiberSet.awaitEmpty(s.work), "1 second")),
      drop(s)
    )
  const closeAll = Effect.suspend(() =>
    Effect.all([stateless.interruptAll, Effect.forEach(all(), closeSession, { concurrency: "unbounded", discard: true })], {
      concurrency: "unbounded",
      discard: true
    })
  )

  yield* Effect.addFinalizer(() => closeAll)

  const busy = Effect.gen(function*() {
    if (stateless.running() > 0) return true
    for (const s of all()) if ((yield* FiberSet.size(s.work)) > 0) return true
    return false
  })
  const awaitIdle: Effect.Effect<void> = Effect.gen(function*() {
    while (yield* busy) {
      yield* Effect.forEach(all(), (s) => FiberSet.awaitEmpty(s.work), { concurrency: "unbounded", discard: true })
      yield* stateless.awaitNone
    }
  })

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
      openStreams: slots.openStreams(),
      slotsInUse: slots.slotsInUse(),
      inFlight,
      work: workSize,
      storedEvents: yield* config.store.size,
      bufferedBytes,
      streamsDropped,
      statelessRequests: stateless.running()
    }
  })

  return {
    create,
    adopt,
    get: (id) => sessions.get(id),
    getLegacy: (id) => legacy.get(id),
    close,
    drop,
    closeAll,
    awaitIdle,
    newStream,
    openStream,
    enter,
    enterSlots,
    enterSlotsUnsafe,
    stats,
    requestStreamUnsafe: stateless.requestStreamUnsafe,
    runStatelessUnsafe: stateless.runStatelessUnsafe,
    list: all,
    awaitNoStreams: slots.awaitNoStreams,
    follow: (session, streamId, lastEventId) => {
      const tail = config.store.tail
      if (tail === undefined) return undefined
      return SharedStream.follower({
        tail,
        streamId,
        from: { after: lastEventId },
        keepAlive,
        until: session.standalone.awaitEnded
      })
    }
  } satisfies Sessions
})
