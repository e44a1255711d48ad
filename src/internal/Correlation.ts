/**
 * Request correlation shared by every transport: id → Deferred.
 *
 * Invariants the tests hold us to: every request settles exactly once; an
 * entry leaves the map when its request settles, times out, is interrupted or
 * the transport closes; responses with unknown ids are counted, not fatal.
 */
import { type Clock, Deferred, Duration, Effect, Exit, Fiber } from "effect"
import * as JsonRpc from "../JsonRpc.ts"
import { RequestTimeout, RpcError, TransportClosed } from "../McpError.ts"

export interface CallOptions {
  /** Milliseconds; `undefined`, `Infinity` or `0` and below mean no timeout. */
  readonly timeoutMs?: number | undefined
}

interface Entry {
  readonly method: string
  readonly deferred: Deferred.Deferred<unknown, RpcError | TransportClosed | RequestTimeout>
  deadline?: DeadlineNode | undefined
  /** Set when the deadline, not the caller or the peer, ended the request. */
  expired?: boolean | undefined
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
  const deadlines = makeDeadlines((node) => {
    if (entries.get(node.id) !== node.entry) return
    entries.delete(node.id)
    node.entry.expired = true
    Deferred.doneUnsafe(
      node.entry.deferred,
      Exit.fail(new RequestTimeout({ method: node.entry.method, id: node.id, timeoutMs: node.timeoutMs }))
    )
  })

