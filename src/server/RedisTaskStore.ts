/**
 * The task store in Redis, shared by every instance of a fleet: any
 * instance answers `tasks/get`, `tasks/update`, `tasks/cancel` and
 * `tasks/result` for a task another instance runs.
 *
 * - A task is one Redis Stream, `<prefix>task:{<taskId>}`: each entry is the
 *   whole record after a change (fields `s` status, `i` instance, `r` the
 *   record as JSON), the last entry is the record now, and its entry id is
 *   the record's version. The stream keeps the last `history` changes, so a
 *   follower that read a few changes late still sees each one in order.
 * - Compare-and-set reads the record, computes the next one, and appends it
 *   in a Lua script only if the stream's last entry is still the one read;
 *   a conflict is retried with the newer record.
 * - Every change is announced on the channel `<prefix>tasks:changed` (the
 *   task id), to which a store subscribes when its first follower starts;
 *   followers of the task on any instance then read what followed the last
 *   entry they saw. Pub/sub is at most once, so a follower also reads again
 *   every `recheckMs` and at the task's deadline.
 * - The key expires at the task's deadline (`createdAt + ttlMs`, Redis key
 *   expiry): no sweeper is needed.
 * - A task names the instance running it. With an `InstanceLease` in Redis
 *   in context (as `RedisFleet.layer` provides), the instance is the
 *   lease's, and its lease key `<prefix>instance:<id>` says it is alive;
 *   without one, while the store's instance runs tasks it holds a mark of
 *   its own, `<prefix>task-owner:<id>`, expiring after `leaseMs` and renewed
 *   every third of it. The first instance that reads a working task whose
 *   instance has neither turns it `failed` (compare-and-set: once).
 *
 * Every operation fails with `TaskStoreError` when Redis cannot be reached
 * or does not answer within `timeoutMs`: nothing waits on Redis for longer.
 *
 * Needs Redis 6.2 or later (exclusive ranges in `XRANGE`); not Redis Cluster
 * (the liveness check reads keys it is not given).
 */
import { randomBytes } from "node:crypto"
import type * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Latch from "effect/Latch"
import * as Layer from "effect/Layer"
import * as Redis from "effect/persistence/Redis"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as JsonRpc from "../JsonRpc.ts"
import { isTerminal, type TaskStatus } from "../TaskWire.ts"
import { InstanceLease } from "./InstanceLease.ts"
import { type TaskRecord, TaskStore, TaskStoreError, type TaskStoreShape } from "./TaskStore.ts"
import * as Wakers from "./internal/Wakers.ts"

/**
 * Naming, liveness and bounds of the Redis task store.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Put before every key and channel; one prefix per fleet. Default `"mcp:"`. */
  readonly prefix?: string | undefined
  /** This instance's id, stamped on the tasks it runs. Default: the `InstanceLease`'s, else 12 random base64url characters. */
  readonly instanceId?: string | undefined
  /** How long this instance's own liveness mark lasts unless renewed (without a lease), in milliseconds. Default 5000. */
  readonly leaseMs?: number | undefined
  /** Longest wait for one Redis round trip before an operation fails, in milliseconds. Default 2000. */
  readonly timeoutMs?: number | undefined
  /** How often a follower reads its task again without being told of a change, in milliseconds. Default `leaseMs / 2`. */
  readonly recheckMs?: number | undefined
  /** Changes kept per task for followers that read late. Default 16. */
  readonly history?: number | undefined
}

/**
 * What a task that was running on an instance that stopped fails with.
 *
 * @since 0.1.0
 * @category constants
 */
export const OWNER_GONE_MESSAGE = "The instance running this task stopped"

// What followed entry ARGV[1] ('' : the last entry alone), and whether the task's instance is alive
// (1 when the task is terminal or has no instance); false for an unknown or expired task.
const readScript = Redis.script(
  (key: string, after: string, prefix: string) => [key, after, prefix],
  {
    numberOfKeys: 1,
    lua: `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if last == nil then return false end
local entries
if ARGV[1] == '' then entries = {last} else entries = redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+') end
local f = last[2]
local status, inst = '', ''
for i = 1, #f, 2 do
  if f[i] == 's' then status = f[i + 1] elseif f[i] == 'i' then inst = f[i + 1] end
end
local alive = 1
if inst ~= '' and (status == 'working' or status == 'input_required') then
  alive = redis.call('EXISTS', ARGV[2] .. 'task-owner:' .. inst, ARGV[2] .. 'instance:' .. inst)
end
return {entries, alive}
`
  }
).withReturnType<readonly [ReadonlyArray<Entry>, number] | null>()

