/**
 * Sessions of the handshake era served by every instance of a fleet
 * (a `SessionRegistry` present). A request naming a session this instance
 * does not hold loads the session's record and adopts the session: a local
 * session with the same id, and the handler told the handshake it did not
 * see (`Handler.adoptSession`). Every request naming a session loads its
 * record again (one round trip, which also keeps it from expiring), so a
 * session ended elsewhere is 404 here too, and a handshake finished or a
 * log level set through another instance reaches this one's handler.
 *
 * What crosses instances: a client's answer to a request another instance
 * asked goes to that instance's inbox (the request id names it), and a
 * client's cancel of a request running elsewhere is published on the bus,
 * so every instance running that request of that session interrupts it.
 * DELETE ends the session in the registry, which announces it; every
 * instance then closes its copy. A local copy's idle expiry drops only
 * that copy. A session in use here without requests (its GET stream open)
 * has its record kept alive every third of the idle timeout.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as JsonRpc from "../../JsonRpc.ts"
import type { AvailabilityShape } from "../Availability.ts"
import type { BusShape } from "../Bus.ts"
import type { Handler } from "../Handler.ts"
import { type InboxShape, instanceOf } from "../Inbox.ts"
import { DEFAULT_IDLE_TIMEOUT_MS, type SessionRecord, type SessionRegistryShape } from "../SessionRegistry.ts"
import * as Security from "./Security.ts"
import { isRefused, type Refused, type Session, type Sessions } from "./Sessions.ts"
import { isRecord } from "../../internal/Records.ts"

/**
 * The Bus topic a cancel made on one instance travels on (payload: JSON
 * `{ origin, sessionId, requestId }`).
 */
export const CANCEL_TOPIC = "session-cancel"

export interface Shared {
  readonly registry: SessionRegistryShape
  readonly inbox: InboxShape | undefined
  readonly bus: BusShape | undefined
  /** How long a record lives without a request: the transport's idle timeout. */
  readonly ttlMs: number
  readonly retryAfterSeconds: number
  /** This instance's id: the inbox's, else one of its own. */
  readonly instanceId: string
  /** What this instance last knew of each local session's record (to tell the handler what changed). */
  readonly known: WeakMap<Session, { phase: SessionRecord["phase"]; logLevel: string | undefined }>
}

export interface SharedConfig {
  readonly registry: SessionRegistryShape
  readonly inbox: InboxShape | undefined
  readonly bus: BusShape | undefined
  readonly availability: AvailabilityShape | undefined
  readonly idleTimeoutMs: number | undefined
  readonly instanceId: string
}

/** Registry, inbox and bus subscriptions for as long as the scope lives. */
export const make = (config: SharedConfig, sessions: Sessions): Effect.Effect<Shared, never, Scope.Scope> =>
  Effect.gen(function*() {
    const shared: Shared = {
      registry: config.registry,
      inbox: config.inbox,
      bus: config.bus,
      ttlMs: config.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
      retryAfterSeconds: config.availability?.retryAfterSeconds ?? 1,
      instanceId: config.instanceId,
      known: new WeakMap()
    }
    // Ended elsewhere (or here: then the copy is closed already).
    yield* config.registry.ended((sessionId) =>
      Effect.suspend(() => {
        const session = sessions.get(sessionId)
        return session === undefined ? Effect.void : sessions.close(session)
      })
    )
    if (config.inbox !== undefined) {
      yield* config.inbox.receive((entry) =>
        Effect.suspend(() => {
          const session = sessions.get(entry.sessionId)
          if (session === undefined) return Effect.void
          const decoded = JsonRpc.decode(entry.message)
          if (decoded._tag !== "Single") return Effect.void
          const m = decoded.message
          return m._tag === "Success" || m._tag === "Failure" ? Effect.asVoid(session.server.handleMessage(m)) : Effect.void
        })
      )
    }
    if (config.bus !== undefined) {
      yield* config.bus.subscribe(CANCEL_TOPIC, (text) =>
        Effect.suspend(() => {
          const cancel = decodeCancel(text)
          if (cancel === undefined || cancel.origin === shared.instanceId) return Effect.void
          const session = sessions.get(cancel.sessionId)
          return session === undefined ? Effect.void : session.server.cancelRemote(cancel.requestId)
        })
      )
    }
    // A session in use here without new requests (a GET stream open, a long request) is kept alive.
    const keepAlive = Effect.suspend(() => Effect.forEach(sessions.list(), (session) => {
      if (session.kind !== "streamable" || session.id === undefined || session.closed || session.active === 0) return Effect.void
      return Effect.flatMap(Effect.option(config.registry.load(session.id, shared.ttlMs)), (loaded) =>
        // Ended elsewhere, and the announcement was missed.
        Option.isSome(loaded) && Option.isNone(loaded.value) ? sessions.close(session) : Effect.void)
    }, { discard: true }))
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(Math.max(1, Math.floor(shared.ttlMs / 3))), keepAlive)))
    return shared
  })

