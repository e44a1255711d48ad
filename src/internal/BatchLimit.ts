/**
 * The largest JSON-RPC batch a server transport accepts. Every entry of a
 * batch can start a handler, and a body or line limit in bytes still lets
 * tens of thousands of small requests through in one frame.
 */
import * as JsonRpc from "../JsonRpc.ts"

/** Entries a batch may hold unless the transport is told otherwise. */
export const DEFAULT_MAX_BATCH_SIZE = 100

export const reason = (limit: number) => `a batch may hold at most ${limit} entries`

/** The one reply to a batch over the limit (none of its entries ran, so it names no id). */
export const tooLarge = (limit: number, size: number): JsonRpc.JsonRpcFailure =>
  JsonRpc.invalidRequest(null, { reason: reason(limit), limit, size })
