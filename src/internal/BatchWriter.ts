/**
 * Outgoing lines for a byte sink (a child's stdin), written once per tick.
 *
 * Senders append synchronously to the batch in progress; a microtask hands
 * the whole batch to the sink as one buffer, so N requests started in the
 * same tick cost one pipe write and no fiber hop each. While the sink is
 * busy (the pipe is full and Node waits for `drain`), the batch may grow to
 * `capacity` lines; past that, senders wait in line, and the wait ends when
 * the sink takes the batch or fails when the writer closes. Nothing grows
 * without bound.
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
  /** Appends unless the batch is full (then drops it): for best-effort control messages. */
  readonly writeOrDrop: (line: string) => void
  /** Fails waiting and later senders with `error`; what is already batched is still written. */
  readonly close: (error: Closed) => void
  /** Writes every batch into `sink` until closed and drained, then ends the sink. */
  readonly run: <E, R>(sink: Sink.Sink<unknown, Uint8Array, unknown, E, R>) => Effect.Effect<void, E, R>
}

interface Waiter<Closed> {
  readonly line: string
  readonly resume: (exit: Exit.Exit<void, Closed>) => void
}

export const make = <Closed>(capacity: number): BatchWriter<Closed> => {
  const limit = Math.max(1, capacity)
  let text = ""
  let count = 0
  let closed: Closed | undefined
  let ended = false
  /** The sink's pull while it waits for a batch. */
  let idle: ((exit: Exit.Exit<Arr.NonEmptyReadonlyArray<Uint8Array>, Cause.Done>) => void) | undefined
  let flushScheduled = false
  const waiters: Array<Waiter<Closed>> = []

  /** Hands the batch over; the room it frees goes to waiting senders first. */
  const take = (): Arr.NonEmptyReadonlyArray<Uint8Array> => {
    const chunk = Buffer.from(text, "utf8")
    text = ""
    count = 0
    if (waiters.length > 0) admit()
    return [chunk]
  }

  const flush = () => {
    flushScheduled = false
    const resume = idle
    if (resume === undefined || count === 0) return
    idle = undefined
    resume(Exit.succeed(take()))
  }

  const append = (line: string) => {
    text += line
    count++
    if (idle !== undefined && !flushScheduled) {
      flushScheduled = true
      queueMicrotask(flush)
    }
  }

  /** Lets waiting senders in, oldest first, while there is room. */
  const admit = () => {
    let n = 0
    while (n < waiters.length && count < limit) {
      const waiter = waiters[n++]!
      append(waiter.line)
      waiter.resume(Exit.void)
    }
    if (n > 0) waiters.splice(0, n)
  }

  const tryWrite = (line: string): boolean => {
    if (closed !== undefined || waiters.length > 0 || count >= limit) return false
    append(line)
    return true
  }

  const write = (line: string): Effect.Effect<void, Closed> =>
    Effect.callback<void, Closed>((resume) => {
      if (closed !== undefined) return resume(Exit.fail(closed))
      if (tryWrite(line)) return resume(Exit.void)
      const waiter: Waiter<Closed> = { line, resume }
      waiters.push(waiter)
      return Effect.sync(() => {
        const i = waiters.indexOf(waiter)
        if (i !== -1) waiters.splice(i, 1)
      })
    })

  const writeOrDrop = (line: string) => {
    if (closed === undefined && count < limit) append(line)
  }

  const close = (error: Closed) => {
    if (closed !== undefined) return
    closed = error
    ended = true
    const failed = Exit.fail(error)
    for (const waiter of waiters.splice(0)) waiter.resume(failed)
    if (idle !== undefined && count === 0) {
      const resume = idle
      idle = undefined
      resume(Exit.fail(Cause.Done()))
    }
  }

  // The sink asks for the next batch once the previous one is written (or
  // buffered by Node below its high-water mark), so a pull is also the
  // moment there is room again.
  const pull: Pull.Pull<Arr.NonEmptyReadonlyArray<Uint8Array>> = Effect.callback((resume) => {
    if (count > 0) return resume(Exit.succeed(take()))
    if (ended) return resume(Exit.fail(Cause.Done()))
    idle = resume
    return Effect.sync(() => {
      if (idle === resume) idle = undefined
    })
  })

  const run = <E, R>(sink: Sink.Sink<unknown, Uint8Array, unknown, E, R>): Effect.Effect<void, E, R> =>
    Effect.asVoid(Stream.run(Stream.fromPull(Effect.succeed(pull)), sink))

  return { tryWrite, write, writeOrDrop, close, run }
}
