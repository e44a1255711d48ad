/**
 * One logical SSE stream of server-to-client messages (a POST's response
 * stream, a session's standalone stream, a legacy connection), independent of
 * the HTTP connection that happens to carry it.
 *
 * Messages are pushed, not pulled: while a connection is attached, a message
 * is stored in the event store (which names it) and handed to that
 * connection's queue in one step; with no connection it waits, unstored, in
 * `pending`. So every message a connection could have lost is in the store:
 * a connection that attaches with `Last-Event-ID` replays what the store holds
 * after that id, then takes the pending ones. Nothing is written twice to the
 * new connection and nothing handed out is lost. Only one connection reads at
 * a time; attaching takes the stream over from the previous one.
 *
 * The push design keeps the cost of a message to one store append and one
 * queue offer: a POST answered over SSE (one priming event, one response)
 * runs no per-message pull, race or merge.
 *
 * What the stream holds for a client that reads slower than the server
 * writes is bounded in bytes (`maxBufferedBytes`): the frames queued for the
 * connection plus the chunk last handed to the HTTP writer (Node's writer
 * asks for the next chunk only once the socket took the previous one, so
 * until then that chunk sits in Node's buffer), and the messages waiting in
 * `pending`. A message offered while a connection holds more than the bound
 * drops that connection: its unwritten frames are discarded and its HTTP
 * response is cut. With a store the stream stays open (those frames are
 * stored; the client resumes with `Last-Event-ID`); without one there is
 * nothing to resume from and the stream ends. Messages waiting without a
 * connection past the bound: a stream with a `capacity` lets the oldest go;
 * any other stream that has had a connection ends (its client is away and
 * not coming back for them soon enough). A single message larger than the
 * bound still goes out whole.
 *
 * With a store shared by a fleet (one with a `tail`), the client may resume
 * on another instance: once a connection has attached (the client has an
 * id to resume from), a message offered with no connection is stored at
 * once instead of waiting here, and the end of the stream is marked in the
 * store after its last message, so a follower elsewhere ends there too.
 */
import type * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as JsonRpc from "../../JsonRpc.ts"
import * as KeepAlive from "./KeepAlive.ts"
import * as Metrics from "../../observability/Metrics.ts"
import * as SseWire from "./SseWire.ts"

export type { AttachOptions, OutStream, OutStreamOptions, Queued } from "./OutStreamShape.ts"
import type { AttachOptions, OutStream, OutStreamOptions, Queued } from "./OutStreamShape.ts"

// Marks where a connection should end (closeConnection); never written.
const CLOSE = Symbol("OutStream/close")
/** A message already stored and framed (it was handed to a connection that went away unread). */
interface Framed {
  readonly _tag: "Framed"
  readonly bytes: Uint8Array
}
type Pending = JsonRpc.JsonRpcMessage | Framed | typeof CLOSE

const isFramed = (item: Pending): item is Framed =>
  item !== CLOSE && (item as { readonly _tag?: unknown })._tag === "Framed"

interface Connection {
  readonly queue: Queue.Queue<Uint8Array, Cause.Done>
  /** This connection's own opening frames (priming, replay, preamble): never handed to another. */
  head: Uint8Array | undefined
  /** Bytes in `queue`. */
  queued: number
  /** Bytes of the chunk last taken by the writer, until it asks for the next one. */
  writing: number
  readonly cut: (() => void) | undefined
}

const keepAliveFrame = SseWire.encode(": keepalive\n\n")

/** Answers up to this many characters of JSON go out as one whole body (`takeWhole`). */
export const WHOLE_BODY_LIMIT = 64 * 1024

export const make = (options: OutStreamOptions): Effect.Effect<OutStream> => Effect.sync(() => makeUnsafe(options))

