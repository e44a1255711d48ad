/**
 * Outgoing lines for a byte sink (a child's stdin, a server's stdout), written
 * once per tick or every `flushAt` lines.
 *
 * Senders append synchronously to the batch in progress; a microtask hands
 * the whole batch to the sink as one buffer, so N requests started in the
 * same tick cost one pipe write and no fiber hop each. While the sink is
 * busy (the pipe is full and Node waits for `drain`), the batch may grow to
 * `capacity` lines; past that, senders wait in line, and the wait ends when
 * the sink takes the batch or fails when the writer closes. Nothing grows
 * without bound.
 *
 * A batch also goes out as soon as it holds `flushAt` lines (default 16):
 * the peer starts on the first lines while the rest are still being
 * produced, instead of both processes taking turns.
 *
 * With `coalesceTurn` (both stdio transports), only the first batch after
 * the peer's input (`newTurn`) goes out at the end of its tick; later lines
 * wait for the event loop's check phase. Lines made in separate callbacks
 * (replies as handlers' I/O completes one by one, requests a bridge
 * forwards) then share a write instead of one each.
 *
 * A waiting sender is one small record (`enqueue`), not a fiber: with
 * thousands of requests started at once most of them wait here, and a fiber
 * per waiter cost several KiB each. A withdrawn waiter is only marked and
 * skipped later, so withdrawing many (a burst of timeouts) stays linear.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import type * as Arr from "effect/Array"
import type * as Pull from "effect/Pull"

export interface BatchWriter<Closed> {
  /** Appends one framed line, or returns false when the caller has to wait (`write`). */
  readonly tryWrite: (line: string) => boolean
  /** Appends one framed line, waiting in line for room; fails with the close error. */
  readonly write: (line: string) => Effect.Effect<void, Closed>
  /**
   * `write` without an Effect: queues the line behind waiting senders, or
   * appends it at once when there is room. `done` runs once the line is in
   * a batch (`undefined`) or will never be (the close error), possibly before
   * `enqueue` returns; never after `withdraw`.
   */
  readonly enqueue: (line: string, done: (error: Closed | undefined) => void) => Queued
  /** Appends unless the batch is full (then drops it): for best-effort control messages. */
  readonly writeOrDrop: (line: string) => void
  /** The peer's next input arrived: the next batch goes out at the end of its tick (`coalesceTurn`). */
  readonly newTurn: () => void
  /** Fails waiting and later senders with `error`; what is already batched is still written. */
  readonly close: (error: Closed) => void
  /** Writes every batch into `sink` until closed and drained, then ends the sink. */
  readonly run: <E, R>(sink: Sink.Sink<unknown, Uint8Array, unknown, E, R>) => Effect.Effect<void, E, R>
}

/** A line waiting for room. */
export interface Queued {
  /** Takes the line back out of the queue; a no-op once it is in a batch or failed. */
  readonly withdraw: () => void
}

class Waiter<Closed> implements Queued {
  readonly line: string
  readonly done: (error: Closed | undefined) => void
  readonly onWithdraw: () => void
  withdrawn = false
  constructor(line: string, done: (error: Closed | undefined) => void, onWithdraw: () => void) {
    this.line = line
    this.done = done
    this.onWithdraw = onWithdraw
  }
  withdraw() {
    if (this.withdrawn) return
    this.withdrawn = true
    this.onWithdraw()
  }
}

const settled: Queued = { withdraw: () => {} }

const settledPromise = Promise.resolve()

export interface BatchWriterOptions {
  /** Hand the batch to an idle sink once it holds this many lines, not only at the end of the tick. */
  readonly flushAt?: number | undefined
  /**
   * After a batch went out, later lines wait for the event loop's check
   * phase (`setImmediate`) and go out together, until `newTurn` (the
   * peer's next input arrived): replies made in separate callbacks (each
   * handler's I/O completing) then share a write instead of one each. The
   * first batch after `newTurn` still goes out at the end of its tick, so
   * a lone reply waits no longer.
   */
  readonly coalesceTurn?: boolean | undefined
}

export const DEFAULT_FLUSH_AT = 16

