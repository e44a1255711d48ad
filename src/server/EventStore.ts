/**
 * Replay storage for resumable SSE streams. Every event an HTTP server
 * transport writes on a resumable stream goes through `append`, which names
 * it; a client that lost its connection sends the last name it saw
 * (`Last-Event-ID`) and gets what followed on the same stream, never another
 * stream's events.
 *
 * The default is in memory and bounded (oldest events go first, whatever
 * their stream); a persistent store is any value of the same shape provided
 * as the `EventStore` service.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import * as Follow from "./internal/Follow.ts"
import * as Wakers from "./internal/Wakers.ts"

/**
 * One stored SSE event, as it is written again on replay.
 *
 * @since 0.1.0
 * @category models
 */
export interface StoredEvent {
  /** The SSE `id` field; encodes the stream it belongs to. */
  readonly id: string
  /** The SSE `event` field; `undefined` means the default `message`. */
  readonly event: string | undefined
  /** The SSE `data` field. An empty string marks a priming event, which replay skips. */
  readonly data: string
}

/**
 * What a resuming client gets: the stream its last event belonged to and the events that followed.
 *
 * @since 0.1.0
 * @category models
 */
export interface Replay {
  readonly streamId: string
  /** Events after the one named, oldest first, priming events left out. */
  readonly events: ReadonlyArray<StoredEvent>
}

/**
 * Where a follower starts: after an event id of the stream, at the start of
 * what the store holds of it, or at its end (only what is appended later).
 *
 * @since 0.1.0
 * @category models
 */
export type FollowFrom = { readonly after: string } | "start" | "end"

/**
 * Following a stream as it is written, from any process that shares the
 * store: what a store shared by several instances offers so that one writes
 * a stream and another delivers it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tail {
  /**
   * The events of `streamId` from `from` on, oldest first, each once, priming
   * events left out; then each event appended later, as it is appended. The
   * follower is in place once the effect completes (`"end"` is taken then);
   * the stream ends after the events appended before `finish`, else it
   * follows until the scope closes.
   */
  readonly follow: (streamId: string, from: FollowFrom) => Effect.Effect<Stream.Stream<StoredEvent>, never, Scope.Scope>
  /** Marks the stream finished: its followers end once they have had every event before the mark. Never replayed. */
  readonly finish: (streamId: string) => Effect.Effect<void>
}

/**
 * A replay store: what a persistent store implements to replace the in-memory one.
 *
 * Event ids must name their stream: `replayAfter` and `streamOf` are given nothing else.
 *
 * @since 0.1.0
 * @category models
 */
export interface EventStoreShape {
  /** Stores one event of a stream and returns its id, unique within the store. */
  readonly append: (streamId: string, data: string, event?: string | undefined) => Effect.Effect<string>
  /**
   * What followed `lastEventId` on its stream. `None` when the id does not
   * name a stream this store knows (never issued, malformed, or removed).
   */
  readonly replayAfter: (lastEventId: string) => Effect.Effect<Option.Option<Replay>>
  /** The stream an event id belongs to, without reading events. */
  readonly streamOf: (eventId: string) => Effect.Effect<Option.Option<string>>
  /** Forgets a stream and its events (the session that owned it ended). */
  readonly removeStream: (streamId: string) => Effect.Effect<void>
  /** Events held right now (for tests and diagnostics). */
  readonly size: Effect.Effect<number>
  /**
   * Present when the store is shared by the instances of a fleet: a
   * session's standalone stream is then one stream in the store, written by
   * any instance and delivered by the one holding the client's connection,
   * and a stream resumes on an instance that did not write it.
   */
  readonly tail?: Tail | undefined
}

/**
 * The replay store as a service; the HTTP server transport uses it when present (unless its
 * `eventStore` option names one), else a store in memory.
 *
 * @example
 * ```ts
 * import * as Layer from "effect/Layer"
 * import * as EventStore from "effect-mcp-transport/server/EventStore"
 *
 * // A store of your own: any value of this shape, e.g. backed by a database.
 * declare const persistent: EventStore.EventStoreShape
 *
 * const EventStoreLive = Layer.succeed(EventStore.EventStore, persistent)
 * ```
 *
 * @since 0.1.0
 * @category services
 */
export class EventStore extends Context.Service<EventStore, EventStoreShape>()("effect-mcp-transport/EventStore") {}

