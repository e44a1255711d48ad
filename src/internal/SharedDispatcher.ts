/**
 * A scheduler whose fibers all queue their yields on one dispatcher.
 *
 * `effect` gives every fiber a dispatcher of its own, and each schedules its
 * own `setImmediate`. Thirty requests read in one chunk whose handlers yield
 * once (`Effect.yieldNow`, a `Semaphore`, a `Queue` hand-off) then resume in
 * thirty separate callbacks, and their replies leave in thirty writes: the
 * output batch closes at the end of each callback. On one dispatcher they
 * resume in the same callback and their replies share one write. Tasks still
 * run in the order they were queued, per priority; execution mode and the
 * yield budget are the wrapped scheduler's.
 */
import type * as Fiber from "effect/Fiber"
import type * as Scheduler from "effect/Scheduler"

const shared = new WeakMap<Scheduler.Scheduler, Scheduler.Scheduler>()
const sharing = new WeakSet<Scheduler.Scheduler>()

/** `scheduler` with one dispatcher for all its fibers; the same wrapper for the same scheduler. */
export const share = (scheduler: Scheduler.Scheduler): Scheduler.Scheduler => {
  if (sharing.has(scheduler)) return scheduler
  let wrapper = shared.get(scheduler)
  if (wrapper === undefined) {
    let dispatcher: Scheduler.SchedulerDispatcher | undefined
    wrapper = {
      executionMode: scheduler.executionMode,
      shouldYield: (fiber: Fiber.Fiber<unknown, unknown>) => scheduler.shouldYield(fiber),
      makeDispatcher: () => dispatcher ??= scheduler.makeDispatcher()
    }
    shared.set(scheduler, wrapper)
    sharing.add(wrapper)
  }
  return wrapper
}
