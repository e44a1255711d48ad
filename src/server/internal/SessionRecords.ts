/**
 * The handshake era's records of a handle's sessions, keyed by the
 * transport's session id (none on stdio and in memory): what `initialize`
 * negotiated, whether `notifications/initialized` came, the level
 * `logging/setLevel` chose, and the session's `SessionState` slots. A record
 * lives from `initialize` until the transport reports the session ended.
 *
 * `SessionRecords` is all the handler knows of where records are kept;
 * `makeMemory` keeps them in this process. The lifecycle messages change a
 * record through the functions below, whatever keeps it.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as ProtocolVersion from "../../ProtocolVersion.ts"
import type { HandlerContext } from "../Handler.ts"
import { LEVELS, type Session, sessionKey, type Stores } from "./HandlerContexts.ts"
import * as SessionStore from "./SessionStore.ts"

export interface SessionRecords {
  /** The record of a session that sent `initialize` and has not ended. */
  readonly get: (sessionId: string | undefined) => Session | undefined
  /** Keeps a session's record, in place of the one it had (a repeated `initialize` starts over). */
  readonly set: (sessionId: string | undefined, session: Session) => void
  /** Every record kept, with its session's id. */
  readonly list: () => ReadonlyArray<readonly [sessionId: string | undefined, session: Session]>
  /** The `SessionState` slots of each session, made on first use. */
  readonly stores: Stores
  /** Forgets a session's record and releases its slots (`Handler.sessionEnded`). */
  readonly end: (sessionId: string | undefined) => Effect.Effect<void>
  /** Forgets every record and releases every session's slots: the end of the handle. */
  readonly clear: Effect.Effect<void>
}

/** Records kept in this process, for the handle that makes them. */
export const makeMemory = (): SessionRecords => {
  const sessions = new Map<string, Session>()
  const slotStores = new Map<string, SessionStore.SessionStore>()
  return {
    get: (sessionId) => sessions.get(sessionKey(sessionId)),
    set: (sessionId, session) => {
      sessions.set(sessionKey(sessionId), session)
    },
    list: () => Array.from(sessions, ([key, session]) => [key === "" ? undefined : key, session] as const),
    stores: {
      forSession: (key) => {
        let store = slotStores.get(key)
        if (store === undefined) slotStores.set(key, store = SessionStore.make())
        return store
      }
    },
    end: (sessionId) =>
      Effect.suspend(() => {
        const key = sessionKey(sessionId)
        sessions.delete(key)
        const store = slotStores.get(key)
        slotStores.delete(key)
        return store?.close ?? Effect.void
      }),
    clear: Effect.suspend(() => {
      const stores = Array.from(slotStores.values())
      slotStores.clear()
      sessions.clear()
      return Effect.forEach(stores, (store) => store.close, { discard: true })
    })
  }
}

// ---------------------------------------------------------------------------
// The lifecycle messages

const InitializeParams = Schema.Struct({
  protocolVersion: Schema.String,
  capabilities: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
  clientInfo: Schema.Struct({
    name: Schema.String,
    version: Schema.String,
    title: Schema.optionalKey(Schema.String),
    description: Schema.optionalKey(Schema.String),
    websiteUrl: Schema.optionalKey(Schema.String)
  })
})

export type InitializeParams = typeof InitializeParams.Type

export const decodeInitialize = Schema.decodeUnknownEffect(InitializeParams)

export const decodeSetLevel = Schema.decodeUnknownEffect(Schema.Struct({ level: Schema.Literals(LEVELS) }))

/** Negotiation per the spec: the client's revision when we speak it, else our newest. */
export const negotiate = (requested: string): ProtocolVersion.ProtocolVersion =>
  ProtocolVersion.isSupported(requested) ? requested : ProtocolVersion.LATEST

/** The record `initialize` starts, waiting for `notifications/initialized`. */
export const initializing = (params: InitializeParams, version: ProtocolVersion.ProtocolVersion): Session => ({
  phase: "initializing",
  era: "legacy",
  protocolVersion: version,
  clientInfo: params.clientInfo,
  clientCapabilities: params.capabilities ?? {},
  logLevel: undefined,
  channel: undefined,
  initialized: Deferred.makeUnsafe()
})

/**
 * `notifications/initialized`: the session is ready, and the connection it
 * came on carries the notifications sent to every session from now on.
 */
export const initialized = (session: Session, channel: HandlerContext): void => {
  if (session.phase !== "initializing") return
  session.phase = "ready"
  session.channel = channel
  Deferred.doneUnsafe(session.initialized, Effect.void)
}

/** The record of a request no record is kept for (no session, or no enforcement): ready, nothing known of its client. */
export const anonymous = (): Session => ({
  phase: "ready",
  era: "legacy",
  protocolVersion: ProtocolVersion.LATEST,
  clientInfo: { name: "unknown", version: "unknown" },
  clientCapabilities: {},
  logLevel: undefined,
  channel: undefined,
  initialized: Deferred.makeUnsafe()
})
