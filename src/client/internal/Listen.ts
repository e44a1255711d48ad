/**
 * The stateless era's server-initiated channel: one `subscriptions/listen`
 * request held open, its notifications told apart by the subscription id
 * (the listen request's own JSON-RPC id), nothing taken before the server's
 * acknowledgement, and a new listen after the stream is lost or the server
 * ends it. The notifications it lets through feed the same typed streams
 * the handshake era's notifications do.
 */
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as JsonRpc from "../../JsonRpc.ts"
import { RequestTimeout } from "../../McpError.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import type { ClientTransportShape } from "../ClientTransport.ts"

/**
 * Which notifications a listen asks for (each is opt-in: the server sends nothing else).
 *
 * @since 0.1.0
 * @category models
 */
export interface ListenFilter {
  readonly toolsListChanged?: boolean | undefined
  readonly promptsListChanged?: boolean | undefined
  readonly resourcesListChanged?: boolean | undefined
  /** `notifications/resources/updated` for these URIs. */
  readonly resourceSubscriptions?: ReadonlyArray<string> | undefined
}

/**
 * Where the client's listen stands. `Listening.acknowledged` is what the
 * server agreed to send, which may be less than was asked.
 *
 * @since 0.1.0
 * @category models
 */
export type ListenState = Data.TaggedEnum<{
  /** No listen: the client does not want one, or nothing is asked for. */
  Off: {}
  Opening: { readonly filter: ListenFilter }
  Listening: { readonly id: JsonRpc.RequestId; readonly filter: ListenFilter; readonly acknowledged: ListenFilter }
  /** Lost (or never acknowledged); the next attempt comes after `delayMs`. */
  Retrying: { readonly attempt: number; readonly delayMs: number; readonly error: unknown }
}>

/**
 * Constructors and matchers (`$is`, `$match`) for `ListenState`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const ListenState = Data.taggedEnum<ListenState>()

const isEmpty = (f: ListenFilter): boolean =>
  f.toolsListChanged !== true && f.promptsListChanged !== true && f.resourcesListChanged !== true &&
  (f.resourceSubscriptions === undefined || f.resourceSubscriptions.length === 0)

const subscriptionIdOf = (n: JsonRpc.JsonRpcNotification): unknown => {
  const params = n.params as { _meta?: Record<string, unknown> } | undefined
  return params?._meta?.[RequestMeta.MetaKey.subscriptionId]
}

const backoffMs = (attempt: number): number => Math.min(30_000, 500 * 2 ** Math.min(attempt, 6))

export interface Listener {
  readonly state: SubscriptionRef.SubscriptionRef<ListenState>
  /** Whether a raw notification goes on to the typed streams (false: another or a stale subscription's, or the acknowledgement). */
  readonly admit: (notification: JsonRpc.JsonRpcNotification) => boolean
  /** Listens with this filter from now on (an empty filter stops listening); waits for the acknowledgement or the first failure. */
  readonly setFilter: (filter: ListenFilter) => Effect.Effect<void>
  readonly filter: () => ListenFilter
}

export const make = Effect.fnUntraced(function*(options: {
  readonly transport: ClientTransportShape
  readonly meta: () => Readonly<Record<string, unknown>>
  /** How long the server has to acknowledge a listen. */
  readonly ackTimeout: Duration.Duration
}): Effect.fn.Return<Listener, never, Scope.Scope> {
  const state = yield* SubscriptionRef.make<ListenState>(ListenState.Off())
  let filter: ListenFilter = {}
  let currentId: JsonRpc.RequestId | undefined
  let acknowledged = false
  let ack: Deferred.Deferred<ListenFilter> | undefined
  let running: Fiber.Fiber<void> | undefined
  const scope = yield* Effect.scope

  /** One listen, held until it ends; the acknowledgement is awaited within `ackTimeout`. */
  const once = (settled: Deferred.Deferred<void>) =>
    Effect.gen(function*() {
      acknowledged = false
      currentId = undefined
      const gotAck = yield* Deferred.make<ListenFilter>()
      ack = gotAck
      yield* SubscriptionRef.set(state, ListenState.Opening({ filter }))
      const request = yield* options.transport.request(
        "subscriptions/listen",
        { notifications: filter, _meta: options.meta() },
        { timeout: Duration.infinity, onId: (id) => void (currentId = id) }
      ).pipe(Effect.forkChild({ startImmediately: true }))
      const agreed = yield* Deferred.await(gotAck).pipe(
        Effect.raceFirst(Effect.flatMap(Fiber.join(request), () => Effect.fail("ended" as const))),
        Effect.timeoutOrElse({
          duration: options.ackTimeout,
          orElse: () =>
            Effect.fail(
              new RequestTimeout({
                method: "subscriptions/listen",
                id: currentId ?? "",
                timeoutMs: Duration.toMillis(options.ackTimeout),
                phase: "No acknowledgement"
              })
            )
        }),
        Effect.onError(() => Fiber.interrupt(request))
      )
      yield* SubscriptionRef.set(state, ListenState.Listening({ id: currentId ?? "", filter, acknowledged: agreed }))
      yield* Deferred.succeed(settled, undefined)
      // Held until the server ends it (a `complete` result) or the stream is lost.
      yield* Fiber.join(request)
    })

  const loop = (settled: Deferred.Deferred<void>): Effect.Effect<void> =>
    Effect.gen(function*() {
      let attempt = 0
      while (true) {
        const exit = yield* Effect.exit(once(settled))
        currentId = undefined
        acknowledged = false
        // A listen the server ended gracefully is opened again at once; a lost one after a growing pause.
        const delayMs = exit._tag === "Success" ? 0 : backoffMs(attempt++)
        if (exit._tag === "Success") attempt = 0
        const error = exit._tag === "Failure" ? exit.cause : "ended by the server"
        yield* SubscriptionRef.set(state, ListenState.Retrying({ attempt, delayMs, error }))
        yield* Deferred.succeed(settled, undefined)
        if (delayMs > 0) yield* Effect.sleep(Duration.millis(delayMs))
      }
    })

  const setFilter = (next: ListenFilter): Effect.Effect<void> =>
    Effect.gen(function*() {
      filter = next
      if (running !== undefined) yield* Fiber.interrupt(running)
      running = undefined
      if (isEmpty(next)) {
        currentId = undefined
        yield* SubscriptionRef.set(state, ListenState.Off())
        return
      }
      const settled = yield* Deferred.make<void>()
      running = yield* loop(settled).pipe(Effect.forkIn(scope, { startImmediately: true }))
      yield* Deferred.await(settled)
    })

  const admit = (n: JsonRpc.JsonRpcNotification): boolean => {
    if (n.method === "notifications/subscriptions/acknowledged") {
      if (currentId !== undefined && subscriptionIdOf(n) === currentId && ack !== undefined) {
        acknowledged = true
        const params = n.params as { notifications?: ListenFilter } | undefined
        Deferred.doneUnsafe(ack, Effect.succeed(params?.notifications ?? {}))
      }
      return false
    }
    const id = subscriptionIdOf(n)
    if (id === undefined) return true
    return acknowledged && id === currentId
  }

  return { state, admit, setFilter, filter: () => filter }
})
