/**
 * The live side of the tasks extension: the fibers that run task handlers,
 * owned by the server (a `FiberMap` in the handle's scope), not by the
 * request that started them. A request's end does not stop its task;
 * `tasks/cancel` and the TTL do. Every status change goes through the
 * store's compare-and-set, so a task reaches exactly one terminal status
 * whatever races (completion, failure, cancellation, expiry).
 *
 * Inside a task the handler's context is the request's, re-pointed: progress
 * becomes the task's `statusMessage`, and an ask of the client (elicitation,
 * sampling, roots) becomes an entry of the task's `inputRequests`, answered
 * by `tasks/update`. The task's fiber starts from the request's services
 * less what belongs to the request alone (`detachedContext`), so that a live task
 * keeps no HTTP request, response, request scope or span alive.
 *
 * What the server says of a task on the wire (its shapes, a failed task's
 * error, the extension in the capabilities) is TaskAnswers'.
 */
import { randomBytes } from "node:crypto"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberMap from "effect/FiberMap"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as ScopeModule from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"
import * as JsonRpc from "../../JsonRpc.ts"
import { RpcError } from "../../McpError.ts"
import * as TaskWire from "../../TaskWire.ts"
import type { RequestContext } from "../RequestContext.ts"
import { makeMemory, type TaskRecord, TaskStore, type TaskStoreShape } from "../TaskStore.ts"
import type { Catalogue } from "./Catalogue.ts"
import { InputKey } from "./Rounds.ts"
import { created, errorOf, missingExtension } from "./TaskAnswers.ts"
import { isRecord } from "../../internal/Records.ts"

export { created, detailed, missingExtension, withExtension, withoutExecution } from "./TaskAnswers.ts"

type Json = Record<string, unknown>

/**
 * Whether a tool may run as a task (the words of the 2025-11-25 schema's
 * `execution.taskSupport`).
 */
export type TaskSupport = "forbidden" | "optional" | "required"

/** What an ask of the client goes through: `Rounds` in a multi-round request, a task's inputs here. */
export interface Asker {
  ask<A>(method: string, params: unknown, decode: (raw: unknown) => Effect.Effect<A, { readonly message: string }>): Effect.Effect<A>
}

/** A request context that can make its task twin (`LiveRequestContext.forTask`). */
interface TaskableContext extends RequestContext {
  readonly forTask: (asker: Asker, status: (message: string) => Effect.Effect<void>) => RequestContext
}

const NON_TERMINAL: ReadonlyArray<TaskWire.TaskStatus> = ["working", "input_required"]

/** 144 bits from the system's CSPRNG, URL-safe: a task id doubles as a bearer token. */
export const newTaskId = (): string => randomBytes(18).toString("base64url")

/**
 * Who may see a task: the authenticated principal; else, in the handshake
 * era, the session; else nobody in particular (anyone holding the id).
 */
export const ownerKey = (principal: string | undefined, sessionId: string | undefined): string | undefined =>
  principal !== undefined ? `principal:${principal}` : sessionId !== undefined ? `session:${sessionId}` : undefined

export interface RunnerOptions {
  readonly ttlMs: number | null
  readonly pollIntervalMs: number
}

/** The tasks of one server handle. */
export interface Runner {
  readonly store: TaskStoreShape
  /** Creates the task (durably), forks `body` with the task's context, and answers its `CreateTaskResult`. */
  readonly start: <R>(
    owner: string | undefined,
    body: (ctx: RequestContext) => Effect.Effect<Json, unknown, R>,
    ctx: RequestContext,
    /** A TTL the client asked for: granted up to the server's. */
    requestedTtlMs?: number | undefined
  ) => Effect.Effect<Json, never, R>
  /** Runs `effect` in the runner's scope, past the request that started it (a task's status feed). */
  readonly detach: (effect: Effect.Effect<void>) => Effect.Effect<void>
  /** Marks the task cancelled (unless it is terminal already) and interrupts its handler. */
  readonly cancel: (taskId: string) => Effect.Effect<void>
  /** How many handlers run now. */
  readonly running: Effect.Effect<number>
}

/**
 * The runner of the handle being served, provided around every request;
 * `undefined` when the server runs no tasks.
 */
export const CurrentRunner = Context.Reference<Runner | undefined>("effect-mcp-transport/server/TaskRunner", {
  defaultValue: () => undefined
})

