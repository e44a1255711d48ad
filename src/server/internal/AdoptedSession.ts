/**
 * `McpServer`'s handshake record of a session another instance of the fleet
 * made (or changed): taken from the fleet's `SessionRecord` as `initialize`,
 * `notifications/initialized` and `logging/setLevel` would have set it here.
 */
import * as ProtocolVersion from "../../ProtocolVersion.ts"
import type { HandlerContext } from "../Handler.ts"
import type { SessionRecord } from "../SessionRegistry.ts"
import { isLevel } from "./HandlerContexts.ts"
import * as SessionRecords from "./SessionRecords.ts"

/** Creates or brings up to date the record of `sessionId` in `records`. */
export const adopt = (
  records: SessionRecords.SessionRecords,
  sessionId: string,
  record: SessionRecord,
  channel: HandlerContext
): void => {
  const logLevel = record.logLevel !== undefined && isLevel(record.logLevel) ? record.logLevel : undefined
  let session = records.get(sessionId)
  if (session === undefined) {
    session = SessionRecords.initializing(
      {
        protocolVersion: record.protocolVersion,
        capabilities: record.clientCapabilities,
        clientInfo: record.clientInfo as SessionRecords.InitializeParams["clientInfo"]
      },
      ProtocolVersion.isSupported(record.protocolVersion) ? record.protocolVersion : ProtocolVersion.LATEST
    )
    records.set(sessionId, session)
  }
  if (logLevel !== undefined) session.logLevel = logLevel
  if (record.phase === "ready") SessionRecords.initialized(session, channel)
}
