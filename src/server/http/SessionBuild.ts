/**
 * Building one session of the HTTP server: its scope (forked from the scope
 * of all sessions), its standalone stream (shared by a fleet's instances
 * when the store has a tail), the routing of what its handlers send, its
 * ServerSession, and the watches that end it on their own (SessionExpiry).
 * Admission comes first and is Sessions' job: a streamable or legacy
 * session arrives here with its slot reserved.
 */
import { randomUUID } from "node:crypto"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Scope from "effect/Scope"
import type * as JsonRpc from "../../JsonRpc.ts"
import { TransportClosed } from "../../McpError.ts"
import * as ServerSession from "../internal/ServerSession.ts"
import { newStreamId as streamId, type RequestRoute, type Session, type SessionKind, sharedStandaloneId } from "./HttpSession.ts"
import type * as KeepAlive from "./KeepAlive.ts"
import * as OutStream from "./OutStream.ts"
import * as SessionExpiry from "./SessionExpiry.ts"
import type { SessionsConfig } from "./SessionsConfig.ts"
import type * as SessionSlots from "./SessionSlots.ts"
import * as SharedStream from "./SharedStream.ts"

/** What building a session needs from the sessions of its transport. */
export interface Builder extends SessionExpiry.Expiry {
  readonly config: SessionsConfig
  readonly keepAlive: KeepAlive.Ticker
  /** Counts a reader dropped for falling behind. */
  readonly onDropped: () => void
  /** Where each session's scope is kept, for its teardown. */
  readonly scopes: WeakMap<Session, Scope.Closeable>
  readonly reserve: SessionSlots.Registry["reserve"]
  readonly hold: SessionSlots.Registry["hold"]
}

/** For a streamable or legacy session, its slot was reserved by admission; `hold` takes it over. */
export const build = (builder: Builder, kind: SessionKind, principalId: string, knownId?: string): Effect.Effect<Session> => {
  let slotReserved = kind !== "ephemeral"
  const release = Effect.sync(() => {
    if (slotReserved) builder.reserve(principalId, -1)
    slotReserved = false
  })
  return Effect.ensuring(make(builder, kind, principalId, knownId, release), release)
}

/**
 * The session's parts, put together; `release` gives its reserved slot back. One generator function for
 * every session, an ephemeral one per sessionless POST included (docs/design.md, "Per-request code and the old generation").
 */
const make = Effect.fnUntraced(function*(
  builder: Builder,
  kind: SessionKind,
  principalId: string,
  knownId: string | undefined,
  release: Effect.Effect<void>
): Effect.fn.Return<Session> {
  const { config, keepAlive, onDropped, parentScope } = builder
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
  const sendOn = (route: RequestRoute, message: JsonRpc.JsonRpcMessage) =>
    route.out.isEnded()
      ? send(message)
      : Effect.flatMap(route.out.offer(message), (accepted) => accepted ? Effect.void : send(message))
  const sendFor = (requestId: JsonRpc.RequestId) => (message: JsonRpc.JsonRpcMessage) =>
    Effect.suspend(() => {
      const route = requestRoutes.get(requestId)
      if (route === undefined || !route.canStream) return send(message)
      const opening = route.opening
      if (opening === undefined) return sendOn(route, message)
      return Effect.flatMap(opening, (opens) => opens && requestRoutes.get(requestId) === route ? sendOn(route, message) : send(message))
    })
  const closeSseStream = (requestId: JsonRpc.RequestId) =>
    Effect.suspend(() => {
      const route = requestRoutes.get(requestId)
      if (route === undefined) return Effect.void
      const opening = route.opening
      // A cut opens the stream as a message would: what must come before its opening comes first.
      return opening === undefined
        ? route.out.closeConnection
        : Effect.flatMap(Effect.orElseSucceed(opening, () => false), (opens) => opens ? route.out.closeConnection : Effect.void)
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
    // Requests start in the fiber of the POST that brought them, whose context is that POST's own.
    servicesOnly: true,
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
        closeSseStream: () => closeSseStream(requestId)
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
    // Held by the request that creates it (see `Sessions.create`).
    active: kind === "ephemeral" ? 0 : 1,
    slots: 0,
    lastActive: now,
    createdAt: now,
    initialized: false,
    closed: false,
    auth: undefined
  }
  builder.scopes.set(session, scope)
  if (kind === "streamable") {
    session.ownedStreams.add(standaloneId)
    session.liveStreams.set(standaloneId, standalone)
  }
  yield* release
  builder.hold(session)
  if (kind === "streamable" && config.idleTimeoutMs !== undefined) {
    yield* Effect.forkIn(SessionExpiry.expireWhenIdle(builder, session, config.idleTimeoutMs), scope)
  }
  if (kind !== "ephemeral" && config.handshakeTimeoutMs !== undefined) {
    yield* Effect.forkIn(SessionExpiry.expireUnlessInitialized(builder, session, config.handshakeTimeoutMs), scope)
  }
  return session
})
