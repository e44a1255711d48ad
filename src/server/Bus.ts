/**
 * The channel between the instances of one server: what one instance
 * publishes on a topic reaches every subscriber of that topic on every
 * instance, once each, the publisher's own included. `McpServer` carries
 * `notifyAll` over it (so a change notification reaches every
 * `subscriptions/listen` and every session of the fleet) and the HTTP server
 * transport its broadcasts (`GET /mcp/events`).
 *
 * Without a `Bus` service everything stays inside the process, as it always
 * has; `layerMemory` is that behaviour as a service. A fleet provides a
 * shared one (`RedisFleet.layer`, loaded only by those who ask for it).
 *
 * Delivery is at most once: a message published while a subscriber's
 * connection is down is not delivered to it later.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"

/**
 * A publish the bus could not take (its backing store is unreachable).
 *
 * @since 0.1.0
 * @category errors
 */
export class BusUnavailable extends Data.TaggedError("BusUnavailable")<{
  readonly topic: string
  readonly cause: unknown
}> {
  override get message(): string {
    return `Bus unavailable (topic ${this.topic})`
  }
}

/**
 * What a bus does: publish a text on a topic, and subscribe to a topic for
 * as long as a scope lives.
 *
 * @since 0.1.0
 * @category models
 */
export interface BusShape {
  /**
   * Whether the bus reaches other processes. A server on such a bus serving
   * the stateless era needs `requestStateKeys` shared by the fleet: a state
   * one instance issued must be accepted by the others.
   */
  readonly fleet?: boolean | undefined
  /** Delivers `message` to every subscriber of `topic` on every instance, once each. */
  readonly publish: (topic: string, message: string) => Effect.Effect<void, BusUnavailable>
  /**
   * Runs `onMessage` for each message published on `topic` from now until
   * the scope closes, one at a time, in the order the bus delivers them. A
   * failure or defect of `onMessage` is its own: the subscription goes on.
   */
  readonly subscribe: (
    topic: string,
    onMessage: (message: string) => Effect.Effect<void>
  ) => Effect.Effect<void, never, Scope.Scope>
}

/**
 * The bus as a service: `McpServer.toHandler` and the HTTP server transport
 * use it when present.
 *
 * @since 0.1.0
 * @category services
 */
export class Bus extends Context.Service<Bus, BusShape>()("effect-mcp-transport/Bus") {}

/**
 * A subscriber's delivery on its own: its failure or defect is logged, and
 * the other subscribers and later messages are delivered all the same.
 *
 * @since 0.1.0
 * @category utils
 */
export const contained = (topic: string, delivery: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.catchCause(delivery, (cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause)
      : Effect.logWarning(`Bus: a subscriber of ${topic} failed`, cause))

/**
 * A bus inside one process: `publish` runs every subscriber of the topic
 * before it returns, as a direct call would.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as Bus from "effect-mcp-transport/server/Bus"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const bus = Bus.makeMemoryUnsafe()
 *   yield* bus.subscribe("news", (text) => Effect.log(`got ${text}`))
 *   yield* bus.publish("news", "hello") // logs "got hello"
 * }))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemoryUnsafe = (): BusShape => {
  const topics = new Map<string, Set<(message: string) => Effect.Effect<void>>>()
  return {
    publish: (topic, message) =>
      Effect.suspend(() => {
        const subscribers = topics.get(topic)
        if (subscribers === undefined) return Effect.void
        return Effect.forEach(Array.from(subscribers), (f) => contained(topic, Effect.suspend(() => f(message))), {
          discard: true
        })
      }),
    subscribe: (topic, onMessage) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          let subscribers = topics.get(topic)
          if (subscribers === undefined) topics.set(topic, subscribers = new Set())
          // A wrapper of its own, so the same function subscribed twice is delivered twice.
          const entry = (message: string) => onMessage(message)
          subscribers.add(entry)
          return { subscribers, entry }
        }),
        ({ entry, subscribers }) =>
          Effect.sync(() => {
            subscribers.delete(entry)
            if (subscribers.size === 0) topics.delete(topic)
          })
      ).pipe(Effect.asVoid)
  }
}

/**
 * `makeMemoryUnsafe` as an effect.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory: Effect.Effect<BusShape> = Effect.sync(makeMemoryUnsafe)

/**
 * The in-process bus as the `Bus` service: what serving without one does.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<Bus> = Layer.effect(Bus)(makeMemory)

/**
 * The topic `McpServer` carries `notifyAll` on.
 *
 * @since 0.1.0
 * @category constants
 */
export const NOTIFY_TOPIC = "notify"

/**
 * The topic the HTTP server transport carries its broadcasts on.
 *
 * @since 0.1.0
 * @category constants
 */
export const BROADCAST_TOPIC = "broadcast"
