/**
 * A transport's notifications seen synchronously, as each is routed, for
 * `McpClient`: progress reaches its call in the same stdout read as the
 * result that follows it, with no PubSub hop and no fiber per notification.
 * Transports built on ClientCore offer it under this key; `McpClient` falls
 * back to `subscribeNotifications` over any other transport.
 */
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as JsonRpc from "../../JsonRpc.ts"

/**
 * Registers `listener` for the rest of the scope. Each notification is passed
 * to the listeners in order of arrival, before it is published to the
 * subscribers of `notifications`; a listener must not block (a throw is
 * reported as a `ListenerError` diagnostic and the notification goes on).
 */
export type Listen = (listener: (notification: JsonRpc.JsonRpcNotification) => void) => Effect.Effect<void, never, Scope.Scope>

export const key: unique symbol = Symbol.for("effect-mcp-transport/client/NotificationListener")

/** The transport's `Listen`, when it has one. */
export const of = (transport: object): Listen | undefined => (transport as { readonly [key]?: Listen })[key]
