/**
 * The JSON-RPC 2.0 envelopes of `JsonRpc.ts` as Schemas: for documentation,
 * for validating messages outside the hot path, and behind the property-test
 * arbitraries (`effect-mcp-transport/testing`). The transports classify with
 * `JsonRpc.classify` and `JsonRpc.decode` instead and never load this module.
 */
import * as Schema from "effect/Schema"

const Params = Schema.Record(Schema.String, Schema.Unknown)

export const RequestId = Schema.Union([Schema.String, Schema.Int])

export const Request = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: RequestId,
  method: Schema.String,
  params: Schema.optionalKey(Params)
})

export const Notification = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  method: Schema.String,
  params: Schema.optionalKey(Params)
})

export const Success = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: RequestId,
  result: Params
})

export const ErrorObject = Schema.Struct({
  code: Schema.Int,
  message: Schema.String,
  data: Schema.optionalKey(Schema.Unknown)
})

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

export const Batch = Schema.Array(Message)
