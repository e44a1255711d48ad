/**
 * What one-shot calls of a process share unless they are given their own:
 * the eras learnt per origin and the counter of request ids.
 */
import * as Context from "effect/Context"
import type * as JsonRpc from "../../JsonRpc.ts"
import * as Negotiation from "../Negotiation.ts"


const processEras = Negotiation.make()

/**
 * Where `auto` calls remember, per origin, the era its server turned out to
 * speak, so the next call goes straight to it. Default: one cache for the
 * whole process. Provide another (`Negotiation.make()`) to start a test or
 * a group of calls from nothing, or to share what is learnt some other way.
 *
 * @since 0.1.0
 * @category references
 */
export class CurrentEras extends Context.Reference<Negotiation.EraCache>("effect-mcp-transport/client/OneShot/CurrentEras", {
  defaultValue: () => processEras
}) {}

/**
 * Forgets what `auto` calls learnt about servers in the process-wide cache
 * (their era, per origin): the next call to each probes again. A provided
 * `CurrentEras` is left alone.
 *
 * @since 0.1.0
 * @category utils
 */
export const forgetServers = (): void => processEras.entries.clear()

/**
 * Where the JSON-RPC ids of one-shot requests come from: `next` is called
 * once per request sent (`initialize` included).
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestIdSource {
  readonly next: () => JsonRpc.RequestId
}

/**
 * Ids counting up from 1.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRequestIds = (): RequestIdSource => {
  let last = 0
  return { next: () => ++last }
}

const processIds = makeRequestIds()

/**
 * The ids one-shot calls use. Default: one counter for the whole process,
 * so no two calls of a process share an id. Provide `makeRequestIds()` for
 * ids a test can predict.
 *
 * @since 0.1.0
 * @category references
 */
export class RequestIds extends Context.Reference<RequestIdSource>("effect-mcp-transport/client/OneShot/RequestIds", {
  defaultValue: () => processIds
}) {}