/**
 * The services of the request that belong to it alone: its HTTP request and
 * response, its scope (its finalizers), its span's bookkeeping.
 */
const requestScoped: ReadonlyArray<string> = [
  "effect/http/HttpServerRequest",
  "effect/http/ParsedSearchParams",
  "effect/http/HttpRouter/RouteContext",
  "effect-mcp-transport/ServerSpans/CurrentServed"
]

/**
 * The context a task's fiber starts from: the request's services (the
 * server's, the handler's requirements) without what belongs to the request
 * alone; the runner's scope for the request's; the request's span only by
 * its ids, so that the task's spans stay in its trace without keeping the
 * span (and what it references) alive.
 */
export const detachedContext = (context: Context.Context<never>, scope: Scope.Scope): Context.Context<never> => {
  const map = new Map(context.mapUnsafe)
  for (const key of requestScoped) map.delete(key)
  map.set(ScopeModule.Scope.key, scope)
  const parent = map.get(Tracer.ParentSpanKey) as Tracer.AnySpan | undefined
  if (parent !== undefined && parent._tag === "Span") {
    map.set(Tracer.ParentSpanKey, Tracer.externalSpan({ traceId: parent.traceId, spanId: parent.spanId, sampled: parent.sampled }))
  }
  return Context.makeUnsafe(map)
}

export const make = (store: TaskStoreShape, options: RunnerOptions): Effect.Effect<Runner, never, Scope.Scope> =>
  Effect.gen(function*() {
    const fibers = yield* FiberMap.make<string>()
    const scope = yield* Effect.scope
    const orDie = <A, E>(effect: Effect.Effect<A, E>) => Effect.orDie(effect)

    const transition = (taskId: string, next: (r: TaskRecord, now: number) => TaskRecord) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        orDie(store.compareAndSet(taskId, NON_TERMINAL, (r) => ({ ...next(r, now), lastUpdatedAt: now }))))

    const settle = (taskId: string, exit: Exit.Exit<Json, unknown>): Effect.Effect<void> => {
      if (exit._tag === "Success") {
        return Effect.asVoid(transition(taskId, (r) => ({ ...r, status: "completed", result: exit.value, inputRequests: {} })))
      }
      // Interrupted: by tasks/cancel or the TTL, which set the status themselves (or let it expire).
      if (Cause.hasInterruptsOnly(exit.cause)) return Effect.void
      const error = errorOf(exit.cause)
      return Effect.asVoid(transition(taskId, (r) => ({
        ...r,
        status: "failed",
        statusMessage: error.message,
        error,
        inputRequests: {}
      })))
    }

    const runnerScope = scope

    // In a store shared by a fleet, the task's record may end on another instance (a cancel made there, the
    // task failed as its instance's mark lapsed): the handler here stops when it does. A store that cannot be
    // read for a while stops nothing.
    const followed = (taskId: string) => <A, E, R>(handler: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      store.instance === undefined ? handler : Effect.raceFirst(
        handler,
        store.changes(taskId).pipe(
          Stream.runDrain,
          Effect.retry(Schedule.spaced("1 second")),
          // Retried for as long as it takes: never an error.
          Effect.orDie,
          Effect.andThen(Effect.interrupt)
        )
      )

    // Apart from `start`, so that the task's closures capture the task's context, never the request's.
    const launch = <R>(
      taskId: string,
      body: (ctx: RequestContext) => Effect.Effect<Json, unknown, R>,
      taskCtx: RequestContext,
      ttlMs: number | null,
      held: ScopeModule.Closeable | undefined
    ): Effect.Effect<void, never, R> => {
      const settled = Effect.suspend(() => body(taskCtx)).pipe(
        followed(taskId),
        Effect.exit,
        Effect.flatMap((exit) => settle(taskId, exit))
      )
      const run = held === undefined ? settled : Effect.ensuring(settled, ScopeModule.close(held, Exit.void))
      // The fiber starts from the detached context: it keeps nothing of the request that started it.
      return Effect.andThen(
        Effect.updateContext(FiberMap.run(fibers, taskId, run), (context: Context.Context<any>) => detachedContext(context, runnerScope) as Context.Context<any>),
        expireLater(taskId, ttlMs)
      ) as Effect.Effect<void, never, R>
    }

    // The TTL bounds the handler too: when it passes, the handler is interrupted and the store forgets the task.
    // One fiber for all the tasks, not one per task: deadlines are kept in order, and a deadline earlier
    // than every other (a shorter TTL a client asked for) wakes the sweeper.
    const deadlines: Array<{ readonly taskId: string; readonly at: number }> = []
    let woken = Deferred.makeUnsafe<void>()
    const expireDue = (now: number): Effect.Effect<void> => {
      const due: Array<string> = []
      while (deadlines.length > 0 && deadlines[0]!.at <= now) due.push(deadlines.shift()!.taskId)
      // The store is told too: a store in memory removes nothing by itself (one in Redis has let the key expire).
      return Effect.forEach(due, (taskId) => Effect.andThen(FiberMap.remove(fibers, taskId), Effect.ignore(store.remove(taskId))), {
        discard: true
      })
    }
    const sweepOnce: Effect.Effect<void> = Effect.suspend(() => {
      const signal = woken
      const next = deadlines[0]
      if (next === undefined) return Deferred.await(signal)
      return Effect.flatMap(Clock.currentTimeMillis, (now) =>
        now >= next.at ? expireDue(now) : Effect.raceFirst(Effect.sleep(next.at - now), Deferred.await(signal)))
    })
    yield* Effect.forkIn(Effect.forever(sweepOnce), scope)
    const expireLater = (taskId: string, ttlMs: number | null): Effect.Effect<void> =>
      ttlMs === null ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const at = now + ttlMs
        let i = deadlines.length
        while (i > 0 && deadlines[i - 1]!.at > at) i--
        deadlines.splice(i, 0, { taskId, at })
        if (i > 0) return Effect.void
        const signal = woken
        woken = Deferred.makeUnsafe<void>()
        return Deferred.succeed(signal, undefined).pipe(Effect.asVoid)
      })

    const starts: Starts = { store, options, transition, launch }
    const start: Runner["start"] = (owner, body, ctx, requestedTtlMs) => startTask(starts, owner, body, ctx, requestedTtlMs)

    const cancel = (taskId: string) =>
      Effect.andThen(
        transition(taskId, (r) => ({ ...r, status: "cancelled", statusMessage: "Cancelled by the client", inputRequests: {} })),
        FiberMap.remove(fibers, taskId)
      )

    const detach = (effect: Effect.Effect<void>) => Effect.asVoid(Effect.forkIn(effect, scope))

    return { store, start, detach, cancel, running: FiberMap.size(fibers) }
  })

