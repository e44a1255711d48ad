/**
 * The JSON-RPC 2.0 envelopes of `JsonRpc.ts` as Schemas: for documentation,
 * for validating messages outside the hot path, and behind the property-test
 * arbitraries (`effect-mcp-transport/testing`). The transports classify with
 * `JsonRpc.classify` and `JsonRpc.decode` instead and never load this module.
 */
import * as Schema from "effect/Schema"

const Params = Schema.Record(Schema.String, Schema.Unknown)

/**
 * A request id: a string or an integer.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RequestId = Schema.Union([Schema.String, Schema.Int])

/**
 * A request (`JsonRpc.JsonRpcRequest`); `params`, when present, is an object.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Request = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: RequestId,
  method: Schema.String,
  params: Schema.optionalKey(Params)
})

/**
 * A notification (`JsonRpc.JsonRpcNotification`); `params`, when present, is an object.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Notification = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  method: Schema.String,
  params: Schema.optionalKey(Params)
})

/**
 * A successful response (`JsonRpc.JsonRpcSuccess`); its `result` is an object.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Success = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: RequestId,
  result: Params
})

/**
 * The `error` member of a failed response (`JsonRpc.JsonRpcErrorObject`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ErrorObject = Schema.Struct({
  code: Schema.Int,
  message: Schema.String,
  data: Schema.optionalKey(Schema.Unknown)
})

/**
 * A failed response (`JsonRpc.JsonRpcFailure`); its id is `null` when the request's could not be read.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Failure = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: Schema.NullOr(RequestId),
  error: ErrorObject
})

/**
 * Requests before notifications: unknown keys are stripped, so the order decides.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Message = Schema.Union([
  Request,
  Notification,
  Success,
  Failure
])

/**
 * A batch: an array of messages.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Batch = Schema.Array(Message)
