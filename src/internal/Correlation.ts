/**
 * Request correlation shared by every transport: one table (SlotTable) from
 * request id to the entry of its waiting caller.
 *
 * Invariants the tests hold us to: every request settles exactly once; an
 * entry leaves the map when its request settles, times out, is interrupted or
 * the transport closes; responses with unknown ids are counted, not fatal.
 * A `call` waits on its entry's `Deferred`; a `callBuffered` (stdio) is
 * resumed from its entry directly, since a Deferred there costs a fifth more
 * heap per request in flight (docs/design.md, Correlation). Deadlines live in
 * `Deadlines`, behind one timer per correlator.
 */
import * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Effectable from "effect/Effectable"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as JsonRpc from "../JsonRpc.ts"
import { MalformedMessage, RequestTimeout, RpcError, TransportClosed } from "../McpError.ts"
import * as Deadlines from "./Deadlines.ts"
import * as SlotTable from "./SlotTable.ts"

export interface CallOptions {
  /** Milliseconds; `undefined`, `Infinity` or `0` and below mean no timeout. */
  readonly timeoutMs?: number | undefined
  /**
   * Receives, once the deadline is set, a function that restarts it: the
   * timeout then counts again from that moment. A no-op once the request has
   * settled. Not called for a request without a timeout.
   */
  readonly onDeadline?: ((restart: () => void) => void) | undefined
  /** Receives the request's id as soon as it is assigned (a subscription is known by its request's id). */
  readonly onId?: ((id: JsonRpc.RequestId) => void) | undefined
}

/**
 * Requests never followed by `notifications/cancelled`: the handshake may
 * not be cancelled, and the era probe goes to servers that may not know
 * the method nor expect anything before `initialize`.
 */
const isUncancellable = (method: string): boolean => method === "initialize" || method === "server/discover"

/** How a request can end apart from its own send failing. */
export type SettleError = RpcError | MalformedMessage | TransportClosed | RequestTimeout

/** A settled request. (A buffered one may also fail with its writer's error: see `callBuffered`.) */
type Outcome = Effect.Effect<unknown, SettleError>

/**
 * A pending request. An entry is also the effect that abandons it (see
 * `EntryProto`): a buffered call hands it to `Effect.callback` as its
 * cancellation, so a waiting call holds no closure and effect of its own for it.
 */
interface Entry extends Deadlines.Timed, Effect.Effect<void> {
  /** The correlator's `abandon`, run when the entry is evaluated as an effect. */
  readonly abandon: (entry: Entry) => Effect.Effect<void>
  readonly id: JsonRpc.RequestId
  readonly method: string
  /** `call` waits on a Deferred; `callBuffered` resumes its fiber directly (`resume`, or `outcome` if early). */
  readonly deferred: Deferred.Deferred<unknown, SettleError> | undefined
  resume: ((outcome: Outcome) => void) | undefined
  outcome: Outcome | undefined
  /** A buffered request's envelope while it waits for room in the writer. */
  queued: Queued | undefined
  /** Set when the deadline, not the caller or the peer, ended the request. */
  expired: boolean
}

/** Evaluated as an effect, an entry abandons its request (its caller was interrupted). */
const EntryProto = Effectable.Prototype<Entry>({
  label: "Correlation/abandon",
  evaluate() {
    return this.abandon(this)
  }
})

class EntryImpl {
  readonly abandon: Entry["abandon"]
  readonly id: JsonRpc.RequestId
  readonly method: string
  readonly deferred: Entry["deferred"]
  resume: Entry["resume"] = undefined
  outcome: Entry["outcome"] = undefined
  deadline: Entry["deadline"] = undefined
  queued: Entry["queued"] = undefined
  expired = false
  constructor(abandon: Entry["abandon"], id: JsonRpc.RequestId, method: string, deferred: Entry["deferred"]) {
    this.abandon = abandon
    this.id = id
    this.method = method
    this.deferred = deferred
  }
}
Object.setPrototypeOf(EntryImpl.prototype, EntryProto)

/** What a `callBuffered` write returns when it cannot take the envelope without waiting. */
export const WouldBlock: unique symbol = Symbol.for("effect-mcp-transport/Correlation/WouldBlock")
export type WouldBlock = typeof WouldBlock

