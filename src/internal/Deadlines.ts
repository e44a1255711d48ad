/**
 * Request deadlines behind one timer instead of one per request.
 *
 * Deadlines are kept in one list per timeout length. Requests with the same
 * timeout expire in the order they started, so each list is ordered by
 * appending, and the earliest deadline is always at one of the heads: adding,
 * restarting and removing are O(1), a sweep touches only what is due. (A wall
 * clock that steps back can only delay an expiry to the one ahead of it in
 * its list.)
 */
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"

/** One item's place in its list; owned by the wheel. */
export interface Deadline {
  readonly timeoutMs: number
  readonly at: number
}

/** What can carry a deadline: the wheel keeps the item's place in `deadline`, which nothing else writes. */
export interface Timed {
  deadline: Deadline | undefined
}

export interface Deadlines<A extends Timed> {
  /**
   * Gives `item` a deadline `timeoutMs` from now. Returns `Effect.void`
   * itself unless the timer must (re)start for this deadline, in which case
   * the caller runs the returned effect, which forks it.
   */
  readonly add: (clock: Clock.Clock, item: A, timeoutMs: number) => Effect.Effect<void>
  /** Moves the item's deadline to its timeout from now; a no-op when it has none. */
  readonly restart: (clock: Clock.Clock, item: A) => void
  /**
   * Runs `f` with the time read once, now: the restarts it makes count from
   * that moment instead of reading the clock each (see `restart`).
   */
  readonly atOneTime: <T>(clock: Clock.Clock, f: () => T) => T
  /** Drops the item's deadline, if any. */
  readonly remove: (item: A) => void
  /** Drops every deadline and stops the timer. */
  readonly clear: () => void
}

interface Node<A extends Timed> extends Deadline {
  at: number
  readonly item: A
  readonly list: List<A>
  prev: Node<A> | undefined
  next: Node<A> | undefined
}

interface List<A extends Timed> {
  head: Node<A> | undefined
  tail: Node<A> | undefined
}

/**
 * A wheel that calls `expire` with each item whose deadline has passed, its
 * deadline already dropped. Items with the same timeout expire in the order
 * their deadlines were set (a restart counts as set anew).
 */
export const make = <A extends Timed>(expire: (item: A, timeoutMs: number) => void): Deadlines<A> => {
  const lists = new Map<number, List<A>>()
  let sweeper: Fiber.Fiber<void> | undefined
  let wakeAt = Number.POSITIVE_INFINITY
  /** The time `atOneTime` read, while its function runs. */
  let heldNow: number | undefined

  const append = (item: A, timeoutMs: number, at: number, list: List<A>): void => {
    const node: Node<A> = { item, timeoutMs, at, list, prev: list.tail, next: undefined }
    if (list.tail === undefined) list.head = node
    else list.tail.next = node
    list.tail = node
    item.deadline = node
  }

  // A list left empty stays for the next item with that timeout; the sweep drops it.
  const unlink = (node: Node<A>): void => {
    const list = node.list
    if (node.prev === undefined) list.head = node.next
    else node.prev.next = node.next
    if (node.next === undefined) list.tail = node.prev
    else node.next.prev = node.prev
    node.prev = node.next = undefined
    node.item.deadline = undefined
  }

  const stop = (): void => {
    sweeper?.interruptUnsafe()
    sweeper = undefined
    wakeAt = Number.POSITIVE_INFINITY
  }

  const sweep = (clock: Clock.Clock): Effect.Effect<void> =>
    Effect.suspend(() => {
      const now = clock.currentTimeMillisUnsafe()
      const due: Array<Node<A>> = []
      let next = Number.POSITIVE_INFINITY
      for (const [timeoutMs, list] of Array.from(lists)) {
        while (list.head !== undefined && list.head.at <= now) {
          const node = list.head
          unlink(node)
          due.push(node)
        }
        if (list.head === undefined) lists.delete(timeoutMs)
        else if (list.head.at < next) next = list.head.at
      }
      wakeAt = next
      if (next === Number.POSITIVE_INFINITY) sweeper = undefined
      // Expiring resumes callers, which may start requests (and `add`) before
      // this returns: the state above must already be settled.
      for (const node of due) expire(node.item, node.timeoutMs)
      return next === Number.POSITIVE_INFINITY
        ? Effect.void
        : Effect.andThen(clock.sleep(Duration.millis(next - now)), sweep(clock))
    })

  const add = (clock: Clock.Clock, item: A, timeoutMs: number): Effect.Effect<void> => {
    const at = clock.currentTimeMillisUnsafe() + timeoutMs
    let list = lists.get(timeoutMs)
    if (list === undefined) {
      list = { head: undefined, tail: undefined }
      lists.set(timeoutMs, list)
    }
    append(item, timeoutMs, at, list)
    if (at >= wakeAt) return Effect.void
    stop()
    wakeAt = at
    const timer = Effect.andThen(clock.sleep(Duration.millis(timeoutMs)), sweep(clock))
    return Effect.map(Effect.forkDetach(timer, { startImmediately: true }), (fiber) => {
      sweeper = fiber
    })
  }

  // To the tail of its list, which keeps the list ordered. The timer needs no
  // change: while any deadline exists a sweep is due at or before the earliest
  // one, and a sweep that wakes early only re-arms for the new head. The node
  // moves as it is: progress restarts a deadline many times per request, often
  // many times in one read (`atOneTime`), where all but the first find the
  // deadline already where it would go.
  const restart = (clock: Clock.Clock, item: A): void => {
    const node = item.deadline as Node<A> | undefined
    if (node === undefined) return
    const at = (heldNow ?? clock.currentTimeMillisUnsafe()) + node.timeoutMs
    if (at === node.at) return
    node.at = at
    const list = node.list
    if (list.tail === node) return
    if (node.prev === undefined) list.head = node.next
    else node.prev.next = node.next
    node.next!.prev = node.prev
    node.prev = list.tail
    node.next = undefined
    list.tail!.next = node
    list.tail = node
  }

  // A message read is routed within microseconds of the read: one clock
  // reading serves every progress in it, where one per progress was a
  // measurable part of routing it.
  const atOneTime = <T>(clock: Clock.Clock, f: () => T): T => {
    const outer = heldNow
    heldNow = clock.currentTimeMillisUnsafe()
    try {
      return f()
    } finally {
      heldNow = outer
    }
  }

  // The timer is not stopped when the last deadline goes: restarting it for
  // every request of a sequential caller would cost what this saves. It ends
  // at its next wake with nothing left to watch, or at `clear`.
  const remove = (item: A): void => {
    const node = item.deadline as Node<A> | undefined
    if (node !== undefined) unlink(node)
  }

  const clear = (): void => {
    // Items still point at their nodes; a later `remove` must not unlink from a dropped list.
    for (const list of lists.values()) {
      for (let node = list.head; node !== undefined; node = node.next) node.item.deadline = undefined
    }
    lists.clear()
    stop()
  }

  return { add, restart, atOneTime, remove, clear }
}
