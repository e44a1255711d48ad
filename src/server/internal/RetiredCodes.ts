/**
 * Error codes a handler written once for both eras may use that the
 * stateless era (2026-07-28) retired, and what that era sends instead.
 */
import * as JsonRpc from "../../JsonRpc.ts"

/**
 * A failure as the stateless era must send it: -32002 (Resource not found,
 * which the revision forbids emitting) becomes -32602, its message and data
 * kept. Anything else is returned as it is.
 */
export const toStateless = (response: JsonRpc.JsonRpcResponse): JsonRpc.JsonRpcResponse =>
  "error" in response && response.error.code === JsonRpc.ErrorCode.ResourceNotFound
    ? { ...response, error: { ...response.error, code: JsonRpc.ErrorCode.InvalidParams } }
    : response
