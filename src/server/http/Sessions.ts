/**
 * The sessions of one HTTP server transport: each is a ServerSession (the
 * handler's engine) plus the SSE streams that carry its server-to-client
 * messages, in a Scope of its own so that ending it (DELETE, idle expiry,
 * the SSE connection of a legacy client going away, server shutdown)
 * interrupts its handlers, fails its pending requests to the client and ends
 * its streams in one step.
 *
 * Also the admission limits (sessions, with eviction of idle ones at the
 * cap, see SessionAdmission; slots for streams and requests, server-wide,
 * per principal and per session), handshake and idle expiry, and the
 * bookkeeping the leak tests read.
 *
 * A request's slot is held until its handler ends, not only while its HTTP
 * exchange is open: a disconnect does not cancel the handler, so a slot freed
 * at the disconnect would let a client that posts and goes away in a loop
 * run any number of handlers.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Latch from "effect/Latch"
import * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type * as JsonRpc from "../../JsonRpc.ts"
import { TransportClosed } from "../../McpError.ts"
import * as ServerSession from "../internal/ServerSession.ts"
import type { AuthInfo } from "../auth/TokenVerifier.ts"
import type { EventStoreShape } from "../EventStore.ts"
import type { Handler } from "../Handler.ts"
import * as KeepAlive from "./KeepAlive.ts"
import * as OutStream from "./OutStream.ts"
import * as SessionAdmission from "./SessionAdmission.ts"
import * as SharedStream from "./SharedStream.ts"

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

export interface SessionsConfig {
  readonly handler: Handler<never>
  /** What the handler runs with (the services present when the transport was built). */
  readonly services: Context.Context<never>
  readonly store: EventStoreShape
  readonly maxSessions: number
  readonly maxSessionsPerPrincipal: number | undefined
  readonly handshakeTimeoutMs: number | undefined
  readonly maxStreams: number
  readonly maxStreamsPerPrincipal: number | undefined
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
  /** Whether principals are authenticated: handlers are then told theirs (`HandlerContext.principal`). */
  readonly namesPrincipal?: boolean | undefined
  /** What the ids of requests to clients start with (an instance of a fleet: `<instanceId>:`). */
  readonly idPrefix?: string | undefined
}

/** Which limit turned a request away: `maxStreams` (server-wide), `maxStreamsPerPrincipal` or `maxStreamsPerSession`. */
export type Refusal = "server-full" | "principal-full" | "session-full"

export type Admission = "ok" | Refusal

/** The slots `enterSlots` granted (up to the number asked for), and the limit that held back any others. */
export interface Grant {
  readonly granted: number
  readonly short: Refusal | undefined
  /**
   * Keeps the granted slots taken until `fiber` ends as well as the request
   * scope: the handlers a client started hold their slots after it goes away.
   */
  readonly holdUntilDone: (fiber: Fiber.Fiber<unknown, unknown>) => Effect.Effect<void>
}

export interface Refused {
  readonly _tag: "Refused"
  readonly reason: SessionAdmission.Refusal
  readonly retryAfterSeconds: number
  /** The handler's words, when it declined the session. */
  readonly message?: string | undefined
}

export const isRefused = (created: Session | Refused): created is Refused => "_tag" in created

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

export interface Stats {
  readonly sessions: number
  readonly legacySessions: number
  readonly ephemeralSessions: number
  /** Slots held by HTTP exchanges still open: SSE streams and requests being answered. */
  readonly openStreams: number
  /**
   * Slots taken against `maxStreams`: `openStreams`, plus the requests whose
   * exchange ended (a disconnect, the legacy endpoint's 202) while their
   * handler still runs.
   */
  readonly slotsInUse: number
  readonly inFlight: number
  readonly work: number
  readonly storedEvents: number
  /** Bytes the sessions' resumable and standalone streams hold for their clients right now. */
  readonly bufferedBytes: number
  /** SSE connections dropped so far because their client fell too far behind (broadcast listeners aside). */
  readonly streamsDropped: number
  /** Handlers running for stateless-era requests (each ends with its HTTP exchange at the latest). */
  readonly statelessRequests: number
}

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
  /** Drops every session (shutdown). */
  readonly closeAll: Effect.Effect<void>
  /** A new resumable (or, without a store, plain) stream owned by the session. */
  readonly newStream: (session: Session, resumable: boolean) => Effect.Effect<OutStream.OutStream>
  /**
   * `newStream` outside an effect (opened on first use, from a handler's `notify`);
   * `id` is one made beforehand with `newStreamId` (the stream is named before it opens).
   */
  readonly openStream: (session: Session, resumable: boolean, id?: string) => OutStream.OutStream
  /**
   * Counts the request (and, with `stream`, a slot of the principal's and the
   * session's, if any) until the current request scope closes.
   */
  readonly enter: (
    principalId: string,
    session: Session | undefined,
    stream: boolean
  ) => Effect.Effect<Admission, never, Scope.Scope>
  /**
   * `enter` for a POST that answers `wanted` requests (a batch): takes as many
   * slots as are free, up to `wanted`, until the request scope closes (or,
   * see `Grant.holdUntilDone`, later). None granted (while some were wanted)
   * means refused: nothing is counted.
   */
  readonly enterSlots: (
    principalId: string,
    session: Session | undefined,
    wanted: number
  ) => Effect.Effect<Grant, never, Scope.Scope>
  readonly stats: Effect.Effect<Stats>
  /** A stream for one stateless-era request: no session, no store (nothing to resume), the transport's keep-alive. */
  readonly requestStream: Effect.Effect<OutStream.OutStream>
  /**
   * Runs a stateless-era request's handler in the current request scope: it
   * is interrupted when that scope closes (the answer was written, or the
   * client went away), and counted in `stats` while it runs.
   */
  readonly runStateless: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<Fiber.Fiber<A, E>, never, Scope.Scope>
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