// A new task: false when the id is taken.
const createScript = Redis.script(
  (key: string, status: string, instance: string, json: string, deadline: string, history: number, channel: string, taskId: string) => [
    key,
    status,
    instance,
    json,
    deadline,
    history,
    channel,
    taskId
  ],
  {
    numberOfKeys: 1,
    lua: `
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[5], '*', 's', ARGV[1], 'i', ARGV[2], 'r', ARGV[3])
if ARGV[4] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[4]) end
redis.call('PUBLISH', ARGV[6], ARGV[7])
return id
`
  }
).withReturnType<string | null>()

// The next record, if the last entry is still ARGV[1]: its id; 0 on a conflict; false for a task gone.
const casScript = Redis.script(
  (key: string, expected: string, status: string, instance: string, json: string, history: number, channel: string, taskId: string) => [
    key,
    expected,
    status,
    instance,
    json,
    history,
    channel,
    taskId
  ],
  {
    numberOfKeys: 1,
    lua: `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if last == nil then return false end
if last[1] ~= ARGV[1] then return 0 end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[5], '*', 's', ARGV[2], 'i', ARGV[3], 'r', ARGV[4])
redis.call('PUBLISH', ARGV[6], ARGV[7])
return id
`
  }
).withReturnType<string | number | null>()

const removeScript = Redis.script(
  (key: string, channel: string, taskId: string) => [key, channel, taskId],
  {
    numberOfKeys: 1,
    lua: `
if redis.call('DEL', KEYS[1]) == 1 then redis.call('PUBLISH', ARGV[1], ARGV[2]) end
return 1
`
  }
).withReturnType<number>()

type Entry = readonly [string, ReadonlyArray<string>]

interface Versioned {
  readonly version: string
  readonly record: TaskRecord
}

/** A conflicting compare-and-set is retried with the newer record; this many conflicts in a row is an error. */
const MAX_CONFLICTS = 100

interface Read {
  readonly entries: ReadonlyArray<Versioned>
  readonly alive: boolean
}

/** The round trips of one store, which its per-operation loops (below `make`) take as their first argument. */
interface Ops {
  readonly read: (operation: string, taskId: string, after: string) => Effect.Effect<Read | undefined, TaskStoreError>
  /** Appends `next` if `version` is still the last: the new version, `"conflict"`, or `undefined` for a task gone. */
  readonly append: (
    operation: string,
    taskId: string,
    version: string,
    next: TaskRecord
  ) => Effect.Effect<string | "conflict" | undefined, TaskStoreError>
}

const fieldOf = (fields: ReadonlyArray<string>, name: string): string | undefined => {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1]
  return undefined
}