const decodeCancel = (
  text: string
): { readonly origin: string; readonly sessionId: string; readonly requestId: JsonRpc.RequestId } | undefined => {
  try {
    const v = JSON.parse(text) as Record<string, unknown>
    const id = v.requestId
    return typeof v.origin === "string" && typeof v.sessionId === "string" && (typeof id === "string" || typeof id === "number")
      ? { origin: v.origin, sessionId: v.sessionId, requestId: id }
      : undefined
  } catch {
    return undefined
  }
}

export const unavailable = (shared: Shared): HttpServerResponse.HttpServerResponse =>
  Security.invalid(503, "Service unavailable: the shared store cannot be reached", {
    "retry-after": String(shared.retryAfterSeconds)
  })

export type Resolution =
  | { readonly _tag: "Found"; readonly session: Session }
  | { readonly _tag: "Unknown" }
  | { readonly _tag: "Refused"; readonly refused: Refused }
  | { readonly _tag: "Unavailable"; readonly response: HttpServerResponse.HttpServerResponse }

/**
 * The session a request names, from the registry: the local copy brought
 * up to date, or one adopted now; unknown when it ended, expired or
 * belongs to another principal. One generator function for every request
 * (docs/design.md, "Per-request code and the old generation").
 */
export const resolve = Effect.fnUntraced(function*(
  shared: Shared,
  sessions: Sessions,
  handler: Handler<never>,
  sessionId: string,
  principalId: string
): Effect.fn.Return<Resolution, never, Scope.Scope> {
  const loaded = yield* Effect.result(shared.registry.load(sessionId, shared.ttlMs))
  if (loaded._tag === "Failure") return { _tag: "Unavailable", response: unavailable(shared) }
  const held = sessions.get(sessionId)
  if (Option.isNone(loaded.success)) {
    // Ended elsewhere, and the announcement has not come (or was missed).
    if (held !== undefined) yield* sessions.close(held)
    return { _tag: "Unknown" }
  }
  const record = loaded.success.value
  if (record.principal !== principalId) return { _tag: "Unknown" }
  if (held !== undefined && !held.closed) {
    yield* catchUp(shared, handler, held, record)
    return { _tag: "Found", session: held }
  }
  const adopted = yield* sessions.adopt(sessionId, principalId, (session) => catchUp(shared, handler, session, record))
  if (isRefused(adopted)) return { _tag: "Refused", refused: adopted }
  return { _tag: "Found", session: adopted }
})

/** Tells the handler (and the session) what the record says that this instance did not know yet. */
const catchUp = (shared: Shared, handler: Handler<never>, session: Session, record: SessionRecord): Effect.Effect<void> =>
  Effect.suspend(() => {
    const known = shared.known.get(session)
    if (session.protocolVersion === undefined) session.protocolVersion = record.protocolVersion
    if (known !== undefined && known.phase === record.phase && known.logLevel === record.logLevel) return Effect.void
    shared.known.set(session, { phase: record.phase, logLevel: record.logLevel })
    if (record.phase === "ready") session.initialized = true
    return handler.adoptSession === undefined
      ? Effect.void
      : handler.adoptSession(session.id!, record, session.server.context)
  })

/**
 * Writes the record of a session whose `initialize` the handler just
 * answered (`reply`); the reply itself, or an error in its place when the
 * registry cannot be reached (the session is of no use then).
 */
