/**
 * The open `subscriptions/listen` requests of a server (stateless era): what
 * each one agreed to carry, and the fan-out of the change notifications the
 * handshake era broadcasts to its sessions. Each listen is its own record,
 * keyed by nothing but itself: no state is shared between requests.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as JsonRpc from "../../JsonRpc.ts"
import { MetaKey, withSubscriptionId } from "../../RequestMeta.ts"

/** Which notifications a listen carries (each opt-in). */
export interface Filter {
  readonly toolsListChanged?: boolean
  readonly promptsListChanged?: boolean
  readonly resourcesListChanged?: boolean
  readonly resourceSubscriptions?: ReadonlyArray<string>
  /** The tasks whose `notifications/tasks` the listen carries (tasks extension). */
  readonly taskIds?: ReadonlyArray<string>
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const declares = (capabilities: Readonly<Record<string, unknown>>, kind: string, flag: string): boolean => {
  const entry = capabilities[kind]
  return isObject(entry) && entry[flag] === true
}

/**
 * The part of a requested filter the server honours: a list-changed type
 * only when the server declares `listChanged` for it, resource URIs only
 * when it declares `resources.subscribe`. Malformed entries are dropped.
 */
export const agree = (requested: unknown, capabilities: Readonly<Record<string, unknown>>): Filter => {
  const asked = isObject(requested) ? requested : {}
  const out: { -readonly [K in keyof Filter]: Filter[K] } = {}
  if (asked.toolsListChanged === true && declares(capabilities, "tools", "listChanged")) out.toolsListChanged = true
  if (asked.promptsListChanged === true && declares(capabilities, "prompts", "listChanged")) {
    out.promptsListChanged = true
  }
  if (asked.resourcesListChanged === true && declares(capabilities, "resources", "listChanged")) {
    out.resourcesListChanged = true
  }
  if (Array.isArray(asked.resourceSubscriptions) && declares(capabilities, "resources", "subscribe")) {
    const uris = asked.resourceSubscriptions.filter((u): u is string => typeof u === "string")
    if (uris.length > 0) out.resourceSubscriptions = uris
  }
  return out
}

/** Whether a notification belongs on a listen with this filter. */
export const admits = (filter: Filter, method: string, params: unknown): boolean => {
  switch (method) {
    case "notifications/tools/list_changed":
      return filter.toolsListChanged === true
    case "notifications/prompts/list_changed":
      return filter.promptsListChanged === true
    case "notifications/resources/list_changed":
      return filter.resourcesListChanged === true
    case "notifications/resources/updated": {
      const uri = isObject(params) ? params.uri : undefined
      return typeof uri === "string" && filter.resourceSubscriptions?.includes(uri) === true
    }
    default:
      // Request-scoped and other notifications never travel on a listen.
      return false
  }
}

interface Listen {
  readonly id: JsonRpc.RequestId
  readonly filter: Filter
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void, unknown>
  /** Completed when the server ends the listen gracefully. */
  readonly ended: Deferred.Deferred<void>
}

export interface Subscriptions {
  /**
   * Holds one listen: acknowledges it (the first message carrying its id),
   * then carries what `publish` admits until the server ends it (then it
   * returns, and the caller answers the request) or the fiber is interrupted
   * (the client cancelled: nothing more is sent). `undefined` when the
   * server is shutting down and takes no new listens.
   */
  readonly hold: (
    id: JsonRpc.RequestId,
    filter: Filter,
    notify: (method: string, params?: unknown) => Effect.Effect<void, unknown>,
    /** Runs once the acknowledgement is out, until the listen ends (the task notifications). */
    alongside?: Effect.Effect<void>
  ) => Effect.Effect<void> | undefined
  /** Sends a change notification on every listen that asked for its kind. Best effort. */
  readonly publish: (method: string, params?: unknown) => Effect.Effect<void>
  /** Ends every listen gracefully, and refuses new ones from now on. */
  readonly endAll: Effect.Effect<void>
  readonly size: () => number
}

export const make = (): Subscriptions => {
  const open = new Set<Listen>()
  let closing = false

  const hold: Subscriptions["hold"] = (id, filter, notify, alongside) => {
    if (closing) return undefined
    return Effect.suspend(() => {
      const listen: Listen = { id, filter, notify, ended: Deferred.makeUnsafe() }
      return notify("notifications/subscriptions/acknowledged", {
        notifications: filter,
        _meta: { [MetaKey.subscriptionId]: id }
      }).pipe(
        Effect.ignore,
        // Registered after the acknowledgement was handed to the transport, so nothing overtakes it.
        Effect.andThen(Effect.sync(() => void open.add(listen))),
        Effect.andThen(
          alongside === undefined
            ? Deferred.await(listen.ended)
            : Effect.raceFirst(Deferred.await(listen.ended), Effect.andThen(alongside, Effect.never))
        ),
        Effect.ensuring(Effect.sync(() => void open.delete(listen)))
      )
    })
  }

  const publish: Subscriptions["publish"] = (method, params) =>
    Effect.suspend(() => {
      if (open.size === 0) return Effect.void
      const base = isObject(params) ? params : {}
      return Effect.forEach(
        Array.from(open).filter((l) => admits(l.filter, method, params)),
        (l) => Effect.ignore(l.notify(method, { ...base, _meta: withSubscriptionId(base._meta, l.id) })),
        { discard: true }
      )
    })

  const endAll = Effect.suspend(() => {
    closing = true
    return Effect.forEach(Array.from(open), (l) => Deferred.succeed(l.ended, undefined), { discard: true })
  })

  return { hold, publish, endAll, size: () => open.size }
}
