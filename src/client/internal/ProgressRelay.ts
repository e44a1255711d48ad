/**
 * The progress of a call with an `onProgress` callback on its way to that
 * callback: run one after the other, while the call waits or, more often,
 * by the caller once the result that came with them is in.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type { Progress } from "./ServerNotificationEnum.ts"

/** Where a call's relay is found while progress may still come for it. */
export interface RelayHolder {
  relay: ProgressRelay | undefined
}

/**
 * Runs `onProgress` for each progress of a call, one after the other, and
 * every progress that arrived before the result before the call returns.
 *
 * The request runs in the caller's fiber. Progress arrives as the transport
 * routes it, more often than not in the same read as the result that
 * follows it; the caller then runs the callbacks itself once the result is
 * in, and the call costs no fiber of its own. Only progress still without a
 * result once that read is done (a task scheduled behind it) starts a fiber,
 * with the caller's services, to run the callbacks while the call waits. As
 * when the callbacks' fiber raced the request: once the result is in, that
 * fiber is stopped and the caller runs what is left; a callback that died
 * fails the call (when its request settles); a call that fails or is
 * interrupted stops that fiber. `failure` (if any) maps what the request
 * failed with; `release` (if any) runs once the call is over, however it
 * ended. Both are here, in the frames this builds, rather than in frames
 * of their own around it: a call with `onProgress` took 6 steps more.
 */
export const withProgress = <A, E>(
  caller: Fiber.Fiber<unknown, unknown>,
  request: Effect.Effect<A, E>,
  failure: ((cause: Cause.Cause<E>) => Effect.Effect<never, E>) | undefined,
  watch: RelayHolder,
  onProgress: (progress: Progress) => Effect.Effect<void>,
  release: (() => void) | undefined
): Effect.Effect<A, E> => {
  const relay = new ProgressRelay(caller, onProgress, watch)
  watch.relay = relay
  const finish = (value: A) => relay.finish(value)
  const settled = failure === undefined
    ? Effect.flatMap(request, finish)
    : Effect.matchCauseEffect(request, { onSuccess: finish, onFailure: failure })
  return Effect.onExit(settled, (exit) => {
    release?.()
    if (exit._tag === "Success") return Effect.void
    relay.stop()
    const running = relay.deliverer
    return running === undefined ? Effect.void : Fiber.interrupt(running)
  })
}

/**
 * Relays given progress during this tick, looked at once the tick's own
 * work is done: by then the rest of the read that brought the progress has
 * been routed, and a call whose result came with it has finished. One
 * reaction per tick serves every call, where a task on the caller's
 * dispatcher cost each call a `setImmediate` of its own (every fiber has a
 * dispatcher of its own). A reaction on a settled promise, since
 * `queueMicrotask` makes an `AsyncResource` per call.
 */
let toKick: Array<ProgressRelay> = []
const resolved = Promise.resolve()
const kickAll = (): void => {
  const relays = toKick
  toKick = []
  for (const relay of relays) relay.kick()
}
const kickAtEndOfTick = (relay: ProgressRelay): void => {
  if (toKick.push(relay) === 1) void resolved.then(kickAll)
}

/**
 * The progress of one call on its way to `onProgress` (see `withProgress`).
 * A call whose progress comes with its result builds only this and its
 * queue; the parts of the callbacks' own fiber are made when it starts.
 */
export class ProgressRelay {
  pending: Array<Progress> = []
  deliverer: Fiber.Fiber<void> | undefined = undefined
  private parked: ((resume: Effect.Effect<void>) => void) | undefined = undefined
  private kickScheduled = false
  private settled = false
  private readonly caller: Fiber.Fiber<unknown, unknown>
  private readonly onProgress: (progress: Progress) => Effect.Effect<void>
  private readonly watch: RelayHolder

  constructor(caller: Fiber.Fiber<unknown, unknown>, onProgress: (progress: Progress) => Effect.Effect<void>, watch: RelayHolder) {
    this.caller = caller
    this.onProgress = onProgress
    this.watch = watch
  }

  deliver(progress: Progress): void {
    this.pending.push(progress)
    if (!this.kickScheduled && (this.deliverer === undefined || this.parked !== undefined)) {
      this.kickScheduled = true
      kickAtEndOfTick(this)
    }
  }

  /** Starts the callbacks' fiber, or wakes it, unless the call is over. */
  kick(): void {
    this.kickScheduled = false
    if (this.settled) return
    if (this.deliverer === undefined) {
      // It yields first: a callback that wakes a fiber which then ends this call finds it here.
      this.deliverer = Effect.runForkWith(this.caller.context)(Effect.andThen(Effect.yieldNow, this.loop()))
      return
    }
    const resume = this.parked
    this.parked = undefined
    resume?.(Effect.void)
  }

  /** The callbacks' fiber: one progress at a time, so that what a stopped fiber had not started stays for the caller. */
  private loop(): Effect.Effect<void> {
    const park = Effect.callback<void>((resume) => void (this.parked = resume))
    const next: Effect.Effect<void> = Effect.suspend(() => {
      const progress = this.pending.shift()
      if (progress !== undefined) return Effect.andThen(this.onProgress(progress), next)
      return Effect.andThen(park, next)
    })
    return next
  }

  /** No progress reaches `onProgress` from now on but what `finish` hands over. */
  stop(): void {
    this.settled = true
    this.watch.relay = undefined
  }

  private drain<A>(value: A): Effect.Effect<A> {
    const pending = this.pending
    if (pending.length === 0) return Effect.succeed(value)
    this.pending = []
    // A lone progress, the common case, without `Effect.forEach`'s set-up.
    if (pending.length === 1) return Effect.as(this.onProgress(pending[0]!), value)
    return Effect.as(Effect.forEach(pending, this.onProgress, { discard: true }), value)
  }

  /** The result is in: the progress not yet handed over goes to `onProgress` in the caller's fiber. */
  finish<A>(value: A): Effect.Effect<A> {
    this.stop()
    const running = this.deliverer
    if (running === undefined) return this.drain(value)
    return Effect.flatMap(Fiber.interrupt(running), () => {
      const exit = running.pollUnsafe()
      return exit !== undefined && exit._tag === "Failure" && !Cause.hasInterruptsOnly(exit.cause)
        ? Effect.failCause(exit.cause)
        : this.drain(value)
    })
  }
}
