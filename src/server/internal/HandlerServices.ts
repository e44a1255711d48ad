/**
 * The context a session's handlers run with, made from the context of the
 * fiber a request starts in.
 *
 * By default the session's services go on top of that fiber's context.
 * Merging copies every entry of a context, and the request fibers of a
 * stdio or in-memory session share their parent's context object, so the
 * merge is made once per parent context, not once per request.
 *
 * An HTTP session's requests start in the fiber of the POST that brought
 * them, a context of its own each time: there (`servicesOnly`) the
 * handlers run with the session's services alone, carrying from the POST
 * only its peer and the span it runs under, which costs no copy.
 */
import * as Context from "effect/Context"
import * as Scheduler from "effect/Scheduler"
import * as NetworkPeer from "../../internal/NetworkPeer.ts"
import * as SharedDispatcher from "../../internal/SharedDispatcher.ts"
import * as ServerSpans from "./ServerSpans.ts"

export type HandlerServices<R> = (current: Context.Context<never>) => Context.Context<R>

export const make = <R>(services: Context.Context<R>, options: {
  /** Request fibers share one dispatcher (see `ServerSessionOptions.sharedDispatcher`). */
  readonly sharedDispatcher?: boolean | undefined
  readonly servicesOnly?: boolean | undefined
}): HandlerServices<R> => {
  const shared = (context: Context.Context<R>) =>
    options.sharedDispatcher === true
      ? Context.add(context, Scheduler.Scheduler, SharedDispatcher.share(Context.get(context, Scheduler.Scheduler)))
      : context
  if (options.servicesOnly === true) {
    const base = shared(services) as Context.Context<never>
    return (current) => ServerSpans.carryRequest(current, base) as Context.Context<R>
  }
  let mergedFrom: Context.Context<never> | undefined
  let merged: Context.Context<R> = services
  return (current) => {
    if (current !== mergedFrom) {
      mergedFrom = current
      merged = Context.merge(current, services)
      // The peer the request came with (an HTTP request's address and span) is more precise than the session's.
      const peer = Context.get(current, NetworkPeer.CurrentPeer)
      if (peer !== undefined) merged = Context.add(merged, NetworkPeer.CurrentPeer, peer)
      merged = shared(merged)
    }
    return merged
  }
}
