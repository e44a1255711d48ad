/**
 * The `Bus` on Redis pub/sub: a publish is one `PUBLISH` on
 * `<prefix>bus:<topic>`, and each subscription holds a connection of its
 * own (`Redis.subscribe`), which reconnects and subscribes again by itself
 * after Redis comes back. Delivery is at most once: what is published while
 * a subscriber is disconnected does not reach it.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redis from "effect/persistence/Redis"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import { Bus, type BusShape, BusUnavailable, contained } from "./Bus.ts"

/**
 * Where the bus's channels live.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Put before every channel; one prefix per fleet. Default `"mcp:"`. */
  readonly prefix?: string | undefined
}

const drain = (
  topic: string,
  queue: Queue.Dequeue<Redis.RedisMessage, Redis.RedisError>,
  onMessage: (message: string) => Effect.Effect<void>
): Effect.Effect<never, Redis.RedisError> =>
  Effect.forever(Effect.flatMap(Queue.take(queue), (m) => contained(topic, Effect.suspend(() => onMessage(m.message)))))

/**
 * The bus on the `Redis` service in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options?: Options): Effect.Effect<BusShape, never, Redis.Redis> =>
  Effect.gen(function*() {
    const redis = yield* Redis.Redis
    const prefix = options?.prefix ?? "mcp:"
    const channel = (topic: string) => `${prefix}bus:${topic}`
    return {
      fleet: true,
      publish: (topic, message) =>
        redis.send("PUBLISH", channel(topic), message).pipe(
          Effect.asVoid,
          Effect.mapError((cause) => new BusUnavailable({ topic, cause }))
        ),
      subscribe: (topic, onMessage) =>
        Effect.gen(function*() {
          const scope = yield* Effect.scope
          // Subscribed before returning, so a publish that follows is delivered.
          const first = yield* redis.subscribe(channel(topic))
          // A subscription that ended for good is made again, until the scope closes.
          const again = Effect.scoped(Effect.flatMap(redis.subscribe(channel(topic)), (queue) => drain(topic, queue, onMessage)))
          const logged = (cause: Cause.Cause<Redis.RedisError>) =>
            Effect.logWarning(`Bus subscription to ${topic} ended; subscribing again`, cause)
          yield* drain(topic, first, onMessage).pipe(
            Effect.catchCause(logged),
            Effect.andThen(again.pipe(Effect.catchCause(logged), Effect.repeat(Schedule.spaced("1 second")))),
            Effect.forkIn(scope)
          )
        })
    } satisfies BusShape
  })

/**
 * The Redis bus as the `Bus` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<Bus, never, Redis.Redis> => Layer.effect(Bus)(make(options))
