/**
 * `McpServer`'s handshake record of a session another instance of the fleet
 * made (or changed): taken from the fleet's `SessionRecord` as `initialize`,
 * `notifications/initialized` and `logging/setLevel` would have set it here.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as ProtocolVersion from "../../ProtocolVersion.ts"
import type { HandlerContext } from "../Handler.ts"
import type { SessionRecord } from "../SessionRegistry.ts"
import { isLevel, type Session, sessionKey } from "./HandlerContexts.ts"

/** Creates or brings up to date the record of `sessionId` in `sessions`. */
export const adopt = (
  sessions: Map<string, Session>,
  sessionId: string,
  record: SessionRecord,
  channel: HandlerContext
): void => {
  const key = sessionKey(sessionId)
  const logLevel = record.logLevel !== undefined && isLevel(record.logLevel) ? record.logLevel : undefined
  let session = sessions.get(key)
  if (session === undefined) {
    session = {
      phase: "initializing",
      era: "legacy",
      protocolVersion: ProtocolVersion.isSupported(record.protocolVersion) ? record.protocolVersion : ProtocolVersion.LATEST,
      clientInfo: record.clientInfo,
      clientCapabilities: record.clientCapabilities,
      logLevel,
      channel: undefined,
      initialized: Deferred.makeUnsafe()
    }
    sessions.set(key, session)
  } else if (logLevel !== undefined) {
    session.logLevel = logLevel
  }
  if (record.phase === "ready" && session.phase === "initializing") {
    session.phase = "ready"
    session.channel = channel
    Deferred.doneUnsafe(session.initialized, Effect.void)
  }
}