/** Changes a task's record, unless it is terminal: the new record, or `undefined`. */
type Transition = (taskId: string, next: (r: TaskRecord, now: number) => TaskRecord) => Effect.Effect<TaskRecord | undefined>

/** What a task's asks and status messages change: the runner's store, through its `transition`. */
interface Records {
  readonly store: TaskStoreShape
  readonly transition: Transition
}

/** What starting a task takes of its runner, which `startTask` takes as its first argument. */
interface Starts extends Records {
  readonly options: RunnerOptions
  /** Forks the task's handler and sets its deadline. */
  readonly launch: <R>(
    taskId: string,
    body: (ctx: RequestContext) => Effect.Effect<Json, unknown, R>,
    taskCtx: RequestContext,
    ttlMs: number | null,
    held: ScopeModule.Closeable | undefined
  ) => Effect.Effect<void, never, R>
}

// One generator function for every task, and one for every ask (docs/design.md, "Per-request code and the old generation").

/** Stores a new task (holding the instance's liveness mark first, in a fleet), launches it and answers its `CreateTaskResult`. */
const startTask = Effect.fnUntraced(function*<R>(
  starts: Starts,
  owner: string | undefined,
  body: (ctx: RequestContext) => Effect.Effect<Json, unknown, R>,
  ctx: RequestContext,
  requestedTtlMs: number | undefined
): Effect.fn.Return<Json, never, R> {
  const { options, store } = starts
  const now = yield* Clock.currentTimeMillis
  const ttlMs = requestedTtlMs === undefined || requestedTtlMs < 1
    ? options.ttlMs
    : options.ttlMs === null
    ? requestedTtlMs
    : Math.min(requestedTtlMs, options.ttlMs)
  const instance = store.instance
  const record: TaskRecord = {
    taskId: newTaskId(),
    owner,
    status: "working",
    createdAt: now,
    lastUpdatedAt: now,
    ttlMs,
    pollIntervalMs: options.pollIntervalMs,
    inputRequests: {},
    inputResponses: {},
    inputCount: 0,
    ...(instance === undefined ? {} : { instance: instance.id })
  }
  // This instance's liveness mark is held from before the record exists until the handler has settled.
  const held = instance === undefined ? undefined : yield* ScopeModule.make()
  const stored = held === undefined
    ? store.create(record)
    : Effect.andThen(ScopeModule.provide(held)(instance!.hold), store.create(record)).pipe(
      Effect.onError(() => ScopeModule.close(held, Exit.void))
    )
  yield* Effect.orDie(stored)
  yield* starts.launch(
    record.taskId,
    body,
    (ctx as TaskableContext).forTask(asker(starts, record.taskId), status(starts, record.taskId)),
    ttlMs,
    held
  )
  return created(record)
})