/** An envelope waiting for room in a buffered writer (`callBuffered`'s `enqueue`). */
export interface Queued {
  /** Takes it back out; a no-op once it is written or failed. */
  readonly withdraw: () => void
}

/** Marks an entry whose `enqueue` has not returned yet. */
const notYetQueued: Queued = { withdraw: () => {} }

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
  ) => Effect.Effect<unknown, E | SettleError, R>
  /**
   * `call` for transports that buffer writes (a pipe written once per tick):
   * `write` runs synchronously and returns `undefined` once the envelope is
   * taken, an error to fail the request with (nothing was sent), or
   * `WouldBlock` when it cannot take it now, in which case `enqueue` queues
   * it: `done` runs once it is taken (`undefined`) or with the error that
   * fails the request, and `withdraw` takes it back when the request ends
   * first. The deadline covers the wait. Same settlement, timeout and
   * cancellation rules as `call`, without `call`'s per-request fiber, even
   * while waiting; on timeout `cancel` runs before the caller resumes, so the
   * peer hears of it first.
   */
  readonly callBuffered: <E>(
    method: string,
    params: unknown,
    write: (message: JsonRpc.JsonRpcRequest) => E | WouldBlock | undefined,
    enqueue: (message: JsonRpc.JsonRpcRequest, done: (error: E | undefined) => void) => Queued,
    options?: CallOptions
  ) => Effect.Effect<unknown, E | SettleError>
  /** Completes the pending request a response belongs to. False when the id is unknown. */
  readonly complete: (response: JsonRpc.JsonRpcResponse) => boolean
  /**
   * Fails pending request `id` with `MalformedMessage`: its answer came but
   * is not a valid response (`text` is the raw message, `reason` what is
   * wrong). False when the id is unknown.
   */
  readonly completeMalformed: (id: JsonRpc.RequestId, text: string, reason: string) => boolean
  /**
   * The id of the one pending request, when exactly one is pending and its
   * envelope has left (is not waiting for room in a writer); else `undefined`.
   */
  readonly sole: () => JsonRpc.RequestId | undefined
  /** Fails every pending request and every later call with `error`. Idempotent: the first error wins. */
  readonly close: (error: TransportClosed) => void
  readonly closedWith: () => TransportClosed | undefined
  readonly pending: () => number
  readonly unknownResponses: () => number
  /** Whether request `id` is still waiting, without copying the ids. */
  readonly isPending: (id: JsonRpc.RequestId) => boolean
  /** A copy of the ids still waiting, for diagnostics (`isPending` asks about one). */
  readonly pendingIds: () => ReadonlyArray<JsonRpc.RequestId>
  /**
   * Runs `f`, the routing of what one read brought, with the clock read once:
   * the deadlines its progress restarts count from the read. Without a clock
   * of its own (`CorrelationOptions.clock`), just runs `f`.
   */
  readonly routingRead: <T>(f: () => T) => T
}

export interface CorrelationOptions {
  /** Tells the peer a request was abandoned (`notifications/cancelled`). */
  readonly cancel: (id: JsonRpc.RequestId, reason: string) => Effect.Effect<void>
  /** Prefix for ids, so that two correlators sharing a peer never collide. Numbers when absent. */
  readonly idPrefix?: string | undefined
  /**
   * The clock of every deadline. When absent each call reads the caller's
   * clock; a transport that owns its correlator passes its own once, which
   * spares every request that lookup (one timer serves all deadlines anyway).
   */
  readonly clock?: Clock.Clock | undefined
}