export const make = Effect.fnUntraced(function*(config: SessionsConfig): Effect.fn.Return<Sessions, never, Scope.Scope> {
  const parentScope = yield* Effect.scope
  const keepAlive = yield* KeepAlive.make(config.keepAliveMs)
  const sessions = new Map<string, Session>()
  const legacy = new Map<string, Session>()
  const ephemeral = new Set<Session>()
  const scopes = new WeakMap<Session, Scope.Closeable>()
  // Streamable and legacy sessions by principal, and the slots taken by sessions being made.
  const byPrincipal = new Map<string, Set<Session>>()
  const reserved = new Map<string, number>()
  let reservedTotal = 0
  let openStreams = 0
  let slotsInUse = 0
  const principalSlots = new Map<string, number>()
  let streamsDropped = 0
  const onDropped = () => {
    streamsDropped++
  }
  // Open while no stream is open: shutdown waits on it so connections are idle before the listener closes.
  const noStreams = Latch.makeUnsafe(true)

  const touch = (session: Session) => Effect.map(Clock.currentTimeMillis, (now) => {
    session.lastActive = now
  })

  const hold = (session: Session) => {
    if (session.id === undefined) {
      ephemeral.add(session)
      return
    }
    if (session.kind === "legacy") legacy.set(session.id, session)
    else sessions.set(session.id, session)
    let held = byPrincipal.get(session.principalId)
    if (held === undefined) byPrincipal.set(session.principalId, held = new Set())
    held.add(session)
  }

  /** Takes the session out of every index at once, so no one else picks it; false if it was already out. */
  const detach = (session: Session): boolean => {
    if (session.closed) return false
    session.closed = true
    ephemeral.delete(session)
    if (session.id === undefined) return true
    if (session.kind === "legacy") legacy.delete(session.id)
    else sessions.delete(session.id)
    const held = byPrincipal.get(session.principalId)
    held?.delete(session)
    if (held?.size === 0) byPrincipal.delete(session.principalId)
    return true
  }

  const close = (session: Session): Effect.Effect<void> =>
    Effect.suspend(() => detach(session) ? teardown(session) : Effect.void)

  // A streamable session's copy in a fleet shares its log with the other copies.
  const keepsLog = (session: Session) => config.store.tail !== undefined && session.kind === "streamable"
  const drop = (session: Session): Effect.Effect<void> =>
    Effect.suspend(() => detach(session) ? teardown(session, keepsLog(session)) : Effect.void)

  const teardown = (session: Session, keepLog = false): Effect.Effect<void> =>
    Effect.suspend(() => {
      const scope = scopes.get(session)
      return Effect.gen(function*() {
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
    })

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

  const runsWork = (session: Session) => !session.work[Symbol.iterator]().next().done
  // Requests are answered in `work` fibers, and an HTTP request (a stream too) counts in `active`.
  const isBusy = (session: Session) => session.active > 0 || runsWork(session)

  // Expiry never interrupts work: it only looks when nothing runs and no
  // request or stream is open, and it closes from outside the session scope.
  const expireWhenIdle = (session: Session, idleMs: number): Effect.Effect<void> =>
    Effect.gen(function*() {
      while (!session.closed) {
        const now = yield* Clock.currentTimeMillis
        const busy = session.active > 0 || (yield* session.server.inFlight) > 0 || (yield* FiberSet.size(session.work)) > 0
        const idleFor = now - session.lastActive
        if (!busy && idleFor >= idleMs) {
          yield* Effect.forkIn(drop(session), parentScope)
          return
        }
        yield* Effect.sleep(Duration.millis(busy ? idleMs : idleMs - idleFor))
      }
    })

  // A client that never finishes the handshake has no use for its streams,
  // so only running requests hold the session past the deadline.
  const expireUnlessInitialized = (session: Session, timeoutMs: number): Effect.Effect<void> =>
    Effect.gen(function*() {
      yield* Effect.sleep(Duration.millis(timeoutMs))
      while (!session.closed && !session.initialized) {
        if (!runsWork(session) && (yield* session.server.inFlight) === 0) {
          yield* Effect.forkIn(drop(session), parentScope)
          return
        }
        yield* FiberSet.awaitEmpty(session.work)
      }
    })

  const holdings: SessionAdmission.Holdings<Session> = {
    get total() {
      return sessions.size + legacy.size + reservedTotal
    },
    count: (principalId) => (byPrincipal.get(principalId)?.size ?? 0) + (reserved.get(principalId) ?? 0),
    all: () => [...sessions.values(), ...legacy.values()],
    of: (principalId) => byPrincipal.get(principalId) ?? [],
    isBusy
  }

  const reserve = (principalId: string, by: 1 | -1) => {
    reservedTotal += by
    const n = (reserved.get(principalId) ?? 0) + by
    if (n === 0) reserved.delete(principalId)
    else reserved.set(principalId, n)
  }

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

  /** For a streamable or legacy session, its slot was reserved by `admit`; `hold` takes it over. */
  const build = (kind: SessionKind, principalId: string, knownId?: string): Effect.Effect<Session> => {
    let slotReserved = kind !== "ephemeral"
    const release = Effect.sync(() => {
      if (slotReserved) reserve(principalId, -1)
      slotReserved = false
    })
    return Effect.gen(function*() {
      const scope = yield* Scope.fork(parentScope, "sequential")
      const now = yield* Clock.currentTimeMillis
      const id = kind === "ephemeral" ? undefined : knownId ?? randomUUID()
      // With a shared store, every instance writes the one standalone stream of the session.
      const tail = kind === "streamable" && id !== undefined ? config.store.tail : undefined
      const standaloneId = tail !== undefined ? sharedStandaloneId(id!) : streamId(id)
      const standalone = tail !== undefined
        ? SharedStream.makeStandalone({ streamId: standaloneId, store: config.store, tail, keepAlive })
        : yield* OutStream.make({
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
      // Assigned below; the handler contexts read it only once messages arrive.
      let session: Session = undefined as unknown as Session
      const server = yield* ServerSession.make({
        handler: config.handler,
        send,
        sendFor,
        sessionId: id,
        ephemeral: kind === "ephemeral",
        defaultRequestTimeoutMs: config.requestTimeoutMs,
        // Separate POSTs race: a cancel may arrive before the request it cancels.
        earlyCancels: {},
        idPrefix: config.idPrefix,
        identity: () => ({
          principal: config.namesPrincipal === true ? principalId : undefined,
          auth: session.auth
        }),
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
      session = {
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
        // Held by the request that creates it (see `create`).
        active: kind === "ephemeral" ? 0 : 1,
        slots: 0,
        lastActive: now,
        createdAt: now,
        initialized: false,
        closed: false,
        auth: undefined
      }
      scopes.set(session, scope)
      if (kind === "streamable") {
        session.ownedStreams.add(standaloneId)
        session.liveStreams.set(standaloneId, standalone)
      }
      yield* release
      hold(session)
      if (kind === "streamable" && config.idleTimeoutMs !== undefined) {
        yield* Effect.forkIn(expireWhenIdle(session, config.idleTimeoutMs), scope)
      }
      if (kind !== "ephemeral" && config.handshakeTimeoutMs !== undefined) {
        yield* Effect.forkIn(expireUnlessInitialized(session, config.handshakeTimeoutMs), scope)
      }
      return session
    }).pipe(Effect.ensuring(release))
  }

  const takeSlots = (principalId: string, session: Session | undefined, n: number) => {
    slotsInUse += n
    const held = (principalSlots.get(principalId) ?? 0) + n
    if (held === 0) principalSlots.delete(principalId)
    else principalSlots.set(principalId, held)
    if (session !== undefined) session.slots += n
  }

  const refusedGrant = (short: Refusal | undefined): Grant => ({ granted: 0, short, holdUntilDone: () => Effect.void })

  const enterSlots = (
    principalId: string,
    session: Session | undefined,
    wanted: number
  ): Effect.Effect<Grant, never, Scope.Scope> =>
    // Synchronous apart from the finalizer: one of these runs for every POST.
    Effect.clockWith((clock) =>
      Effect.flatMap(Effect.scope, (scope): Effect.Effect<Grant> => {
        const serverFree = config.maxStreams - slotsInUse
        const principalFree = config.maxStreamsPerPrincipal === undefined
          ? Number.POSITIVE_INFINITY
          : config.maxStreamsPerPrincipal - (principalSlots.get(principalId) ?? 0)
        const sessionFree = session === undefined ? Number.POSITIVE_INFINITY : config.maxStreamsPerSession - session.slots
        const free = Math.min(serverFree, principalFree, sessionFree)
        const granted = Math.max(0, Math.min(wanted, free))
        // On a tie the wider limit is named: the server's, then the principal's.
        const short: Refusal | undefined = granted === wanted
          ? undefined
          : free === serverFree
          ? "server-full"
          : free === principalFree
          ? "principal-full"
          : "session-full"
        if (wanted > 0 && granted === 0) return Effect.succeed(refusedGrant(short))
        if (granted > 0) {
          if (openStreams === 0) noStreams.closeUnsafe()
          openStreams += granted
          takeSlots(principalId, session, granted)
        }
        if (session !== undefined) {
          session.active++
          session.lastActive = clock.currentTimeMillisUnsafe()
        }
        // The request scope holds the slots, and so does each fiber handed to `holdUntilDone`; the last one out frees them.
        let holders = 1
        const release = () => {
          if (--holders === 0) takeSlots(principalId, session, -granted)
        }
        const holdUntilDone = (fiber: Fiber.Fiber<unknown, unknown>) =>
          Effect.sync(() => {
            if (holders === 0 || granted === 0) return
            holders++
            fiber.addObserver(release)
          })
        const grant: Grant = { granted, short, holdUntilDone }
        return Effect.as(
          Scope.addFinalizer(
            scope,
            Effect.sync(() => {
              if (granted > 0) {
                openStreams -= granted
                if (openStreams === 0) noStreams.openUnsafe()
                release()
              }
              if (session === undefined) return
              session.active--
              session.lastActive = clock.currentTimeMillisUnsafe()
            })
          ),
          grant
        )
      })
    )

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

  const enter = (principalId: string, session: Session | undefined, stream: boolean) =>
    Effect.map(enterSlots(principalId, session, stream ? 1 : 0), (grant): Admission => grant.short ?? "ok")

  const all = () => [...sessions.values(), ...legacy.values(), ...ephemeral]

  const closeAll = Effect.suspend(() => Effect.forEach(all(), drop, { concurrency: "unbounded", discard: true }))

  yield* Effect.addFinalizer(() => closeAll)

  let statelessRequests = 0
  const requestStream = Effect.suspend(() =>
    OutStream.make({
      streamId: streamId(),
      store: undefined,
      keepAlive,
      maxBufferedBytes: config.maxBufferedBytes,
      onDropped
    })
  )
  const runStateless = <A, E>(effect: Effect.Effect<A, E>) =>
    Effect.uninterruptible(Effect.suspend(() => {
      statelessRequests++
      return Effect.forkScoped(Effect.ensuring(
        Effect.interruptible(effect),
        Effect.sync(() => {
          statelessRequests--
        })
      ))
    }))

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
      slotsInUse,
      inFlight,
      work: workSize,
      storedEvents: yield* config.store.size,
      bufferedBytes,
      streamsDropped,
      statelessRequests
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
    newStream,
    openStream,
    enter,
    enterSlots,
    stats,
    requestStream,
    runStateless,
    list: all,
    awaitNoStreams: noStreams.await,
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

/** Runs work in the session, outside the HTTP request that started it (a disconnect does not cancel it). */
export const runInSession = <A, E>(session: Session, effect: Effect.Effect<A, E>): Effect.Effect<Fiber.Fiber<A, E>> =>
  FiberSet.run(session.work, effect)

/**
 * `runInSession`, the grant's slots held until the work ends too. One step,
 * so a client going away meanwhile cannot leave work running without its slots.
 */
export const runHoldingSlots = <A, E>(
  session: Session,
  grant: Grant,
  effect: Effect.Effect<A, E>
): Effect.Effect<Fiber.Fiber<A, E>> =>
  Effect.uninterruptible(Effect.tap(runInSession(session, effect), (fiber) => grant.holdUntilDone(fiber)))