/** Asks of the client made inside the task become its `inputRequests`; each key names one ask for the task's whole life. */
const asker = (records: Records, taskId: string): Asker => {
  const used = new Set<string>()
  return {
    ask: <A>(method: string, params: unknown, decode: (raw: unknown) => Effect.Effect<A, { readonly message: string }>) =>
      Effect.flatMap(InputKey, (named: string | undefined) => askInput(records, taskId, used, named, method, params, decode))
  }
}

/** Sets the task `input_required` with the ask, waits for its answer (`tasks/update`), takes it and decodes it. */
const askInput = Effect.fnUntraced(function*<A>(
  records: Records,
  taskId: string,
  used: Set<string>,
  named: string | undefined,
  method: string,
  params: unknown,
  decode: (raw: unknown) => Effect.Effect<A, { readonly message: string }>
): Effect.fn.Return<A> {
  const { store } = records
  let key = ""
  const asked = yield* records.transition(taskId, (r) => {
    // A key names one request for the task's whole life.
    key = named !== undefined && !used.has(named) ? named : `input-${r.inputCount + 1}`
    return {
      ...r,
      status: "input_required",
      inputRequests: { ...r.inputRequests, [key]: { method, params: params ?? {} } },
      inputCount: r.inputCount + 1
    }
  })
  // The task ended (cancelled, expired) while the handler ran: it stops here.
  if (asked === undefined) return yield* Effect.interrupt
  used.add(key)
  const answered = yield* store.changes(taskId).pipe(
    Stream.filter((r) => Object.hasOwn(r.inputResponses, key)),
    Stream.runHead,
    Effect.orDie
  )
  if (answered._tag === "None") return yield* Effect.interrupt
  const raw = answered.value.inputResponses[key]
  yield* Effect.orDie(store.compareAndSet(taskId, NON_TERMINAL, (r) => {
    const { [key]: _taken, ...rest } = r.inputResponses
    return { ...r, inputResponses: rest }
  }))
  return yield* Effect.catch(decode(raw), (e) =>
    Effect.die(
      new RpcError({
        code: JsonRpc.ErrorCode.InvalidParams,
        rpcMessage: `Invalid inputResponses: the answer to "${key}" is not a ${method} result`,
        data: { key, reason: e.message }
      })
    ))
})

/** The task's progress, as its `statusMessage`. */
const status = (records: Records, taskId: string) => (message: string) =>
  Effect.asVoid(records.transition(taskId, (r) => ({ ...r, statusMessage: message })))

/** Whether the client of this request declared the extension (on the request, or at its `initialize`). */
export const declaresTasks = (ctx: RequestContext): boolean => TaskWire.declares(ctx.session.clientCapabilities)

/**
 * Runs a tool call whose tool declared `support`: as a task when the server
 * runs tasks and the client declared the extension on this request (or at
 * its `initialize`); inline when it did not and the tool allows that;
 * -32021 when the tool requires a task.
 */
export const offer = <R>(
  support: TaskSupport,
  body: (ctx: RequestContext) => Effect.Effect<Json, unknown, R>,
  ctx: RequestContext
): Effect.Effect<Json, unknown, R> =>
  Effect.flatMap(CurrentRunner, (runner: Runner | undefined) => {
    if (support === "forbidden") return body(ctx)
    if (runner === undefined || !TaskWire.declares(ctx.session.clientCapabilities)) {
      return support === "required" ? Effect.fail(missingExtension()) : body(ctx)
    }
    return runner.start(ownerKey(ctx.principal, ctx.session.era === "modern" ? undefined : ctx.sessionId), body, ctx)
  })

