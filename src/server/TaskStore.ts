/**
 * Where a server keeps its tasks (the tasks extension,
 * `io.modelcontextprotocol/tasks`): one record per task, changed only by
 * compare-and-set on its status, removed by the store when its TTL ends, and
 * a feed of each record's changes (what `notifications/tasks` and a waiting
 * task handler read). Every operation is an Effect that may fail with a
 * `TaskStoreError`, so a store across processes (Redis) fits the same shape.
 *
 * The live fibers that run tasks are not here: they belong to the server
 * process that started them; the store holds only what any process may read.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { TaskStatus } from "../TaskWire.ts"
import { isTerminal } from "../TaskWire.ts"

/**
 * One task as stored. Times are epoch milliseconds.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskRecord {
  readonly taskId: string
  /** Who may see and steer the task; `undefined`: anyone who holds the id. */
  readonly owner: string | undefined
  readonly status: TaskStatus
  readonly statusMessage?: string | undefined
  readonly createdAt: number
  readonly lastUpdatedAt: number
  /** From `createdAt`; `null` for unlimited. */
  readonly ttlMs: number | null
  readonly pollIntervalMs?: number | undefined
  /** The request's result, once `completed`. */
  readonly result?: Readonly<Record<string, unknown>> | undefined
  /** The JSON-RPC error, once `failed`. */
  readonly error?: { readonly code: number; readonly message: string; readonly data?: unknown } | undefined
  /** Requests to the client not answered yet, by key. */
  readonly inputRequests: Readonly<Record<string, { readonly method: string; readonly params?: unknown }>>
  /** Answers received and not yet taken by the handler, by key. */
  readonly inputResponses: Readonly<Record<string, unknown>>
  /** How many input keys the task has minted: keys are never reused in its life. */
  readonly inputCount: number
  /**
   * The instance running the task's handler, in a store shared by a fleet
   * (`TaskStoreShape.instance`); `undefined` in a store of one process.
   */
  readonly instance?: string | undefined
}

/**
 * A store operation that could not be done (the store is unreachable, a
 * record did not decode…). Not an unknown task: that is `None`.
 *
 * @since 0.1.0
 * @category errors
 */
export class TaskStoreError extends Data.TaggedError("TaskStoreError")<{
  readonly operation: string
  readonly reason: string
  readonly cause?: unknown
}> {}

/**
 * What a store shared by the instances of a fleet adds: the instance it
 * runs in, and that instance's liveness mark, which tells the other
 * instances that its tasks still run.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskStoreInstance {
  /** This instance's id: the `instance` of the tasks it runs. */
  readonly id: string
  /**
   * Holds this instance's liveness mark while the scope is open (the runner
   * holds it for each task it runs). A task whose instance's mark has lapsed
   * is failed by the first instance that reads it.
   */
  readonly hold: Effect.Effect<void, TaskStoreError, Scope.Scope>
}

/**
 * What a task store does.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskStoreShape {
  /**
   * Stores a new task. When it succeeds the task is durable: a `get` from
   * any process finds it (the server answers `CreateTaskResult` only then).
   * The store removes it `ttlMs` after `createdAt` (never, for `null`).
   */
  readonly create: (record: TaskRecord) => Effect.Effect<void, TaskStoreError>
  /** The task, or `undefined` when it is unknown or its TTL has passed. */
  readonly get: (taskId: string) => Effect.Effect<TaskRecord | undefined, TaskStoreError>
  /**
   * Compare-and-set: when the task's status is one of `expected`, replaces
   * the record with `next(current)` atomically and returns the new record;
   * otherwise changes nothing and returns `undefined` (also for an unknown
   * or expired task). `next` must keep `taskId`, `owner` and `createdAt`;
   * the store may call it more than once (a retry after a conflict).
   */
  readonly compareAndSet: (
    taskId: string,
    expected: ReadonlyArray<TaskStatus>,
    next: (current: TaskRecord) => TaskRecord
  ) => Effect.Effect<TaskRecord | undefined, TaskStoreError>
  /**
   * The task's record now, then after each change, in order; ends after a
   * terminal status or when the task is removed (at once for an unknown task).
   */
  readonly changes: (taskId: string) => Stream.Stream<TaskRecord, TaskStoreError>
  /** Forgets a task now (its TTL is the usual way). */
  readonly remove: (taskId: string) => Effect.Effect<void, TaskStoreError>
  /**
   * Every live task, when the store can enumerate them (`tasks/list` of the
   * 2025-11-25 tasks is served only then).
   */
  readonly list?: (() => Effect.Effect<ReadonlyArray<TaskRecord>, TaskStoreError>) | undefined
  /**
   * Present when the store is shared by several instances: the runner then
   * stamps its tasks with `instance.id`, holds the liveness mark while each
   * runs, and follows each one's record, so that a cancel made on another
   * instance interrupts the handler here.
   */
  readonly instance?: TaskStoreInstance | undefined
}

