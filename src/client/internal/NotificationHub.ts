/**
 * The server's notifications inside `McpClient`: one sliding `PubSub` fed
 * from the transport from before the first request is sent, and the typed
 * streams and subscriptions the client hands out of it.
 *
 * The hub is made before the client knows its era or has its Schemas, so
 * three parts are set later by whoever learns them: the decoder (once the
 * Schemas load; until then notifications wait for them, in order), the
 * admission of a raw notification (the stateless era's listen stream), and
 * what a list change drops from the result cache.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as JsonRpc from "../../JsonRpc.ts"
import * as ListenedPubSub from "../../internal/ListenedPubSub.ts"
import type { ClientTransportShape } from "../ClientTransport.ts"
import type { ListChanged, McpClientShape } from "./ClientShape.ts"
import * as LazySchemas from "./LazySchemas.ts"
import * as NotificationListener from "./NotificationListener.ts"
import type * as ClientSchemas from "./McpClientSchemas.ts"
import { type Progress, ServerNotification } from "./ServerNotificationEnum.ts"

type Decode = typeof ClientSchemas.decodeNotification

/** The streams of `McpClientShape` that read the notifications. */
export type NotificationViews = Pick<
  McpClientShape,
  | "notifications"
  | "progress"
  | "logging"
  | "listChanged"
  | "resourceUpdated"
  | "cancelled"
  | "subscribeNotifications"
  | "subscribeProgress"
  | "subscribeLogging"
  | "subscribeListChanged"
  | "subscribeResourceUpdated"
  | "subscribeCancelled"
>

/** The hub, running, and the parts of it set once the client knows them. */
export interface NotificationHub {
  /** The Schemas have loaded: decode with them from now on (the first decoder set wins). */
  readonly decodeWith: (decode: Decode) => void
  /** Stateless era: which raw notifications are the client's (default: all). */
  readonly admitWith: (admit: (raw: JsonRpc.JsonRpcNotification) => boolean) => void
  /** Drops the cached pages of a list method (stateless era; default: nothing cached). */
  readonly dropCachedWith: (drop: (method: string) => void) => void
  readonly views: NotificationViews
}

/**
 * Subscribes to the transport's notifications now, so that nothing the
 * server says is missed, and publishes each, decoded, to the hub; progress
 * goes to its call first (`routeProgress`).
 */
export const make = Effect.fnUntraced(function*(
  transport: ClientTransportShape,
  routeProgress: (progress: Progress) => void,
  buffer: number
): Effect.fn.Return<NotificationHub, never, Scope.Scope> {
  const hub = yield* ListenedPubSub.sliding<ServerNotification>(buffer)
  yield* Effect.addFinalizer(() => hub.shutdown)

  let decodeNotification: Decode | undefined
  let admit: (raw: JsonRpc.JsonRpcNotification) => boolean = () => true
  let dropCached: (method: string) => void = () => {}
  const onNotification = (n: ServerNotification) => {
    if (n._tag === "Progress") routeProgress(n)
    // Before anyone hears of the change, so that a list asked for on hearing it is fresh.
    else if (n._tag === "ToolListChanged") dropCached("tools/list")
    else if (n._tag === "PromptListChanged") dropCached("prompts/list")
    else if (n._tag === "ResourceListChanged") {
      dropCached("resources/list")
      dropCached("resources/templates/list")
    }
    hub.publish(n)
  }

  const listen = NotificationListener.of(transport)
  if (listen !== undefined) {
    // Routed as the transport reads each one: a progress reaches its call
    // before the result that follows it, with no hop per notification.
    // Until the Schemas load, notifications wait for them in order.
    let waiting: Array<JsonRpc.JsonRpcNotification> | undefined
    const onRaw = (raw: JsonRpc.JsonRpcNotification) => {
      if (!admit(raw)) return
      const decode = decodeNotification
      if (decode !== undefined) return onNotification(decode(raw))
      if (waiting === undefined) {
        waiting = []
        Effect.runFork(Effect.map(LazySchemas.load(), (schemas) => decodeWith(schemas.decodeNotification)))
      }
      waiting.push(raw)
    }
    const decodeWith = (decode: Decode) => {
      if (decodeNotification !== undefined) return
      decodeNotification = decode
      const backlog = waiting ?? []
      waiting = undefined
      for (const raw of backlog) onNotification(decode(raw))
    }
    yield* listen(onRaw)
    return {
      decodeWith,
      admitWith: (f) => void (admit = f),
      dropCachedWith: (f) => void (dropCached = f),
      views: viewsOf(hub)
    }
  }

  const incoming = yield* transport.subscribeNotifications
  yield* incoming.pipe(
    Stream.runForEach((raw) => {
      if (!admit(raw)) return Effect.void
      const decode = decodeNotification
      if (decode !== undefined) return Effect.sync(() => onNotification(decode(raw)))
      return Effect.map(LazySchemas.load(), (schemas) => {
        decodeNotification = schemas.decodeNotification
        onNotification(schemas.decodeNotification(raw))
      })
    }),
    Effect.forkScoped({ startImmediately: true })
  )

  return {
    decodeWith: (decode) => void (decodeNotification ??= decode),
    admitWith: (f) => void (admit = f),
    dropCachedWith: (f) => void (dropCached = f),
    views: viewsOf(hub)
  }
})

const isListChanged = (n: ServerNotification): n is ListChanged =>
  n._tag === "ToolListChanged" || n._tag === "ResourceListChanged" || n._tag === "PromptListChanged"

const viewsOf = (hub: ListenedPubSub.ListenedPubSub<ServerNotification>): NotificationViews => {
  const notifications = hub.stream
  const subscribeNotifications = hub.subscribe
  const isProgress = ServerNotification.$is("Progress")
  const isLogging = ServerNotification.$is("LoggingMessage")
  const isResourceUpdated = ServerNotification.$is("ResourceUpdated")
  const isCancelled = ServerNotification.$is("Cancelled")
  return {
    notifications,
    progress: Stream.filter(notifications, isProgress),
    logging: Stream.filter(notifications, isLogging),
    listChanged: Stream.filter(notifications, isListChanged),
    resourceUpdated: Stream.filter(notifications, isResourceUpdated),
    cancelled: Stream.filter(notifications, isCancelled),
    subscribeNotifications,
    subscribeProgress: Effect.map(subscribeNotifications, Stream.filter(isProgress)),
    subscribeLogging: Effect.map(subscribeNotifications, Stream.filter(isLogging)),
    subscribeListChanged: Effect.map(subscribeNotifications, Stream.filter(isListChanged)),
    subscribeResourceUpdated: Effect.map(subscribeNotifications, Stream.filter(isResourceUpdated)),
    subscribeCancelled: Effect.map(subscribeNotifications, Stream.filter(isCancelled))
  }
}