/** `make` outside an effect: a POST opens its response stream from inside a handler's `notify`. */
export const makeUnsafe = (options: OutStreamOptions): OutStream => {
  // Serialises storing and handing out, so the store's order is the wire's order.
  const permit = Semaphore.makeUnsafe(1)
  const settled = Deferred.makeUnsafe<boolean>()
  const ended = Deferred.makeUnsafe<void>()
  const store = options.store
  const tail = store?.tail
  let finished = false
  const capacity = options.capacity
  const limit = options.maxBufferedBytes
  const pending: Array<Pending> = []
  let pendingBytes = 0
  let attachedOnce = false
  let isEnded = false
  let closed = false
  let drainedSignalled = false
  let streaming = false
  let current: Connection | undefined

  // JSON of the messages in `pending`, computed once: it sizes them, then frames or answers them.
  const serialized = new WeakMap<JsonRpc.JsonRpcMessage, string>()
  const json = (message: JsonRpc.JsonRpcMessage): string => {
    let text = serialized.get(message)
    if (text === undefined) {
      text = JSON.stringify(message)
      serialized.set(message, text)
    }
    return text
  }
  // A message's JSON length stands for its bytes: what its string costs in memory, not its UTF-8 size.
  const sizeOf = (item: Pending): number =>
    item === CLOSE ? 0 : isFramed(item) ? item.bytes.byteLength : json(item).length

  const takeFirst = (): Pending => {
    const item = pending.shift()!
    pendingBytes -= sizeOf(item)
    return item
  }
  const clearPending = () => {
    pending.length = 0
    pendingBytes = 0
  }

  /** Whether `item` was kept; false when the stream has to end instead (see the module comment). */
  const keep = (item: Pending): boolean => {
    if (
      limit !== undefined && capacity === undefined && attachedOnce && item !== CLOSE && pendingBytes > limit
    ) return false
    pending.push(item)
    pendingBytes += sizeOf(item)
    // The oldest message goes first when nobody reads for long (the newest always stays).
    if (capacity !== undefined) {
      while (pending.length > capacity || (limit !== undefined && pendingBytes > limit && pending.length > 1)) {
        takeFirst()
      }
    }
    return true
  }

  const push = (connection: Connection, bytes: Uint8Array) => {
    if (Queue.offerUnsafe(connection.queue, bytes)) connection.queued += bytes.byteLength
  }

  const behind = (connection: Connection): boolean =>
    (limit !== undefined && connection.queued + connection.writing > limit) ||
    (capacity !== undefined && Queue.sizeUnsafe(connection.queue) >= capacity)

  /** Drops a connection that fell behind: what it holds is discarded and its response cut. */
  const drop = (connection: Connection) => {
    if (current === connection) current = undefined
    while (Queue.takeUnsafe(connection.queue)?._tag === "Success") {
      // discarded
    }
    connection.queued = 0
    Queue.endUnsafe(connection.queue)
    options.onDropped?.()
    connection.cut?.()
  }

  const frame = (message: JsonRpc.JsonRpcMessage): Effect.Effect<Uint8Array> => {
    const data = serialized.get(message) ?? JSON.stringify(message)
    return store === undefined
      ? Effect.succeed(SseWire.encode(SseWire.event(data)))
      : Effect.map(store.append(options.streamId, data), (id) => SseWire.encode(SseWire.event(data, id)))
  }

  /** Ends a connection after what it holds; what it never took goes back to `pending` when `reclaim`. */
  const release = (connection: Connection, reclaim: boolean) => {
    if (current === connection) current = undefined
    if (reclaim) {
      const back: Array<Pending> = []
      for (let taken = Queue.takeUnsafe(connection.queue); taken?._tag === "Success"; taken = Queue.takeUnsafe(connection.queue)) {
        if (taken.value !== keepAliveFrame && taken.value !== connection.head) {
          back.push({ _tag: "Framed", bytes: taken.value })
          pendingBytes += taken.value.byteLength
        }
      }
      connection.queued = 0
      if (back.length > 0) pending.unshift(...back)
    }
    Queue.endUnsafe(connection.queue)
  }

  // Stores and hands one item to the attached connection (under the permit).
  const deliver = (connection: Connection, item: JsonRpc.JsonRpcMessage): Effect.Effect<void> =>
    Effect.map(frame(item), (bytes) => push(connection, bytes))

  const offer = (message: JsonRpc.JsonRpcMessage) =>
    Effect.suspend(() => {
      if (isEnded) return Effect.succeed(false)
      if (!streaming && !JsonRpc.isResponse(message)) {
        streaming = true
        Deferred.doneUnsafe(settled, Effect.succeed(true))
      }
      return permit.withPermit(Effect.suspend(() => {
        const connection = current
        if (connection !== undefined && behind(connection)) {
          drop(connection)
          // Nothing to resume from: the stream ends with its connection.
          if (store === undefined) return Effect.succeed(false)
        }
        if (current === undefined) {
          // Where the client may resume elsewhere, the message must be in the store already.
          if (tail !== undefined && attachedOnce) return Effect.as(store!.append(options.streamId, json(message)), true)
          return Effect.succeed(keep(message))
        }
        return Effect.as(deliver(current, message), true)
      })).pipe(Effect.flatMap((kept) => kept ? Effect.succeed(true) : Effect.as(abandon, false)))
    })

  /** Ends the stream for good, with what it holds (its reader is gone or hopelessly behind). */
  const abandon: Effect.Effect<void> = Effect.suspend(() => {
    closed = true
    clearPending()
    return Effect.andThen(end, signalDrained)
  })

  const end = Effect.suspend(() => {
    if (isEnded) return Effect.void
    isEnded = true
    Deferred.doneUnsafe(settled, Effect.succeed(false))
    Deferred.doneUnsafe(ended, Effect.void)
    return permit.withPermit(Effect.suspend(() => {
      if (current !== undefined) release(current, false)
      return attachedOnce && tail !== undefined ? markFinished : Effect.void
    }))
  })

  /** The end mark in a shared store, once every message of the stream is stored (under the permit). */
  const markFinished: Effect.Effect<void> = Effect.suspend(() => {
    if (tail === undefined || finished) return Effect.void
    finished = true
    return tail.finish(options.streamId)
  })

  const signalDrained = Effect.suspend(() => {
    if (drainedSignalled) return Effect.void
    drainedSignalled = true
    return options.onDrained ?? Effect.void
  })

  // Moves `pending` into a new connection: framed items unless a replay already
  // covered them, messages stored now, up to a close marker. (Combinators, not
  // a generator: docs/design.md, "Per-request code and the old generation".)
  const drainPending = (connection: Connection, replayed: boolean): Effect.Effect<void> =>
    Effect.suspend(() => {
      while (pending.length > 0) {
        const item = takeFirst()
        if (item === CLOSE) {
          release(connection, false)
          return Effect.void
        }
        if (isFramed(item)) {
          if (!replayed) push(connection, item.bytes)
        } else {
          return Effect.andThen(deliver(connection, item), drainPending(connection, replayed))
        }
      }
      if (isEnded) {
        release(connection, false)
        return markFinished
      }
      return Effect.void
    })

  /** The priming event and `retry` field a connection starts with, appended to `into`. */
  const opening = (attachOptions: AttachOptions, into: Array<string>): Effect.Effect<void> => {
    if (store === undefined) return Effect.void
    if (!attachOptions.priming) {
      if (attachOptions.retryMs !== undefined) into.push(SseWire.retry(attachOptions.retryMs))
      return Effect.void
    }
    return Effect.map(store.append(options.streamId, ""), (id) => {
      into.push(SseWire.event("", id))
      if (attachOptions.retryMs !== undefined) into.push(SseWire.retry(attachOptions.retryMs))
    })
  }

  const takeWhole = (attachOptions: AttachOptions): Effect.Effect<string | undefined> =>
    permit.withPermit(Effect.suspend(() => {
      if (!isEnded || closed || current !== undefined || attachOptions.lastEventId !== undefined) {
        return Effect.succeed(undefined)
      }
      // A notification must not share a write with the response after it (see `attach`).
      for (const item of pending) {
        if (item === CLOSE || isFramed(item) || !JsonRpc.isResponse(item)) return Effect.succeed(undefined)
      }
      // Large answers are streamed instead: one body string would hold another copy of them.
      const data: Array<string> = []
      let size = 0
      for (const message of pending as Array<JsonRpc.JsonRpcMessage>) {
        const text = json(message)
        data.push(text)
        size += text.length
        if (size > WHOLE_BODY_LIMIT) return Effect.succeed(undefined)
      }
      clearPending()
      const parts: Array<string> = [...(attachOptions.preamble ?? [])]
      const events = store === undefined
        ? Effect.sync(() => {
          for (const text of data) parts.push(SseWire.event(text))
        })
        : Effect.forEach(data, (text) => Effect.map(store.append(options.streamId, text), (id) => {
          parts.push(SseWire.event(text, id))
        }), { discard: true })
      return opening(attachOptions, parts).pipe(
        Effect.andThen(events),
        Effect.andThen(markFinished),
        Effect.map(() => parts.join(""))
      )
    })).pipe(Effect.tap((body) => body === undefined ? Effect.void : signalDrained))

  /** Makes `connection` the current one and queues its opening frames and what waits in `pending` (under the permit). */
  const takeOver = (connection: Connection, attachOptions: AttachOptions): Effect.Effect<void> =>
    Effect.suspend(() => {
      const previous = current
      current = connection
      attachedOnce = true
      // The connection taken over gives back what it never took.
      if (previous !== undefined) release(previous, true)
      const head: Array<string> = [...(attachOptions.preamble ?? [])]
      const lastEventId = attachOptions.lastEventId
      const replay: Effect.Effect<boolean> = lastEventId === undefined || store === undefined
        ? Effect.succeed(false)
        : Effect.flatMap(store.replayAfter(lastEventId), (found) => {
          if (Option.isNone(found) || found.value.streamId !== options.streamId) return Effect.succeed(false)
          for (const e of found.value.events) head.push(SseWire.event(e.data, e.id, e.event))
          return Effect.as(Metrics.eventsReplayed(found.value.events.length), true)
        })
      return opening(attachOptions, head).pipe(
        Effect.andThen(replay),
        Effect.flatMap((replayed) => {
          // Something on the wire at once, so the response headers go out now
          // rather than with the first message (or keep-alive).
          if (head.length === 0) head.push(": stream open\n\n")
          connection.head = SseWire.encode(head.join(""))
          push(connection, connection.head)
          return drainPending(connection, replayed)
        })
      )
    })

  /** The frames of `connection` once it is current: ends it (and stops its keep-alive) with the scope. */
  const connect = (connection: Connection, attachOptions: AttachOptions) =>
    Effect.flatMap(permit.withPermit(takeOver(connection, attachOptions)), () =>
      // Only an idle connection needs one, and it never displaces a message.
      Effect.flatMap((options.keepAlive ?? KeepAlive.none).add(() => {
        if (Queue.sizeUnsafe(connection.queue) === 0) push(connection, keepAliveFrame)
      }), (stopKeepAlive) =>
        Effect.as(
          Effect.addFinalizer(() =>
            permit.withPermit(Effect.suspend(() => {
              stopKeepAlive()
              const wasCurrent = current === connection
              release(connection, wasCurrent)
              return isEnded && pending.length === 0 ? signalDrained : Effect.void
            }))
          ),
          frames(connection)
        )))

  /** The connection's frames as its writer asks for them. */
  const frames = (connection: Connection): Stream.Stream<Uint8Array> => {
    const queue = connection.queue
    // One frame per write, and a message that follows another message goes
    // out in a later turn: some clients dispatch a chunk's events out of
    // order (a response before the progress that preceded it on the wire).
    let spaced = false
    const take = Effect.map(Queue.take(queue), (bytes): readonly [Uint8Array] => {
      spaced = bytes !== connection.head && bytes !== keepAliveFrame
      connection.queued -= bytes.byteLength
      connection.writing = bytes.byteLength
      return [bytes]
    })
    return Stream.fromPull(Effect.succeed(Effect.suspend(() => {
      // Asked for the next chunk: the writer's socket took the last one.
      connection.writing = 0
      return spaced && Queue.sizeUnsafe(queue) > 0 ? Effect.andThen(Effect.yieldNow, take) : take
    })))
  }

  const attach = (attachOptions: AttachOptions): Stream.Stream<Uint8Array> =>
    Stream.unwrap(Effect.suspend(() => {
      if (closed) return Effect.succeed(Stream.empty)
      return Effect.flatMap(Queue.unbounded<Uint8Array, Cause.Done>(), (queue) =>
        connect({ queue, head: undefined, queued: 0, writing: 0, cut: attachOptions.cut }, attachOptions))
    }))

  const detach = permit.withPermit(Effect.sync(() => {
    if (current !== undefined) release(current, true)
  }))

  const closeConnection = permit.withPermit(Effect.sync(() => {
    if (isEnded) return
    if (current !== undefined) release(current, false)
    else keep(CLOSE)
  }))

  const close = Effect.suspend(() => {
    closed = true
    // Frames kept for the next connection are garbage now that none can attach; messages
    // stay for a JSON answer still to be taken.
    if (pending.some(isFramed)) {
      const messages = pending.filter((item) => !isFramed(item))
      clearPending()
      for (const item of messages) {
        pending.push(item)
        pendingBytes += sizeOf(item)
      }
    }
    return end
  })

  return {
    streamId: options.streamId,
    offer,
    end,
    isEnded: () => isEnded,
    awaitStreamingOrEnd: Deferred.await(settled),
    awaitEnded: Deferred.await(ended),
    isStreaming: () => streaming,
    takeQueued: Effect.sync(() => {
      const queued: Array<Queued> = []
      for (const item of pending) if (item !== CLOSE && !isFramed(item)) queued.push({ message: item, json: json(item) })
      clearPending()
      return queued
    }),
    bufferedBytes: () => pendingBytes + (current === undefined ? 0 : current.queued + current.writing),
    attach,
    takeWhole,
    detach,
    closeConnection,
    hasReader: () => current !== undefined,
    close
  } satisfies OutStream
}
