/**
 * Where what an upstream sends goes downstream, for the bridge's upstream
 * of one session: its progress to the request that carries the token, its
 * other notifications and its requests (sampling, elicitation, roots, ping)
 * through the newest downstream request still running, else the session.
 * Stdio carries no link between an upstream's request and the downstream
 * request it serves, and a tool call that samples is the common case.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type { ClientTransportShape } from "../client/ClientTransport.ts"
import type * as JsonRpc from "../JsonRpc.ts"
import { RpcError, type TransportClosed } from "../McpError.ts"
import type { HandlerContext } from "../server/Handler.ts"
import { ErrorCode, firstLine } from "./UpstreamErrors.ts"

/**
 * A session's upstream connection and the downstream requests it serves.
 *
 * @since 0.1.0
 * @category models
 */
export interface Upstream {
  readonly transport: ClientTransportShape
  /** Downstream requests being forwarded, oldest first. */
  readonly running: Set<HandlerContext>
  /** Progress token → the downstream request that carries it. */
  readonly progress: Map<string | number, HandlerContext>
  /** For traffic tied to no request: the session's own context, once a notification showed it. */
  session: HandlerContext | undefined
  closed: TransportClosed | undefined
}

/**
 * A request's `_meta.progressToken`, when it has one.
 *
 * @since 0.1.0
 * @category utils
 */
export const progressTokenOf = (params: unknown): string | number | undefined => {
  if (typeof params !== "object" || params === null) return undefined
  const meta = (params as { _meta?: unknown })._meta
  if (typeof meta !== "object" || meta === null) return undefined
  const token = (meta as { progressToken?: unknown }).progressToken
  return typeof token === "string" || typeof token === "number" ? token : undefined
}

/** Where traffic tied to no request goes: the newest request still running, else the session. */
const contextFor = (up: Upstream): HandlerContext | undefined => {
  let last: HandlerContext | undefined
  for (const ctx of up.running) last = ctx
  return last ?? up.session
}

/**
 * Passes an upstream notification on to the downstream client.
 *
 * @since 0.1.0
 * @category utils
 */
export const routeNotification = (up: Upstream, n: JsonRpc.JsonRpcNotification): Effect.Effect<void> => {
  // Upstream ids mean nothing downstream; ClientCore already interrupted the forwarded request.
  if (n.method === "notifications/cancelled") return Effect.void
  if (n.method === "notifications/progress") {
    const token = (n.params as { progressToken?: unknown } | undefined)?.progressToken
    // A token no running request carries: its request ended, and progress after the end is dropped.
    const ctx = typeof token === "string" || typeof token === "number" ? up.progress.get(token) : undefined
    return ctx === undefined ? Effect.void : Effect.ignore(ctx.notify(n.method, n.params))
  }
  const ctx = contextFor(up)
  return ctx === undefined
    ? Effect.logDebug(`bridge: dropped ${n.method} from upstream: no downstream session yet`)
    : Effect.ignore(ctx.notify(n.method, n.params))
}

/**
 * Asks the downstream client what the upstream asked, within `timeoutMs`;
 * its failure becomes the JSON-RPC error the upstream gets.
 *
 * @since 0.1.0
 * @category utils
 */
export const serveRequest = (up: Upstream, timeoutMs: number) =>
(request: JsonRpc.JsonRpcRequest): Effect.Effect<unknown, RpcError> => {
  const ctx = contextFor(up)
  if (ctx === undefined) {
    return Effect.fail(
      new RpcError({ code: ErrorCode.UpstreamClosed, rpcMessage: "No downstream client connected to the bridge yet" })
    )
  }
  return ctx.request(request.method, request.params, { timeout: timeoutMs }).pipe(
    Effect.mapError((error) =>
      error._tag === "RpcError"
        ? error
        : new RpcError({
          code: error._tag === "RequestTimeout" ? ErrorCode.UpstreamTimeout : ErrorCode.UpstreamClosed,
          rpcMessage: `Downstream client did not answer: ${firstLine(error.message)}`,
          data: { bridge: error._tag }
        })
    )
  )
}