/** Marks the escalation of a running handler to a task, carrying the `CreateTaskResult`. */
class Escalated {
  readonly created: Json
  constructor(created: Json) {
    this.created = created
  }
}

/**
 * How the definition being called turns its handler's value (and declared
 * failures) into its JSON result (a tool: its `CallToolResult`), provided by
 * the definition around its handler so that an escalated rest of the
 * handler is finished the same way inside the task.
 */
export const CurrentFinish = Context.Reference<(effect: Effect.Effect<unknown, unknown, any>) => Effect.Effect<Json, unknown, any>>(
  "effect-mcp-transport/server/TaskFinish",
  { defaultValue: () => (effect) => effect as Effect.Effect<Json, unknown, any> }
)

/**
 * Turns the rest of a handler into a task (see `Task.escalate`): starts
 * `body` as a task and stops the handler, whose call then answers the
 * `CreateTaskResult`. Without a runner or a declaring client, runs `body`
 * inline.
 */
export const escalate = <A, E, R>(
  ctx: RequestContext,
  body: (ctx: RequestContext) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.flatMap(CurrentRunner, (runner: Runner | undefined) => {
    if (runner === undefined || !TaskWire.declares(ctx.session.clientCapabilities)) return body(ctx)
    const owner = ownerKey(ctx.principal, ctx.session.era === "modern" ? undefined : ctx.sessionId)
    return Effect.flatMap(CurrentFinish, (finish) =>
      Effect.flatMap(runner.start(owner, finishing(finish, body) as (c: RequestContext) => Effect.Effect<Json, unknown, R>, ctx), (result) =>
        Effect.die(new Escalated(result))))
  })

// Outside `escalate`, whose scope holds the request's context: the task keeps this closure for its whole life.
const finishing = <A, E, R>(
  finish: (effect: Effect.Effect<unknown, unknown, any>) => Effect.Effect<Json, unknown, any>,
  body: (ctx: RequestContext) => Effect.Effect<A, E, R>
) =>
(c: RequestContext) => finish(body(c))

/** Answers an escalated call with its `CreateTaskResult`. */
export const catchEscalation = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A | Json, E, R> =>
  Effect.catchDefect(effect, (defect) => (defect instanceof Escalated ? Effect.succeed(defect.created) : Effect.die(defect)))

export const DEFAULT_TTL_MS = 600_000
export const DEFAULT_POLL_INTERVAL_MS = 1_000

/** What a server's options say of tasks (`McpServerOptions.tasks`). */
export interface TasksOption {
  readonly ttl?: Duration.Input | null | undefined
  readonly pollInterval?: Duration.Input | undefined
}

/**
 * The runner of a handle, over the `TaskStore` in context or one in memory;
 * none when the server runs no tasks (no `tasks` option, no tool that may run as one).
 */
export const forServer = (
  server: { readonly options: { readonly tasks?: TasksOption | undefined } },
  catalogue: Catalogue<any>
): Effect.Effect<Runner | undefined, never, Scope.Scope> =>
  Effect.suspend(() => {
    const tasks = server.options.tasks
    const taskTools = Array.from(catalogue.tools.values()).some((tool) => {
      const execution = tool.definition.execution
      return isRecord(execution) && (execution.taskSupport === "optional" || execution.taskSupport === "required")
    })
    if (tasks === undefined && !taskTools) return Effect.succeed(undefined)
    const ttlMs = tasks?.ttl === null
      ? null
      : tasks?.ttl === undefined
      ? DEFAULT_TTL_MS
      : Math.round(Duration.toMillis(Duration.fromInputUnsafe(tasks.ttl)))
    const pollIntervalMs = tasks?.pollInterval === undefined
      ? DEFAULT_POLL_INTERVAL_MS
      : Math.max(1, Math.round(Duration.toMillis(Duration.fromInputUnsafe(tasks.pollInterval))))
    return Effect.flatMap(Effect.serviceOption(TaskStore), (found) =>
      Effect.flatMap(found._tag === "Some" ? Effect.succeed(found.value) : makeMemory, (store) =>
        make(store, { ttlMs, pollIntervalMs })))
  })
