/**
 * The tagged union of server notifications, without their decoders: what
 * `McpClient` needs before its Schemas are loaded (they load while the
 * handshake is under way). `ServerNotification` re-exports all of it with
 * `decode`.
 */
import * as Data from "effect/Data"
import type * as McpSchema from "effect/ai/McpSchema"

/**
 * A notification from the server, decoded: one variant per method the client knows, `Other` for the rest.
 *
 * @since 0.1.0
 * @category models
 */
export type ServerNotification = Data.TaggedEnum<{
  Progress: {
    readonly progressToken: string | number
    readonly progress: number
    readonly total: number | undefined
    readonly message: string | undefined
  }
  LoggingMessage: {
    readonly level: McpSchema.LoggingLevel
    readonly logger: string | undefined
    readonly data: unknown
  }
  ToolListChanged: {}
  ResourceListChanged: {}
  PromptListChanged: {}
  ResourceUpdated: { readonly uri: string }
  /** The server abandoned a request it had sent us (our handler for it is interrupted by the transport). */
  Cancelled: { readonly requestId: string | number; readonly reason: string | undefined }
  ElicitationComplete: { readonly elicitationId: string }
  /** Any other method, or a known method whose payload did not decode (`invalid` says why). */
  Other: { readonly method: string; readonly params: unknown; readonly invalid: string | undefined }
}>

/**
 * Constructors and matchers (`$is`, `$match`) for `ServerNotification`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const ServerNotification = Data.taggedEnum<ServerNotification>()

/**
 * A `notifications/progress` from the server, for the request that carried `progressToken`.
 *
 * @since 0.1.0
 * @category models
 */
export type Progress = Data.TaggedEnum.Value<ServerNotification, "Progress">

/**
 * A `notifications/message` from the server: a log entry at `level`.
 *
 * @since 0.1.0
 * @category models
 */
export type LoggingMessage = Data.TaggedEnum.Value<ServerNotification, "LoggingMessage">