/**
 * The task store on the `Redis` service in context, with this instance's
 * liveness mark (see the module's documentation).
 *
 * @example
 * ```ts
 * import * as NodeRedis from "@effect/platform-node/NodeRedis"
 * import * as Effect from "effect/Effect"
 * import * as RedisTaskStore from "effect-mcp-transport/server/RedisTaskStore"
 *
 * const program = Effect.gen(function*() {
 *   const store = yield* RedisTaskStore.make({ prefix: "example:" })
 *   const task = yield* store.get("some-task-id")
 *   yield* Effect.log(task === undefined ? "unknown task" : task.status)
 * }).pipe(Effect.scoped, Effect.provide(NodeRedis.layer({ url: "redis://127.0.0.1:6379" })))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options?: Options): Effect.Effect<TaskStoreShape, never, Redis.Redis | Scope.Scope> =>
  Effect.gen(function*() {
    const redis = yield* Redis.Redis
    const scope = yield* Effect.scope
    const prefix = options?.prefix ?? "mcp:"
    // An instance lease in Redis names the instance and marks it alive: the store then keeps no mark of its own.
    const found = yield* Effect.serviceOption(InstanceLease)
    const lease = found._tag === "Some" && found.value.key !== undefined && options?.instanceId === undefined
      ? found.value
      : undefined
    const instanceId = options?.instanceId ?? lease?.id ?? randomBytes(9).toString("base64url")
    const leaseMs = Math.max(30, options?.leaseMs ?? 5000)
    const timeoutMs = Math.max(1, options?.timeoutMs ?? 2000)
    const recheckMs = Math.max(1, options?.recheckMs ?? Math.floor(leaseMs / 2))
    const history = Math.max(2, options?.history ?? 16)
    const channel = `${prefix}tasks:changed`
    const keyOf = (taskId: string) => `${prefix}task:{${taskId}}`
    const markKey = `${prefix}task-owner:${instanceId}`

    /** One Redis round trip, bounded in time, its failure typed. */
    const bounded = <A>(operation: string, effect: Effect.Effect<A, Redis.RedisError>): Effect.Effect<A, TaskStoreError> =>
      effect.pipe(
        Effect.mapError((cause) => new TaskStoreError({ operation, reason: "Redis could not be reached", cause })),
        Effect.timeoutOrElse({
          duration: timeoutMs,
          orElse: () => Effect.fail(new TaskStoreError({ operation, reason: `Redis did not answer within ${timeoutMs} ms` }))
        })
      )
    const readEval = redis.eval(readScript)
    const createEval = redis.eval(createScript)
    const casEval = redis.eval(casScript)
    const removeEval = redis.eval(removeScript)

    const decode = (operation: string, entry: Entry): Effect.Effect<Versioned, TaskStoreError> =>
      Effect.try({
        try: () => ({ version: entry[0], record: JSON.parse(fieldOf(entry[1], "r") ?? "") as TaskRecord }),
        catch: (cause) => new TaskStoreError({ operation, reason: "a stored task did not decode", cause })
      })

    const read = (operation: string, taskId: string, after: string): Effect.Effect<Read | undefined, TaskStoreError> =>
      Effect.flatMap(bounded(operation, readEval(keyOf(taskId), after, prefix)), (reply) => {
        if (reply === null || reply === undefined) return Effect.succeed(undefined)
        return Effect.map(
          Effect.forEach(reply[0], (entry) => decode(operation, entry)),
          (entries): Read => ({ entries, alive: Number(reply[1]) > 0 })
        )
      })

    const append = (operation: string, taskId: string, version: string, next: TaskRecord) =>
      Effect.map(
        bounded(
          operation,
          casEval(keyOf(taskId), version, next.status, next.instance ?? "", JSON.stringify(next), history, channel, taskId)
        ),
        (reply): string | "conflict" | undefined =>
          reply === null || reply === undefined ? undefined : typeof reply === "number" || reply === "0" ? "conflict" : reply
      )

    const ops: Ops = { read, append }

    // Followers of a task on this instance, woken when a change of it is announced.
    const followers = Wakers.make()

    // Subscribed once, when the first follower starts (a server that runs no tasks holds no subscriber
    // connection). A follower waits for the subscription at most `timeoutMs` (Redis may be down), so that a
    // change announced after its first read reaches it; any it misses, its next read finds.
    const ready = Deferred.makeUnsafe<void>()
    const announced = (queue: Queue.Dequeue<Redis.RedisMessage, Redis.RedisError>) =>
      Effect.forever(Effect.map(Queue.take(queue), (message) => followers.wake(message.message)))
    const subscription = Effect.scoped(Effect.flatMap(redis.subscribe(channel), (queue) =>
      Effect.andThen(
        Effect.sync(() => {
          Deferred.doneUnsafe(ready, Exit.void)
          // What was announced while no subscription was there is read again.
          followers.wakeAll()
        }),
        announced(queue)
      ))).pipe(
        Effect.catchCause((cause) => Effect.logWarning("Task change subscription ended; subscribing again", cause)),
        Effect.repeat(Schedule.spaced("1 second"))
      )
    const subscribed = yield* Effect.cached(Effect.asVoid(Effect.forkIn(subscription, scope)))
    const whenSubscribed = Effect.andThen(subscribed, Effect.timeoutOption(Deferred.await(ready), timeoutMs))

    const changes = (taskId: string): Stream.Stream<TaskRecord, TaskStoreError> =>
      Stream.callback<TaskRecord, TaskStoreError>((queue) =>
        follow(ops, followers, whenSubscribed, recheckMs, taskId, queue)
      )

    // The liveness mark: set while at least one hold is open, renewed every third of the lease, removed after
    // the last. Holds and releases take turns, so that a removal never lands after the setting of a newer hold.
    const turns = yield* Semaphore.make(1)
    let holders = 0
    let renewing: Fiber.Fiber<unknown> | undefined
    const setMark = bounded("hold", redis.send("SET", markKey, "1", "PX", String(leaseMs)))
    const renew = Effect.forever(
      Effect.andThen(
        Effect.sleep(Math.max(1, Math.floor(leaseMs / 3))),
        Effect.catch(setMark, (e) => Effect.logWarning("Could not renew the liveness mark of this instance's tasks", e))
      )
    )
    const release = turns.withPermit(Effect.suspend(() => {
      holders--
      if (holders > 0 || renewing === undefined) return Effect.void
      const fiber = renewing
      renewing = undefined
      return Effect.andThen(Fiber.interrupt(fiber), Effect.ignore(bounded("hold", redis.send("DEL", markKey))))
    }))
    const acquire = turns.withPermit(Effect.suspend(() => {
      if (renewing !== undefined) {
        holders++
        return Effect.void
      }
      return Effect.andThen(
        setMark,
        Effect.map(Effect.forkIn(renew, scope), (fiber) => {
          renewing = fiber
          holders++
        })
      )
    }))
    const hold: Effect.Effect<void, TaskStoreError, Scope.Scope> = lease === undefined
      ? Effect.acquireRelease(acquire, () => release)
      : Effect.void

    const store: TaskStoreShape = {
      create: (record) =>
        Effect.flatMap(
          bounded(
            "create",
            createEval(
              keyOf(record.taskId),
              record.status,
              record.instance ?? "",
              JSON.stringify(record),
              record.ttlMs === null ? "" : String(record.createdAt + record.ttlMs),
              history,
              channel,
              record.taskId
            )
          ),
          (id) =>
            id === null || id === undefined
              ? Effect.fail(new TaskStoreError({ operation: "create", reason: `task ${record.taskId} exists already` }))
              : Effect.void
        ),
      get: (taskId) => Effect.map(current(ops, "get", taskId), (found) => found?.record),
      compareAndSet: (taskId, expected, next) => compareAndSet(ops, taskId, expected, next),
      changes,
      remove: (taskId) => Effect.asVoid(bounded("remove", removeEval(keyOf(taskId), channel, taskId))),
      instance: { id: instanceId, hold }
    }
    return store
  })

