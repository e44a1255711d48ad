/**
 * Request correlation shared by every transport: id → Deferred.
 *
 * Invariants the tests hold us to: every request settles exactly once; an
 * entry leaves the map when its request settles, times out, is interrupted or
 * the transport closes; responses with unknown ids are counted, not fatal.
 */
import { Cause, Deferred, Duration, Effect, Exit } from "effect"
import * as JsonRpc from "../JsonRpc.ts"
import { RequestTimeout, RpcError, TransportClosed } from "../McpError.ts"

export interface CallOptions {
  /** Milliseconds; `undefined`, `Infinity` or `0` and below mean no timeout. */
  readonly timeoutMs?: number | undefined
}

interface Entry {
  readonly method: string
  readonly deferred: Deferred.Deferred<unknown, RpcError | TransportClosed>
}

export interface Correlation {
  /**
   * Registers a request, hands its envelope to `send`, and waits for the
   * matching response. On timeout or interruption the entry goes and, unless
   * the request was `initialize` or the transport is closed, `cancel` runs
   * (it should not block: it tells the peer, best effort).
   */
  readonly call: <E, R>(
    method: string,
    params: unknown,
    send: (message: JsonRpc.JsonRpcRequest) => Effect.Effect<void, E, R>,
    options?: CallOptions
  ) => Effect.Effect<unknown, E | RpcError | RequestTimeout | TransportClosed, R>
  /** Completes the pending request a response belongs to. False when the id is unknown. */
  readonly complete: (response: JsonRpc.JsonRpcResponse) => boolean
  /** Fails every pending request and every later call with `error`. Idempotent: the first error wins. */
  readonly close: (error: TransportClosed) => void
  readonly closedWith: () => TransportClosed | undefined
  readonly pending: () => number
  readonly unknownResponses: () => number
  /** The ids still waiting, for diagnostics and tests. */
  readonly pendingIds: () => ReadonlyArray<JsonRpc.RequestId>
}

export interface CorrelationOptions {
  /** Tells the peer a request was abandoned (`notifications/cancelled`). */
  readonly cancel: (id: JsonRpc.RequestId, reason: string) => Effect.Effect<void>
  /** Prefix for ids, so that two correlators sharing a peer never collide. Numbers when absent. */
  readonly idPrefix?: string | undefined
}

export const make = (options: CorrelationOptions): Correlation => {
  const entries = new Map<JsonRpc.RequestId, Entry>()
  let counter = 0
  let unknown = 0
  let closed: TransportClosed | undefined
  const prefix = options.idPrefix

  const call = <E, R>(
    method: string,
    params: unknown,
    send: (message: JsonRpc.JsonRpcRequest) => Effect.Effect<void, E, R>,
    callOptions?: CallOptions
  ): Effect.Effect<unknown, E | RpcError | RequestTimeout | TransportClosed, R> =>
    Effect.suspend(() => {
      if (closed !== undefined) return Effect.fail(closed)
      const id: JsonRpc.RequestId = prefix === undefined ? ++counter : `${prefix}${++counter}`
      const deferred = Deferred.makeUnsafe<unknown, RpcError | TransportClosed>()
      entries.set(id, { method, deferred })
      const timeoutMs = callOptions?.timeoutMs
      let effect: Effect.Effect<unknown, E | RpcError | RequestTimeout | TransportClosed, R> = Effect.andThen(
        send(JsonRpc.request(id, method, params)),
        Deferred.await(deferred)
      )
      if (timeoutMs !== undefined && timeoutMs > 0 && Number.isFinite(timeoutMs)) {
        effect = Effect.timeoutOrElse(effect, {
          duration: Duration.millis(timeoutMs),
          orElse: () => Effect.fail(new RequestTimeout({ method, id, timeoutMs }))
        })
      }
      return Effect.onExit(effect, (exit) => {
        const stillPending = entries.delete(id)
        if (!stillPending || Exit.isSuccess(exit) || closed !== undefined || method === "initialize") {
          return Effect.void
        }
        const reason = Exit.hasInterrupts(exit)
          ? "Request cancelled by the caller"
          : timedOut(exit.cause)
          ? `Request timeout after ${timeoutMs}ms`
          : undefined
        return reason === undefined ? Effect.void : options.cancel(id, reason)
      })
    })

  const complete = (response: JsonRpc.JsonRpcResponse): boolean => {
    const id = response.id
    if (id === null) {
      unknown++
      return false
    }
    let key: JsonRpc.RequestId = id
    let entry = entries.get(key)
    // Some peers echo numeric ids as strings; accept that rather than hang the caller.
    if (entry === undefined && typeof id === "string" && prefix === undefined) {
      const n = Number(id)
      if (Number.isInteger(n)) {
        key = n
        entry = entries.get(n)
      }
    }
    if (entry === undefined) {
      unknown++
      return false
    }
    entries.delete(key)
    Deferred.doneUnsafe(
      entry.deferred,
      "result" in response
        ? Effect.succeed(response.result)
        : Effect.fail(RpcError.fromObject(response.error, entry.method, id))
    )
    return true
  }

  const close = (error: TransportClosed): void => {
    if (closed !== undefined) return
    closed = error
    const failed = Effect.fail(error)
    for (const entry of entries.values()) Deferred.doneUnsafe(entry.deferred, failed)
    entries.clear()
  }

  return {
    call,
    complete,
    close,
    closedWith: () => closed,
    pending: () => entries.size,
    unknownResponses: () => unknown,
    pendingIds: () => Array.from(entries.keys())
  }
}

const timedOut = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.some((r) => r._tag === "Fail" && (r.error as { _tag?: unknown })?._tag === "RequestTimeout")
