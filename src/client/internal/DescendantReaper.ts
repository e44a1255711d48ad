/**
 * Ends, with the transport's scope, the processes a stdio server started that
 * left its process group, which the spawner's group kill misses (see
 * ProcessTree for how they are found and named).
 *
 * While the server runs, its tree is sampled every `sampleIntervalMs`. At
 * teardown the transport samples once more when it starts closing, again just
 * before the group's SIGTERM, and `terminate` sends SIGTERM to every recorded
 * descendant at the same moment. `finish` runs after the spawner has ended
 * the group: it waits for the descendants until `killAfterMs` after their
 * SIGTERM, sends SIGKILL to what is left and waits up to a second for it to
 * go. A server with no descendants costs one walk per sample and nothing at
 * teardown beyond the two walks.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as ProcessTree from "./ProcessTree.ts"

export interface DescendantReaper {
  /** Walks the server's tree now and records what it finds. */
  readonly sample: Effect.Effect<void>
  /**
   * Samples at once, then every `intervalMs` until nothing is left to watch
   * (the server reaped and no recorded descendant alive). The first walk also
   * readies its code, so that the walks at teardown, which come before
   * stdin's end reaches the server, run warm.
   */
  readonly sampleEvery: (intervalMs: number) => Effect.Effect<void>
  /**
   * Samples, then sends SIGTERM to the recorded descendants outside the
   * server's process group; called as the group gets its own.
   */
  readonly terminate: Effect.Effect<void>
  /** After the group is gone: waits, escalates to SIGKILL `killAfterMs` after SIGTERM, and waits for the rest. */
  readonly finish: Effect.Effect<void>
  /** The recorded descendants still running. */
  readonly alive: Effect.Effect<ReadonlyArray<number>>
}

const POLL_MS = 10
const AFTER_SIGKILL_MS = 1_000

export const make = (options: {
  readonly pid: number
  /** False once the spawner has seen the server exit (its pid may then be reused). */
  readonly rootRunning: Effect.Effect<boolean>
  readonly killAfterMs: number
  readonly listChildren?: ProcessTree.ChildLister | undefined
}): DescendantReaper => {
  const tracker = ProcessTree.makeTracker(options.pid, { listChildren: options.listChildren })
  let terminatedAt: number | undefined

  const sample = Effect.flatMap(options.rootRunning, (running) => Effect.sync(() => tracker.sample(running)))

  const sampleEvery = (intervalMs: number): Effect.Effect<void> =>
    !tracker.enabled ? Effect.void : Effect.gen(function*() {
      while (true) {
        const running = yield* options.rootRunning
        tracker.sample(running)
        if (!running && tracker.alive().length === 0) return
        yield* Effect.sleep(intervalMs)
      }
    })

  const terminate = Effect.gen(function*() {
    yield* sample
    tracker.signal("SIGTERM", options.pid)
    terminatedAt = yield* Clock.currentTimeMillis
  })

  /** Polls until no recorded descendant runs, or the deadline. */
  const awaitGone = (deadline: number) =>
    Effect.gen(function*() {
      while (tracker.alive().length > 0 && (yield* Clock.currentTimeMillis) < deadline) {
        yield* Effect.sleep(POLL_MS)
      }
    })

  const finish = Effect.gen(function*() {
    // The server is gone by now; what it started is found from the recorded descendants.
    tracker.sample(false)
    if (tracker.alive().length === 0) return
    if (terminatedAt === undefined) yield* terminate
    else tracker.signal("SIGTERM") // found since, or group members still running
    yield* awaitGone(terminatedAt! + options.killAfterMs)
    if (tracker.signal("SIGKILL") === 0) return
    yield* awaitGone((yield* Clock.currentTimeMillis) + AFTER_SIGKILL_MS)
  })

  return { sample, sampleEvery, terminate, finish, alive: Effect.sync(tracker.alive) }
}