/**
 * Bounds of the in-memory store.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryOptions {
  /** Events kept across all streams before the oldest go. Default 10 000. */
  readonly maxEvents?: number | undefined
  /** Bytes of `data` kept across all streams before the oldest go. Default 10 MiB. */
  readonly maxBytes?: number | undefined
  /**
   * Offer `tail`, as a store shared by several transports would: for
   * transports in one process that stand for the instances of a fleet.
   * Default false (each transport delivers its own streams directly).
   */
  readonly tail?: boolean | undefined
}

/**
 * The in-memory store's bounds when `MemoryOptions` leaves them out: 10 000 events, 10 MiB.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults = {
  maxEvents: 10_000,
  maxBytes: 10 * 1024 * 1024
} as const

interface Entry {
  readonly seq: number
  readonly event: StoredEvent
  readonly bytes: number
  /** The mark `Tail.finish` leaves (its data is empty, so replay skips it). */
  readonly finished?: true
}

interface StreamLog {
  // Oldest first; `head` skips evicted entries without shifting the array each time.
  entries: Array<Entry>
  head: number
  // The first sequence number of this stream: older ids name a removed stream of the same name.
  readonly since: number
}

// Stream ids are chosen by the transport; the separator is the last `_`, so a
// stream id may contain `_` itself.
const SEPARATOR = "_"

const parseId = (eventId: string): { readonly streamId: string; readonly seq: number } | undefined => {
  const at = eventId.lastIndexOf(SEPARATOR)
  if (at <= 0 || at === eventId.length - 1) return undefined
  const digits = eventId.slice(at + 1)
  if (!/^\d{1,15}$/.test(digits)) return undefined
  return { streamId: eventId.slice(0, at), seq: Number(digits) }
}