// One generator function for each loop below, not one per call (docs/design.md, "Per-request code and the old generation").

/** The record now; a working task whose instance is gone is failed on the way (once, whoever reads it). */
const current = Effect.fnUntraced(function*(
  ops: Ops,
  operation: string,
  taskId: string
): Effect.fn.Return<Versioned | undefined, TaskStoreError> {
  for (let conflicts = 0; conflicts < MAX_CONFLICTS; conflicts++) {
    const found = yield* ops.read(operation, taskId, "")
    const last = found?.entries[found.entries.length - 1]
    if (found === undefined || last === undefined) return undefined
    if (found.alive) return last
    const failed = ownerGone(last.record, yield* Clock.currentTimeMillis)
    const version = yield* ops.append(operation, taskId, last.version, failed)
    if (version === undefined) return undefined
    if (version !== "conflict") return { version, record: failed }
  }
  return yield* new TaskStoreError({ operation, reason: "too many concurrent changes of one task" })
})

const compareAndSet = Effect.fnUntraced(function*(
  ops: Ops,
  taskId: string,
  expected: ReadonlyArray<TaskStatus>,
  next: (record: TaskRecord) => TaskRecord
): Effect.fn.Return<TaskRecord | undefined, TaskStoreError> {
  for (let conflicts = 0; conflicts < MAX_CONFLICTS; conflicts++) {
    const found = yield* current(ops, "compareAndSet", taskId)
    if (found === undefined || !expected.includes(found.record.status)) return undefined
    const updated = next(found.record)
    const version = yield* ops.append("compareAndSet", taskId, found.version, updated)
    if (version === undefined) return undefined
    if (version !== "conflict") return updated
  }
  return yield* new TaskStoreError({ operation: "compareAndSet", reason: "too many concurrent changes of one task" })
})

/** Offers each change of the task to `queue` as it is read, and ends it after a terminal one or once the task is gone. */
const follow = Effect.fnUntraced(function*(
  ops: Ops,
  followers: Wakers.Wakers,
  whenSubscribed: Effect.Effect<unknown>,
  recheckMs: number,
  taskId: string,
  queue: Queue.Queue<TaskRecord, TaskStoreError | Cause.Done>
): Effect.fn.Return<boolean, TaskStoreError, Scope.Scope> {
  const latch = Latch.makeUnsafe(false)
  yield* followers.register(taskId, () => latch.openUnsafe())
  yield* whenSubscribed
  let after = ""
  let latest: TaskRecord | undefined
  for (;;) {
    latch.closeUnsafe()
    const found = yield* ops.read("changes", taskId, after)
    if (found === undefined) return yield* Queue.end(queue)
    for (const { version, record } of found.entries) {
      after = version
      latest = record
      yield* Queue.offer(queue, record)
      if (isTerminal(record.status)) return yield* Queue.end(queue)
    }
    if (!found.alive) {
      // Failed here or by another reader: either way the next read shows it.
      yield* current(ops, "changes", taskId)
      continue
    }
    const now = yield* Clock.currentTimeMillis
    const untilDeadline = latest === undefined || latest.ttlMs === null
      ? recheckMs
      : Math.max(1, latest.createdAt + latest.ttlMs - now + 1)
    yield* Effect.raceFirst(latch.await, Effect.sleep(Math.min(recheckMs, untilDeadline)))
  }
})

/** The record of a working task whose instance stopped: failed, with an error that says so. */
const ownerGone = (record: TaskRecord, now: number): TaskRecord => ({
  ...record,
  status: "failed",
  statusMessage: OWNER_GONE_MESSAGE,
  error: { code: JsonRpc.ErrorCode.InternalError, message: OWNER_GONE_MESSAGE },
  inputRequests: {},
  lastUpdatedAt: now
})

/**
 * The Redis task store as the `TaskStore` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<TaskStore, never, Redis.Redis> => Layer.effect(TaskStore)(make(options))