export const make = <Closed>(capacity: number, options?: BatchWriterOptions): BatchWriter<Closed> => {
  const limit = Math.max(1, capacity)
  const flushAt = Math.max(1, options?.flushAt ?? DEFAULT_FLUSH_AT)
  let text = ""
  let count = 0
  let closed: Closed | undefined
  let ended = false
  /** The sink's pull while it waits for a batch. */
  let idle: ((exit: Exit.Exit<Arr.NonEmptyReadonlyArray<Uint8Array>, Cause.Done>) => void) | undefined
  let flushScheduled = false
  const coalesceTurn = options?.coalesceTurn === true
  /** A batch went out since the last `newTurn`: later ones go out on `setImmediate`. */
  let turnOpen = false
  const waiters: Array<Waiter<Closed>> = []
  /** Waiters not withdrawn; withdrawn ones stay in `waiters` until `admit` or `close` passes them. */
  let live = 0
  const onWithdraw = () => {
    live--
  }

  /** Hands the batch over; the room it frees goes to waiting senders first. */
  const take = (): Arr.NonEmptyReadonlyArray<Uint8Array> => {
    const chunk = Buffer.from(text, "utf8")
    text = ""
    count = 0
    if (live > 0) admit()
    else if (waiters.length > 0) waiters.length = 0
    return [chunk]
  }

  const flush = () => {
    flushScheduled = false
    const resume = idle
    if (resume === undefined || count === 0) return
    idle = undefined
    turnOpen = coalesceTurn
    resume(Exit.succeed(take()))
  }

  const append = (line: string) => {
    text += line
    count++
    // Resuming the idle sink writes now; a flush already scheduled then finds nothing left.
    if (count >= flushAt && idle !== undefined) return flush()
    if (idle !== undefined && !flushScheduled) {
      flushScheduled = true
      // Once a batch went out this turn, the check phase; otherwise the end of this tick, by
      // a reaction on a settled promise (`queueMicrotask` makes an AsyncResource per call).
      if (turnOpen) setImmediate(flush)
      else settledPromise.then(flush)
    }
  }

  /** Lets waiting senders in, oldest first, while there is room. */
  const admit = () => {
    let n = 0
    while (n < waiters.length && count < limit) {
      const waiter = waiters[n++]!
      if (waiter.withdrawn) continue
      waiter.withdrawn = true
      live--
      append(waiter.line)
      waiter.done(undefined)
    }
    if (n > 0) waiters.splice(0, n)
  }

  const tryWrite = (line: string): boolean => {
    if (closed !== undefined || live > 0 || count >= limit) return false
    append(line)
    return true
  }

  const enqueue = (line: string, done: (error: Closed | undefined) => void): Queued => {
    if (closed !== undefined) {
      done(closed)
      return settled
    }
    if (tryWrite(line)) {
      done(undefined)
      return settled
    }
    const waiter = new Waiter(line, done, onWithdraw)
    waiters.push(waiter)
    live++
    return waiter
  }

  const write = (line: string): Effect.Effect<void, Closed> =>
    Effect.callback<void, Closed>((resume) => {
      const queued = enqueue(line, (error) => resume(error === undefined ? Exit.void : Exit.fail(error)))
      return Effect.sync(() => queued.withdraw())
    })

  const writeOrDrop = (line: string) => {
    if (closed === undefined && count < limit) append(line)
  }

  const close = (error: Closed) => {
    if (closed !== undefined) return
    closed = error
    ended = true
    live = 0
    for (const waiter of waiters.splice(0)) {
      if (waiter.withdrawn) continue
      waiter.withdrawn = true
      waiter.done(error)
    }
    if (idle !== undefined && count === 0) {
      const resume = idle
      idle = undefined
      resume(Exit.fail(Cause.Done()))
    }
  }

  // The sink asks for the next batch once the previous one is written (or
  // buffered by Node below its high-water mark), so a pull is also the
  // moment there is room again.
  // One sink pulls at a time, so an interrupted pull can only be the one waiting.
  const stopWaiting = Effect.sync(() => {
    idle = undefined
  })
  const pull: Pull.Pull<Arr.NonEmptyReadonlyArray<Uint8Array>> = Effect.callback((resume) => {
    if (count > 0) return resume(Exit.succeed(take()))
    if (ended) return resume(Exit.fail(Cause.Done()))
    idle = resume
    return stopWaiting
  })

  const run = <E, R>(sink: Sink.Sink<unknown, Uint8Array, unknown, E, R>): Effect.Effect<void, E, R> =>
    Effect.asVoid(Stream.run(Stream.fromPull(Effect.succeed(pull)), sink))

  const newTurn = () => {
    turnOpen = false
  }

  return { tryWrite, write, enqueue, writeOrDrop, newTurn, close, run }
}