/**
 * An in-memory store. Sequence numbers grow across the whole store, so the
 * order of ids within a stream is the order of `append` calls.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemoryUnsafe = (options?: MemoryOptions): EventStoreShape => {
  const maxEvents = Math.max(1, options?.maxEvents ?? defaults.maxEvents)
  const maxBytes = Math.max(1, options?.maxBytes ?? defaults.maxBytes)
  const streams = new Map<string, StreamLog>()
  // Global arrival order for eviction: [streamId, seq] pairs, oldest at `orderHead`.
  const order: Array<readonly [string, number]> = []
  let orderHead = 0
  let count = 0
  let bytes = 0
  let seq = 0

  const compact = (log: StreamLog) => {
    if (log.head > 64 && log.head * 2 > log.entries.length) {
      log.entries = log.entries.slice(log.head)
      log.head = 0
    }
  }

  const evictOldest = () => {
    while (orderHead < order.length) {
      const [streamId, s] = order[orderHead++]
      const log = streams.get(streamId)
      // Entries of removed streams were already subtracted.
      if (log === undefined) continue
      const first = log.entries[log.head]
      if (first === undefined || first.seq !== s) continue
      log.head++
      count--
      bytes -= first.bytes
      compact(log)
      break
    }
    if (orderHead > 1024 && orderHead * 2 > order.length) {
      order.splice(0, orderHead)
      orderHead = 0
    }
  }

  // Woken on every entry of their stream (only with `tail`).
  const followers = Wakers.make()

  const append = (streamId: string, data: string, event?: string | undefined) =>
    Effect.sync(() => appendUnsafe(streamId, data, event, false))

  const appendUnsafe = (streamId: string, data: string, event: string | undefined, finished: boolean): string => {
    {
      const n = ++seq
      const id = `${streamId}${SEPARATOR}${n}`
      let log = streams.get(streamId)
      if (log === undefined) {
        log = { entries: [], head: 0, since: n }
        streams.set(streamId, log)
      }
      const size = data.length + (event?.length ?? 0)
      log.entries.push(finished ? { seq: n, event: { id, event, data }, bytes: size, finished } : { seq: n, event: { id, event, data }, bytes: size })
      order.push([streamId, n])
      count++
      bytes += size
      while (count > maxEvents || (bytes > maxBytes && count > 1)) evictOldest()
      // Removed streams leave stale entries in `order`; drop them once they dominate.
      if (order.length - orderHead > count * 2 + 1024) {
        const liveSeqs = new Set<number>()
        for (const l of streams.values()) {
          for (let i = l.head; i < l.entries.length; i++) liveSeqs.add(l.entries[i].seq)
        }
        const live = order.slice(orderHead).filter(([, s]) => liveSeqs.has(s))
        order.length = 0
        order.push(...live)
        orderHead = 0
      }
      if (options?.tail === true) followers.wake(streamId)
      return id
    }
  }

  /** Index of the first entry after `after` in `log`. */
  const firstAfter = (log: StreamLog, after: number): number => {
    let lo = log.head
    let hi = log.entries.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (log.entries[mid].seq <= after) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  const replayAfter = (lastEventId: string) =>
    Effect.sync((): Option.Option<Replay> => {
      const parsed = parseId(lastEventId)
      if (parsed === undefined) return Option.none()
      const log = streams.get(parsed.streamId)
      if (log === undefined || parsed.seq > seq || parsed.seq < log.since) return Option.none()
      const events: Array<StoredEvent> = []
      for (let i = firstAfter(log, parsed.seq); i < log.entries.length; i++) {
        const e = log.entries[i].event
        if (e.data !== "") events.push(e)
      }
      return Option.some({ streamId: parsed.streamId, events })
    })

  const streamOf = (eventId: string) =>
    Effect.sync((): Option.Option<string> => {
      const parsed = parseId(eventId)
      const log = parsed === undefined ? undefined : streams.get(parsed.streamId)
      return parsed !== undefined && log !== undefined && parsed.seq <= seq && parsed.seq >= log.since
        ? Option.some(parsed.streamId)
        : Option.none()
    })

  const removeStream = (streamId: string) =>
    Effect.sync(() => {
      const log = streams.get(streamId)
      if (log === undefined) return
      streams.delete(streamId)
      for (let i = log.head; i < log.entries.length; i++) {
        count--
        bytes -= log.entries[i].bytes
      }
    })

  const tail: Tail = {
    follow: (streamId, from) =>
      Follow.make<number, StoredEvent>({
        start: Effect.sync(() => {
          if (from === "start") return 0
          if (from === "end") return seq
          const parsed = parseId(from.after)
          if (parsed === undefined || parsed.streamId !== streamId) return seq
          return parsed.seq
        }),
        read: (cursor) =>
          Effect.sync(() => {
            const log = streams.get(streamId)
            const events: Array<StoredEvent> = []
            if (log === undefined) return { events, cursor, finished: false }
            let next = cursor
            for (let i = firstAfter(log, cursor); i < log.entries.length; i++) {
              const entry = log.entries[i]
              next = entry.seq
              if (entry.finished === true) return { events, cursor: next, finished: true }
              if (entry.event.data !== "") events.push(entry.event)
            }
            return { events, cursor: next, finished: false }
          }),
        register: (onAppend) => followers.register(streamId, onAppend)
      }),
    finish: (streamId) =>
      Effect.sync(() => {
        appendUnsafe(streamId, "", undefined, true)
      })
  }

  const store: EventStoreShape = { append, replayAfter, streamOf, removeStream, size: Effect.sync(() => count) }
  return options?.tail === true ? { ...store, tail } : store
}

/**
 * An in-memory store, bounded across all its streams: past `maxEvents` or `maxBytes` the oldest events go.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as Option from "effect/Option"
 * import * as EventStore from "effect-mcp-transport/server/EventStore"
 *
 * const program = Effect.gen(function*() {
 *   const store = yield* EventStore.makeMemory({ maxEvents: 1000 })
 *   const first = yield* store.append("stream-a", `{"jsonrpc":"2.0","method":"notifications/progress"}`)
 *   yield* store.append("stream-b", `{"jsonrpc":"2.0","method":"notifications/message"}`)
 *   yield* store.append("stream-a", `{"jsonrpc":"2.0","id":1,"result":{}}`)
 *
 *   // A client that saw `first` gets what followed on its own stream only.
 *   const replay = yield* store.replayAfter(first)
 *   if (Option.isSome(replay)) {
 *     yield* Effect.log(`${replay.value.streamId}: ${replay.value.events.length} event(s)`) // stream-a: 1 event(s)
 *   }
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (options?: MemoryOptions): Effect.Effect<EventStoreShape> =>
  Effect.sync(() => makeMemoryUnsafe(options))

/**
 * The in-memory store as the `EventStore` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (options?: MemoryOptions): Layer.Layer<EventStore> =>
  Layer.effect(EventStore)(makeMemory(options))

/**
 * The default store (in memory, default bounds).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<EventStore> = layerMemory()

/**
 * The default store: `makeMemory`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = makeMemory
