/**
 * How the bridge answers when its upstream fails: the error a failed
 * connection raises, and the JSON-RPC error a failed forward becomes. Shared
 * by every bridge mode (pass-through and the fronts across eras).
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as JsonRpc from "../JsonRpc.ts"
import { type RequestError, RpcError, type SpawnError, TransportClosed } from "../McpError.ts"

/**
 * The upstream could not be connected (spawn failed, …); `cause` is the connector's error.
 *
 * @since 0.1.0
 * @category errors
 */
export class UpstreamUnavailable extends Data.TaggedError("UpstreamUnavailable")<{ readonly cause: unknown }> {
  override get message(): string {
    return `Upstream server unavailable: ${describe(this.cause)}`
  }
}

/**
 * Codes of the JSON-RPC errors the bridge itself answers with (the MCP SDKs use the same two).
 *
 * @since 0.1.0
 * @category utils
 */
export const ErrorCode = {
  /** The upstream connection is closed or could not be opened. */
  UpstreamClosed: JsonRpc.ErrorCode.ConnectionClosed,
  /** `requestTimeout` ran out. */
  UpstreamTimeout: JsonRpc.ErrorCode.RequestTimeout,
  /** Any other failure of the upstream transport (HTTP status, expired session, malformed answer…). */
  UpstreamFailed: JsonRpc.ErrorCode.InternalError
} as const

/**
 * How a failed forwarded request is answered. A JSON-RPC error from the
 * peer is passed on unchanged; a transport failure gets a bridge code and a
 * one-line message naming it (no stderr or stack on the wire), with
 * `data: { bridge: <error tag> }`; an HTTP status from the upstream adds
 * `status`, and its `Retry-After` `retryAfterMs`.
 *
 * @since 0.1.0
 * @category utils
 */
export const toRpcError = (error: RequestError | SpawnError | UpstreamUnavailable): RpcError => {
  switch (error._tag) {
    case "RpcError":
      return error
    case "TransportClosed":
    case "UpstreamUnavailable":
      return new RpcError({
        code: ErrorCode.UpstreamClosed,
        rpcMessage: `Upstream server unavailable: ${firstLine(error._tag === "TransportClosed" ? error.message : describe(error.cause))}`,
        data: { bridge: error._tag }
      })
    case "RequestTimeout":
      return new RpcError({
        code: ErrorCode.UpstreamTimeout,
        rpcMessage: `Upstream ${error.message}`,
        data: { bridge: error._tag }
      })
    case "HttpError":
      // The status, and the wait an upstream refusing for now asked for: the downstream client's to honour.
      return new RpcError({
        code: ErrorCode.UpstreamFailed,
        rpcMessage: `Upstream error: ${firstLine(error.message)}`,
        data: error.retryAfterMs === undefined
          ? { bridge: error._tag, status: error.status }
          : { bridge: error._tag, status: error.status, retryAfterMs: error.retryAfterMs }
      })
    default:
      return new RpcError({
        code: ErrorCode.UpstreamFailed,
        rpcMessage: `Upstream error: ${firstLine(error.message)}`,
        data: { bridge: error._tag }
      })
  }
}

/**
 * The error of a failed connection attempt: its failure as it is; a defect,
 * or an interruption (the bridge closing), wrapped in `UpstreamUnavailable`.
 *
 * @since 0.1.0
 * @category utils
 */
export const failureOf = (cause: Cause.Cause<UpstreamUnavailable>): UpstreamUnavailable => {
  const fail = cause.reasons.find((r) => r._tag === "Fail")
  if (fail !== undefined && fail._tag === "Fail") return fail.error
  return new UpstreamUnavailable({
    cause: Cause.hasInterruptsOnly(cause) ? new TransportClosed({ reason: "bridge closed" }) : Cause.squash(cause)
  })
}

/**
 * Ends an upstream connection attempt that failed: its error (a failure as it
 * is; a defect, or an interruption, which is the bridge closing, wrapped in
 * `UpstreamUnavailable`) is logged, handed to whoever waits on `ready`, and
 * the attempt's scope is closed.
 *
 * @since 0.1.0
 * @category utils
 */
export const failConnecting = <A>(
  ready: Deferred.Deferred<A, UpstreamUnavailable>,
  scope: Scope.Closeable,
  cause: Cause.Cause<UpstreamUnavailable>
): Effect.Effect<void> => {
  const error = failureOf(cause)
  return Effect.logWarning(`bridge: ${describe(error)}`).pipe(
    Effect.andThen(Deferred.fail(ready, error)),
    Effect.andThen(Scope.close(scope, Exit.void))
  )
}

/**
 * The first line of a text (an upstream's message may carry a stack or stderr).
 *
 * @since 0.1.0
 * @category utils
 */
export const firstLine = (text: string): string => {
  const nl = text.indexOf("\n")
  return nl === -1 ? text : text.slice(0, nl)
}

/**
 * A failure's own message, else its text.
 *
 * @since 0.1.0
 * @category utils
 */
export const describe = (u: unknown): string =>
  typeof u === "object" && u !== null && "message" in u && typeof u.message === "string" ? u.message : String(u)