export const make = (options: CorrelationOptions): Correlation => {
  const entries = SlotTable.make<JsonRpc.RequestId, Entry>()
  let counter = 0
  let unknown = 0
  let closed: TransportClosed | undefined
  const prefix = options.idPrefix
  const fixedClock = options.clock

  /** A request that ends while its envelope still waits for room must not be written later. */
  const withdraw = (entry: Entry): void => {
    const queued = entry.queued
    if (queued === undefined) return
    entry.queued = undefined
    queued.withdraw()
  }

  const settle = (entry: Entry, outcome: Outcome): void => {
    withdraw(entry)
    if (entry.deferred !== undefined) Deferred.doneUnsafe(entry.deferred, outcome)
    else if (entry.resume !== undefined) entry.resume(outcome)
    else entry.outcome = outcome
  }

  const deadlines = Deadlines.make<Entry>((entry, timeoutMs) => {
    if (entries.get(entry.id) !== entry) return
    entries.delete(entry.id)
    entry.expired = true
    const timeout = Exit.fail(new RequestTimeout({ method: entry.method, id: entry.id, timeoutMs }))
    // `call` tells the peer from its own exit handler; a buffered call does it here, before its caller resumes.
    settle(
      entry,
      entry.deferred !== undefined || isUncancellable(entry.method) || closed !== undefined
        ? timeout
        : Effect.andThen(Effect.uninterruptible(options.cancel(entry.id, `Request timeout after ${timeoutMs}ms`)), timeout)
    )
  })

  const nextId = (): JsonRpc.RequestId => prefix === undefined ? ++counter : `${prefix}${++counter}`

  const register = (
    id: JsonRpc.RequestId,
    method: string,
    deferred: Entry["deferred"]
  ): Entry => {
    const entry = new EntryImpl(abandon, id, method, deferred) as unknown as Entry
    entries.set(id, entry)
    return entry
  }

  /** Sets the entry's deadline and hands the caller its restart (see `CallOptions.onDeadline`). */
  const armDeadline = (
    clock: Clock.Clock,
    entry: Entry,
    timeoutMs: number,
    callOptions: CallOptions | undefined
  ): Effect.Effect<void> => {
    const timer = deadlines.add(clock, entry, timeoutMs)
    callOptions?.onDeadline?.(() => deadlines.restart(clock, entry))
    return timer
  }

  const isTimed = (timeoutMs: number | undefined): timeoutMs is number =>
    timeoutMs !== undefined && timeoutMs > 0 && Number.isFinite(timeoutMs)

  /** The request path of `call`: the send may take time, and the deadline covers it. */
  const sendAndAwait = <E, R>(
    clock: Clock.Clock,
    id: JsonRpc.RequestId,
    message: JsonRpc.JsonRpcRequest,
    send: (message: JsonRpc.JsonRpcRequest) => Effect.Effect<void, E, R>,
    callOptions: CallOptions | undefined
  ): Effect.Effect<unknown, E | SettleError, R> => {
    const method = message.method
    const deferred = Deferred.makeUnsafe<unknown, SettleError>()
    const entry = register(id, method, deferred)
    const timeoutMs = callOptions?.timeoutMs
    const timed = isTimed(timeoutMs)
    const effect: Effect.Effect<unknown, E | SettleError, R> = timed
      ? Effect.andThen(armDeadline(clock, entry, timeoutMs, callOptions), sendWithin(send(message), deferred, entry))
      : Effect.andThen(send(message), Deferred.await(deferred))
    return Effect.onExit(effect, (exit) => {
      if (timed) deadlines.remove(entry)
      const stillPending = entries.get(id) === entry
      if (stillPending) entries.delete(id)
      if (Exit.isSuccess(exit) || closed !== undefined || isUncancellable(method)) return Effect.void
      if (!stillPending && !entry.expired) return Effect.void
      const reason = entry.expired
        ? `Request timeout after ${timeoutMs}ms`
        : Exit.hasInterrupts(exit)
        ? "Request cancelled by the caller"
        : undefined
      return reason === undefined ? Effect.void : options.cancel(id, reason)
    })
  }

  const call = <E, R>(
    method: string,
    params: unknown,
    send: (message: JsonRpc.JsonRpcRequest) => Effect.Effect<void, E, R>,
    callOptions?: CallOptions
  ): Effect.Effect<unknown, E | SettleError, R> =>
    fixedClock === undefined
      ? Effect.clockWith((clock) => callNow(clock, method, params, send, callOptions))
      : Effect.suspend(() => callNow(fixedClock, method, params, send, callOptions))

  const callNow = <E, R>(
    clock: Clock.Clock,
    method: string,
    params: unknown,
    send: (message: JsonRpc.JsonRpcRequest) => Effect.Effect<void, E, R>,
    callOptions: CallOptions | undefined
  ): Effect.Effect<unknown, E | SettleError, R> => {
    if (closed !== undefined) return Effect.fail(closed)
    const id = nextId()
    callOptions?.onId?.(id)
    return sendAndAwait(clock, id, JsonRpc.request(id, method, params), send, callOptions)
  }

  /** Leaves a buffered request that its caller abandoned (interrupted) and tells the peer. */
  const abandon = (entry: Entry): Effect.Effect<void> => {
    if (entries.get(entry.id) !== entry) return Effect.void
    entries.delete(entry.id)
    deadlines.remove(entry)
    withdraw(entry)
    return closed !== undefined || isUncancellable(entry.method)
      ? Effect.void
      : options.cancel(entry.id, "Request cancelled by the caller")
  }

  // Outcomes of buffered entries fail only with the errors `callBuffered` declares.
  /** Resumes with the entry's outcome if it is in, else leaves `resume` for its settlement (the entry then abandons it on interruption). */
  const attach = (entry: Entry, resume: NonNullable<Entry["resume"]>) => {
    if (entry.outcome !== undefined) return resume(entry.outcome)
    entry.resume = resume
    return entry
  }

  const awaitEntry = <E>(entry: Entry): Effect.Effect<unknown, E | SettleError> =>
    Effect.callback((resume) => attach(entry, resume))

  const callBuffered = <E>(
    method: string,
    params: unknown,
    write: (message: JsonRpc.JsonRpcRequest) => E | WouldBlock | undefined,
    enqueue: (message: JsonRpc.JsonRpcRequest, done: (error: E | undefined) => void) => Queued,
    callOptions?: CallOptions
  ): Effect.Effect<unknown, E | SettleError> =>
    fixedClock === undefined
      ? Effect.clockWith((clock) => waitFor<E>(startBuffered(clock, method, params, write, enqueue, callOptions)))
      // One step per call: the request starts in the callback that waits for its answer.
      : Effect.callback((resume) => {
        const started = startBuffered(fixedClock, method, params, write, enqueue, callOptions)
        if (!(started instanceof EntryImpl)) return resume(started as Effect.Effect<unknown, E | SettleError>)
        return attach(started as unknown as Entry, resume)
      })

  const waitFor = <E>(started: Entry | Effect.Effect<unknown, E | SettleError>): Effect.Effect<unknown, E | SettleError> =>
    started instanceof EntryImpl ? awaitEntry<E>(started as unknown as Entry) : started

  /**
   * Sends a buffered request and registers it: its entry to wait on, or
   * the effect the call goes on with instead (a failure, or the deadline's
   * timer to start before waiting).
   */
  const startBuffered = <E>(
    clock: Clock.Clock,
    method: string,
    params: unknown,
    write: (message: JsonRpc.JsonRpcRequest) => E | WouldBlock | undefined,
    enqueue: (message: JsonRpc.JsonRpcRequest, done: (error: E | undefined) => void) => Queued,
    callOptions: CallOptions | undefined
  ): Entry | Effect.Effect<unknown, E | SettleError> => {
    if (closed !== undefined) return Effect.fail(closed)
    const id = nextId()
    callOptions?.onId?.(id)
    const message = JsonRpc.request(id, method, params)
    // Registered after the write: a buffered write reaches the peer only
    // once this fiber yields, so no response can come before the entry.
    const written = write(message)
    if (written !== WouldBlock && written !== undefined) return Effect.fail(written)
    const entry = register(id, method, undefined)
    if (written === WouldBlock) {
      // Waiting for room is a record in the writer's queue, not a fiber and
      // a race per request: with thousands of requests started at once,
      // most of them wait here (see BatchWriter).
      entry.queued = notYetQueued
      const queued = enqueue(message, (error) => {
        entry.queued = undefined
        if (error !== undefined && entries.get(id) === entry) {
          entries.delete(id)
          deadlines.remove(entry)
          // Only this call's awaitEntry<E> reads it, which declares E.
          settle(entry, Exit.fail(error) as Exit.Exit<never, unknown> as Outcome)
        }
      })
      if (entry.outcome !== undefined) return entry
      // `done` may already have run (room at once, or a closed writer).
      if (entry.queued === notYetQueued) entry.queued = queued
    }
    const timeoutMs = callOptions?.timeoutMs
    if (!isTimed(timeoutMs)) return entry
    const timer = armDeadline(clock, entry, timeoutMs, callOptions)
    // Starting the timer is a step of its own: an interruption right after it must still clear the entry.
    return timer === Effect.void
      ? entry
      : Effect.onInterrupt(Effect.andThen(timer, awaitEntry<E>(entry)), () => abandon(entry))
  }

  /** Takes the pending entry an incoming id names out of the map. */
  const take = (id: JsonRpc.RequestId): Entry | undefined => {
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
    if (entry === undefined) return undefined
    entries.delete(key)
    deadlines.remove(entry)
    return entry
  }

  const complete = (response: JsonRpc.JsonRpcResponse): boolean => {
    const id = response.id
    if (id === null) {
      unknown++
      return false
    }
    const entry = take(id)
    if (entry === undefined) {
      unknown++
      return false
    }
    settle(
      entry,
      "result" in response
        ? Exit.succeed(response.result)
        : Exit.fail(RpcError.fromObject(response.error, entry.method, id))
    )
    return true
  }

  const completeMalformed = (id: JsonRpc.RequestId, text: string, reason: string): boolean => {
    const entry = take(id)
    if (entry === undefined) return false
    settle(entry, Exit.fail(MalformedMessage.answering(text, reason, entry.method, entry.id)))
    return true
  }

  const sole = (): JsonRpc.RequestId | undefined => {
    if (entries.size() !== 1) return undefined
    const entry: Entry = entries.first()!
    return entry.queued === undefined ? entry.id : undefined
  }

  const close = (error: TransportClosed): void => {
    if (closed !== undefined) return
    closed = error
    deadlines.clear()
    const failed = Exit.fail(error)
    const pending = entries.values()
    entries.clear()
    for (const entry of pending) settle(entry, failed)
  }

  return {
    call,
    callBuffered,
    complete,
    completeMalformed,
    sole,
    close,
    closedWith: () => closed,
    pending: () => entries.size(),
    unknownResponses: () => unknown,
    isPending: (id) => entries.has(id),
    pendingIds: () => entries.keys(),
    routingRead: fixedClock === undefined ? (f) => f() : (f) => deadlines.atOneTime(fixedClock, f)
  }
}