  const call = <E, R>(
    method: string,
    params: unknown,
    send: (message: JsonRpc.JsonRpcRequest) => Effect.Effect<void, E, R>,
    callOptions?: CallOptions
  ): Effect.Effect<unknown, E | RpcError | RequestTimeout | TransportClosed, R> =>
    Effect.suspend(() => {
      if (closed !== undefined) return Effect.fail(closed)
      const id: JsonRpc.RequestId = prefix === undefined ? ++counter : `${prefix}${++counter}`
      const deferred = Deferred.makeUnsafe<unknown, RpcError | TransportClosed | RequestTimeout>()
      const entry: Entry = { method, deferred }
      entries.set(id, entry)
      const timeoutMs = callOptions?.timeoutMs
      const timed = timeoutMs !== undefined && timeoutMs > 0 && Number.isFinite(timeoutMs)
      const message = JsonRpc.request(id, method, params)
      const effect: Effect.Effect<unknown, E | RpcError | RequestTimeout | TransportClosed, R> = timed
        ? Effect.clockWith((clock) =>
          Effect.andThen(deadlines.add(clock, id, entry, timeoutMs), sendWithin(send(message), entry))
        )
        : Effect.andThen(send(message), Deferred.await(deferred))
      return Effect.onExit(effect, (exit) => {
        if (timed) deadlines.remove(entry)
        const stillPending = entries.get(id) === entry
        if (stillPending) entries.delete(id)
        if (Exit.isSuccess(exit) || closed !== undefined || method === "initialize") return Effect.void
        if (!stillPending && !entry.expired) return Effect.void
        const reason = entry.expired
          ? `Request timeout after ${timeoutMs}ms`
          : Exit.hasInterrupts(exit)
          ? "Request cancelled by the caller"
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
    deadlines.clear()
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

/**
 * Sends, then waits for the response, within the request's deadline (which
 * fails `deferred` and sets `entry.expired`). The deadline covers the send too,
 * since a send may carry the whole exchange (an HTTP POST). Racing fibers on
 * every request costs more than the rest of the request path, so the send runs
 * in a fiber of its own and only a send that does not finish at once is raced,
 * against the deadline alone: a response or a close that arrives mid-send is
 * taken once the send is done, as before.
 */
const sendWithin = <E, R, A, E2>(
  send: Effect.Effect<void, E, R>,
  entry: { readonly deferred: Deferred.Deferred<A, E2>; readonly expired?: boolean | undefined }
): Effect.Effect<A, E | E2, R> =>
  Effect.flatMap(Effect.forkChild(send, { startImmediately: true }), (sending) => {
    const awaitResponse = Deferred.await(entry.deferred)
    const sent = sending.pollUnsafe()
    if (sent !== undefined) return Exit.isSuccess(sent) ? awaitResponse : Effect.failCause(sent.cause)
    const deadline = Effect.flatMap(Effect.exit(awaitResponse), (exit) => entry.expired === true ? exit : Effect.never)
    return Effect.raceFirst(Effect.andThen(Fiber.join(sending), awaitResponse), deadline).pipe(
      Effect.ensuring(Fiber.interrupt(sending))
    )
  })

interface DeadlineNode {
  readonly id: JsonRpc.RequestId
  readonly entry: Entry
  readonly timeoutMs: number
  readonly at: number
  prev: DeadlineNode | undefined
  next: DeadlineNode | undefined
}

interface DeadlineList {
  head: DeadlineNode | undefined
  tail: DeadlineNode | undefined
}

/**
 * Request deadlines behind one timer instead of one per request. Requests
 * with the same timeout expire in the order they started, so each list is
 * ordered and the earliest deadline is always at a head. (A wall clock that
 * steps back can only delay an expiry to the one ahead of it in its list.)
 */
const makeDeadlines = (expire: (node: DeadlineNode) => void) => {
  const lists = new Map<number, DeadlineList>()
  let sweeper: Fiber.Fiber<void> | undefined
  let wakeAt = Number.POSITIVE_INFINITY

  const unlink = (node: DeadlineNode) => {
    const list = lists.get(node.timeoutMs)!
    if (node.prev === undefined) list.head = node.next
    else node.prev.next = node.next
    if (node.next === undefined) list.tail = node.prev
    else node.next.prev = node.prev
    node.prev = node.next = undefined
    node.entry.deadline = undefined
    if (list.head === undefined) lists.delete(node.timeoutMs)
  }

  const stop = () => {
    sweeper?.interruptUnsafe()
    sweeper = undefined
    wakeAt = Number.POSITIVE_INFINITY
  }

  const sweep = (clock: Clock.Clock): Effect.Effect<void> =>
    Effect.suspend(() => {
      const now = clock.currentTimeMillisUnsafe()
      const due: Array<DeadlineNode> = []
      let next = Number.POSITIVE_INFINITY
      for (const list of Array.from(lists.values())) {
        while (list.head !== undefined && list.head.at <= now) {
          const node = list.head
          unlink(node)
          due.push(node)
        }
        if (list.head !== undefined && list.head.at < next) next = list.head.at
      }
      wakeAt = next
      if (next === Number.POSITIVE_INFINITY) sweeper = undefined
      // Expiring resumes callers, which may start requests (and `add`) before
      // this returns: the state above must already be settled.
      for (const node of due) expire(node)
      return next === Number.POSITIVE_INFINITY
        ? Effect.void
        : Effect.andThen(clock.sleep(Duration.millis(next - now)), sweep(clock))
    })

  const add = (clock: Clock.Clock, id: JsonRpc.RequestId, entry: Entry, timeoutMs: number): Effect.Effect<void> => {
    const at = clock.currentTimeMillisUnsafe() + timeoutMs
    const node: DeadlineNode = { id, entry, timeoutMs, at, prev: undefined, next: undefined }
    let list = lists.get(timeoutMs)
    if (list === undefined) {
      list = { head: node, tail: node }
      lists.set(timeoutMs, list)
    } else {
      node.prev = list.tail
      list.tail!.next = node
      list.tail = node
    }
    entry.deadline = node
    if (at >= wakeAt) return Effect.void
    stop()
    wakeAt = at
    const timer = Effect.andThen(clock.sleep(Duration.millis(timeoutMs)), sweep(clock))
    return Effect.map(Effect.forkDetach(timer, { startImmediately: true }), (fiber) => {
      sweeper = fiber
    })
  }

  // The timer is not stopped when the last request settles: restarting it for
  // every request of a sequential caller would cost what this saves. It ends
  // at its next wake with nothing left to watch, or at `clear`.
  const remove = (entry: Entry) => {
    if (entry.deadline !== undefined) unlink(entry.deadline)
  }

  const clear = () => {
    // Entries still point at their nodes; a later `remove` must not unlink from a dropped list.
    for (const list of lists.values()) {
      for (let node = list.head; node !== undefined; node = node.next) node.entry.deadline = undefined
    }
    lists.clear()
    stop()
  }

  return { add, remove, clear }
}
