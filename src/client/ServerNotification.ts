/**
 * Notifications a server sends a client, decoded once into one tagged union
 * so that subscribers match on `_tag` instead of re-parsing method strings.
 * A notification whose payload does not fit its method, or whose method we
 * do not know, is still delivered (as `Other`) rather than dropped.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as McpSchema from "effect/ai/McpSchema"
import type * as JsonRpc from "../JsonRpc.ts"
import * as FastNotification from "./internal/FastNotification.ts"
import { type LoggingMessage, type Progress, ServerNotification } from "./internal/ServerNotificationEnum.ts"

export { type LoggingMessage, type Progress, ServerNotification }

const ProgressParams = Schema.Struct(McpSchema.ProgressNotification.payloadSchema.fields)
const LoggingParams = Schema.Struct(McpSchema.LoggingMessageNotification.payloadSchema.fields)
const UpdatedParams = Schema.Struct({ uri: Schema.String })
const CancelledParams = Schema.Struct({
  requestId: Schema.Union([Schema.String, Schema.Finite]),
  reason: Schema.optionalKey(Schema.String)
})
const ElicitationCompleteParams = Schema.Struct({ elicitationId: Schema.String })

const decodeProgress = Schema.decodeUnknownResult(ProgressParams)
const decodeLogging = Schema.decodeUnknownResult(LoggingParams)
const decodeUpdated = Schema.decodeUnknownResult(UpdatedParams)
const decodeCancelled = Schema.decodeUnknownResult(CancelledParams)
const decodeElicitationComplete = Schema.decodeUnknownResult(ElicitationCompleteParams)

const other = (n: JsonRpc.JsonRpcNotification, invalid?: string): ServerNotification =>
  ServerNotification.Other({ method: n.method, params: n.params, invalid })

/**
 * Decodes one notification from the server; never fails: an unknown method, or params that do
 * not fit a known one, give `Other`.
 *
 * @since 0.1.0
 * @category utils
 */
export const decode = (n: JsonRpc.JsonRpcNotification): ServerNotification => {
  switch (n.method) {
    case "notifications/progress": {
      const fast = FastNotification.progress(n.params)
      if (fast !== undefined) return fast
      const r = decodeProgress(n.params)
      return Result.isSuccess(r)
        ? ServerNotification.Progress({
          progressToken: r.success.progressToken,
          progress: r.success.progress,
          total: r.success.total,
          message: r.success.message
        })
        : other(n, r.failure.message)
    }
    case "notifications/message": {
      const r = decodeLogging(n.params)
      return Result.isSuccess(r)
        ? ServerNotification.LoggingMessage({ level: r.success.level, logger: r.success.logger, data: r.success.data })
        : other(n, r.failure.message)
    }
    case "notifications/tools/list_changed":
      return ServerNotification.ToolListChanged()
    case "notifications/resources/list_changed":
      return ServerNotification.ResourceListChanged()
    case "notifications/prompts/list_changed":
      return ServerNotification.PromptListChanged()
    case "notifications/resources/updated": {
      const r = decodeUpdated(n.params)
      return Result.isSuccess(r) ? ServerNotification.ResourceUpdated({ uri: r.success.uri }) : other(n, r.failure.message)
    }
    case "notifications/cancelled": {
      const r = decodeCancelled(n.params)
      return Result.isSuccess(r)
        ? ServerNotification.Cancelled({ requestId: r.success.requestId, reason: r.success.reason })
        : other(n, r.failure.message)
    }
    case "notifications/elicitation/complete": {
      const r = decodeElicitationComplete(n.params)
      return Result.isSuccess(r)
        ? ServerNotification.ElicitationComplete({ elicitationId: r.success.elicitationId })
        : other(n, r.failure.message)
    }
    default:
      return other(n)
  }
}