export const recordInitialize = (
  shared: Shared,
  session: Session,
  request: JsonRpc.JsonRpcRequest,
  reply: JsonRpc.JsonRpcResponse,
  now: number
): Effect.Effect<JsonRpc.JsonRpcResponse> => {
  if (!("result" in reply) || session.id === undefined || session.protocolVersion === undefined) return Effect.succeed(reply)
  const params = (request.params ?? {}) as { clientInfo?: unknown; capabilities?: unknown }
  const clientInfo = isRecord(params.clientInfo) && typeof params.clientInfo.name === "string" &&
      typeof params.clientInfo.version === "string"
    ? params.clientInfo as SessionRecord["clientInfo"]
    : { name: "unknown", version: "unknown" }
  const record: SessionRecord = {
    principal: session.principalId,
    protocolVersion: session.protocolVersion,
    phase: "initializing",
    clientInfo,
    clientCapabilities: isRecord(params.capabilities) ? params.capabilities : {},
    logLevel: undefined,
    createdAt: now
  }
  return shared.registry.create(session.id, record, shared.ttlMs).pipe(
    Effect.as(reply),
    Effect.tap(() =>
      Effect.sync(() => {
        shared.known.set(session, { phase: "initializing", logLevel: undefined })
      })
    ),
    Effect.catch((error) =>
      Effect.as(
        Effect.logWarning("initialize: the session could not be recorded", error),
        JsonRpc.failure(reply.id, JsonRpc.ErrorCode.InternalError, "Service unavailable: the shared store cannot be reached")
      )
    )
  )
}

/** Records that the client finished the handshake; false when the registry cannot be reached. */
export const recordReady = (shared: Shared, session: Session): Effect.Effect<boolean> =>
  session.id === undefined ? Effect.succeed(true) : shared.registry.update(session.id, { phase: "ready" }).pipe(
    Effect.tap(() =>
      Effect.sync(() => {
        const known = shared.known.get(session)
        shared.known.set(session, { phase: "ready", logLevel: known?.logLevel })
      })
    ),
    Effect.as(true),
    Effect.catch((error) => Effect.as(Effect.logWarning("notifications/initialized: not recorded", error), false))
  )

/** Records the level a `logging/setLevel` the handler accepted set. */
export const recordLevel = (
  shared: Shared,
  session: Session,
  request: JsonRpc.JsonRpcRequest,
  reply: JsonRpc.JsonRpcResponse
): Effect.Effect<void> => {
  const level = (request.params as { level?: unknown } | undefined)?.level
  if (!("result" in reply) || session.id === undefined || typeof level !== "string") return Effect.void
  return shared.registry.update(session.id, { logLevel: level }).pipe(
    Effect.tap(() =>
      Effect.sync(() => {
        const known = shared.known.get(session)
        shared.known.set(session, { phase: known?.phase ?? "ready", logLevel: level })
      })
    ),
    Effect.catch((error) => Effect.logWarning("logging/setLevel: not recorded", error))
  )
}

/**
 * Handles a message of a POST other than a request: a response to a
 * request another instance asked goes to that instance's inbox; a cancel
 * of a request not running here goes on the bus too; anything else is the
 * session's.
 */
export const handleMessage = (
  shared: Shared,
  session: Session,
  message: JsonRpc.Classified
): Effect.Effect<JsonRpc.JsonRpcResponse | null> => {
  if ((message._tag === "Success" || message._tag === "Failure") && shared.inbox !== undefined) {
    const owner = instanceOf(message.message.id)
    if (owner !== undefined && owner !== shared.instanceId && session.id !== undefined) {
      const inbox = shared.inbox
      return inbox.send(owner, { sessionId: session.id, message: JSON.stringify(message.message) }).pipe(
        Effect.flatMap((delivered) =>
          delivered ? Effect.void : Effect.logWarning(`A client's answer to ${String(message.message.id)} is for an instance that is gone`)
        ),
        Effect.catch((error) => Effect.logWarning("A client's answer could not be forwarded", error)),
        Effect.as(null)
      )
    }
  }
  if (
    message._tag === "Notification" && message.message.method === "notifications/cancelled" && shared.bus !== undefined &&
    session.id !== undefined
  ) {
    const requestId = (message.message.params as { requestId?: unknown } | undefined)?.requestId
    if ((typeof requestId === "string" || typeof requestId === "number") && !session.server.isServing(requestId)) {
      const payload = JSON.stringify({ origin: shared.instanceId, sessionId: session.id, requestId })
      return shared.bus.publish(CANCEL_TOPIC, payload).pipe(
        Effect.catch((error) => Effect.logWarning("A cancel could not be published", error)),
        Effect.andThen(session.server.handleMessage(message))
      )
    }
  }
  return session.server.handleMessage(message)
}

/**
 * Ends the session for the whole fleet and closes the local copy; false
 * when the registry cannot be reached (the local copy is closed all the
 * same: the client's retry, on any instance, ends the rest).
 */
export const end = (shared: Shared, sessions: Sessions, session: Session): Effect.Effect<boolean> =>
  session.id === undefined
    ? Effect.as(sessions.close(session), true)
    : Effect.flatMap(Effect.result(shared.registry.end(session.id)), (ended) =>
      Effect.as(sessions.close(session), ended._tag === "Success"))