/**
 * The task store service. Without one, a server keeps its tasks in memory
 * (`makeMemory`).
 *
 * @since 0.1.0
 * @category services
 */
export class TaskStore extends Context.Service<TaskStore, TaskStoreShape>()("effect-mcp-transport/server/TaskStore") {}

interface Change {
  readonly taskId: string
  readonly record: TaskRecord | undefined
}

/**
 * A store in this process's memory: compare-and-set is a synchronous step,
 * the change feed is a PubSub; a record past its TTL reads as gone, and is
 * removed by the runner's sweeper (`remove`) at its deadline (closing the
 * scope forgets every task).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory: Effect.Effect<TaskStoreShape, never, Scope.Scope> = Effect.gen(function*() {
  const records = new Map<string, TaskRecord>()
  const pubsub = yield* Effect.acquireRelease(PubSub.unbounded<Change>(), PubSub.shutdown)
  yield* Effect.addFinalizer(() => Effect.sync(() => records.clear()))

  const expired = (record: TaskRecord, now: number) => record.ttlMs !== null && now >= record.createdAt + record.ttlMs

  const drop = (taskId: string) =>
    Effect.suspend(() => (records.delete(taskId) ? PubSub.publish(pubsub, { taskId, record: undefined }) : Effect.void))

  const read = (taskId: string, now: number): TaskRecord | undefined => {
    const record = records.get(taskId)
    if (record === undefined || !expired(record, now)) return record
    records.delete(taskId)
    return undefined
  }

  // Past its TTL a record reads as gone; the server's task runner removes it then (one sweeper for all tasks).
  const create = (record: TaskRecord) =>
    Effect.sync(() => {
      records.set(record.taskId, record)
    })

  const store: TaskStoreShape = {
    create,
    get: (taskId) => Effect.map(Clock.currentTimeMillis, (now) => read(taskId, now)),
    compareAndSet: (taskId, expected, next) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const current = read(taskId, now)
        if (current === undefined || !expected.includes(current.status)) return Effect.succeed(undefined)
        const updated = next(current)
        records.set(taskId, updated)
        return Effect.as(PubSub.publish(pubsub, { taskId, record: updated }), updated)
      }),
    changes: (taskId) => Stream.unwrap(memoryChanges(pubsub, read, taskId)),
    remove: drop,
    list: () =>
      Effect.map(Clock.currentTimeMillis, (now) =>
        Array.from(records.keys()).flatMap((taskId) => {
          const record = read(taskId, now)
          return record === undefined ? [] : [record]
        }))
  }
  return store
})

/**
 * The changes of one task in a memory store, from its record now. One generator function for every
 * follower (docs/design.md, "Per-request code and the old generation").
 */
const memoryChanges = Effect.fnUntraced(function*(
  pubsub: PubSub.PubSub<Change>,
  read: (taskId: string, now: number) => TaskRecord | undefined,
  taskId: string
): Effect.fn.Return<Stream.Stream<TaskRecord>, never, Scope.Scope> {
  // Subscribed before the current record is read, so no change falls between them.
  const subscription = yield* PubSub.subscribe(pubsub)
  const current = read(taskId, yield* Clock.currentTimeMillis)
  if (current === undefined) return Stream.empty
  const later = Stream.fromSubscription(subscription).pipe(
    Stream.filter((c) => c.taskId === taskId),
    Stream.takeWhile((c) => c.record !== undefined),
    Stream.map((c) => c.record!)
  )
  return Stream.concat(Stream.succeed(current), later).pipe(Stream.takeUntil((r) => isTerminal(r.status)))
})

/**
 * The in-memory store as a layer (its tasks live as long as the layer).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<TaskStore> = Layer.effect(TaskStore, makeMemory)