/**
 * Sends, then waits for the response, within the request's deadline (which
 * fails `deferred`). The deadline covers the send too, since a send may carry
 * the whole exchange (an HTTP POST). The send runs in a fiber of its own, and
 * nothing is raced: `deferred` is settled by the response, the deadline, a
 * close, or the send's own failure. The deadline stops the send at once;
 * otherwise the call waits for the send to finish (a stream may carry more
 * after the response), and the send's failure wins over a close. Fibers per
 * request: one, where a race cost three.
 */
const sendWithin = <E, R, A, E2>(
  send: Effect.Effect<void, E, R>,
  deferred: Deferred.Deferred<A, E2>,
  entry: { readonly expired: boolean }
): Effect.Effect<A, E | E2, R> =>
  Effect.flatMap(Effect.forkChild(send, { startImmediately: true }), (sending) => {
    const awaitResponse = Deferred.await(deferred)
    const sent = sending.pollUnsafe()
    if (sent !== undefined) return Exit.isSuccess(sent) ? awaitResponse : Effect.failCause(sent.cause)
    sending.addObserver((exit) => {
      if (Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)) {
        Deferred.doneUnsafe(deferred, exit as unknown as Exit.Exit<A, E2>)
      }
    })
    return awaitResponse.pipe(
      Effect.flatMap((response) => Effect.as(Fiber.join(sending), response)),
      // Only the deadline cuts the send short: after a close, the send's own failure says more.
      Effect.catchCause((cause) =>
        entry.expired ? Effect.failCause(cause) : Effect.andThen(Fiber.join(sending), Effect.failCause(cause))
      ),
      Effect.ensuring(Fiber.interrupt(sending))
    ) as Effect.Effect<A, E | E2, R>
  })
