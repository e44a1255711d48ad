/**
 * The endpoints beside `POST /mcp` for simple clients and monitors: a broadcast SSE
 * stream (`GET /mcp/events`), a health check, JSON-RPC-shaped 404s and 204
 * preflights. A slow listener never slows the others: each
 * has a buffer bounded in events and in bytes, and is dropped when it
 * overflows (its connection is cut and the buffer freed; it can come back
 * with `Last-Event-ID` and replay what it missed from the event store).
 *
 * With an event store shared by a fleet (one with a `tail`), the broadcast
 * stream is one stream in the store: a broadcast is an append, and each
 * listener follows the stream (see SharedStream), so every listener of the
 * fleet gets every broadcast once, in the store's order, and a slow one
 * lags behind in the store instead of being dropped.
 */
import { randomBytes } from "node:crypto"
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as JsonRpc from "../../JsonRpc.ts"
import * as Metrics from "../../observability/Metrics.ts"
import { BROADCAST_TOPIC, type BusShape } from "../Bus.ts"
import type { EventStoreShape, Tail } from "../EventStore.ts"
import type { Env, Guarded, Route } from "./Guard.ts"
import { guard, preflight } from "./Guard.ts"
import * as KeepAlive from "./KeepAlive.ts"
import * as RequestBody from "./RequestBody.ts"
import type { RequestHeaders } from "./RequestHeaders.ts"
import * as Security from "./Security.ts"
import * as SharedStream from "./SharedStream.ts"
import * as SlotRefusal from "./SlotRefusal.ts"
import * as SseWire from "./SseWire.ts"

interface Item {
  readonly id: string
  readonly bytes: Uint8Array
}

interface Listener {
  readonly queue: Queue.Queue<Item, Cause.Done>
  /** Bytes in `queue`. */
  queued: number
  /** Bytes of the chunk last taken by the writer, until it asks for the next one. */
  writing: number
  readonly cut: () => void
}

const decodeCarried = (message: string): { id: string; event: string; text: string } | undefined => {
  try {
    const value = JSON.parse(message) as { id?: unknown; event?: unknown; text?: unknown }
    return typeof value.id === "string" && typeof value.event === "string" && typeof value.text === "string"
      ? { id: value.id, event: value.event, text: value.text }
      : undefined
  } catch {
    return undefined
  }
}

const keepAliveItem: Item = { id: "", bytes: SseWire.encode(": keepalive\n\n") }

const offerTo = (listener: Listener, item: Item): boolean => {
  if (!Queue.offerUnsafe(listener.queue, item)) return false
  listener.queued += item.bytes.byteLength
  return true
}

export interface BroadcastOptions {
  /** Events a listener may fall behind by before it is dropped. */
  readonly buffer: number
  /** Bytes a listener may fall behind by before it is dropped (queued, or handed to its writer). */
  readonly maxBufferedBytes: number
  readonly keepAliveMs: number | undefined
  /**
   * Carries each broadcast to every instance: the publisher stores it once,
   * under one stream name shared by the fleet, and every instance (itself
   * included) writes it to its own listeners when the bus delivers it.
   */
  readonly bus?: BusShape | undefined
}

export interface Broadcast {
  readonly streamId: string
  /** Sends `event`/`data` to every listener; `data` is JSON-encoded. Returns the event id. */
  readonly broadcast: (event: string, data: unknown) => Effect.Effect<string>
  readonly listeners: () => number
  /** Listeners dropped for falling behind. */
  readonly dropped: () => number
  /** The frames for one listener; `cut` ends its HTTP response at once (how it is dropped). */
  readonly listen: (
    lastEventId: string | undefined,
    cut: () => void
  ) => Effect.Effect<Option.Option<Stream.Stream<Uint8Array>>>
  readonly closeAll: Effect.Effect<void>
}

export const makeBroadcast = (store: EventStoreShape, options: BroadcastOptions) =>
  Effect.gen(function*() {
    const tail = store.tail
    const streamId = options.bus === undefined && tail === undefined
      ? `broadcast-${randomBytes(6).toString("base64url")}`
      : "broadcast"
    const keepAlive = yield* KeepAlive.make(options.keepAliveMs)
    const listeners = new Set<Listener>()
    let dropped = 0

    // Its connection is cut, so what it buffered goes now rather than when (if ever) the client reads again.
    const drop = (listener: Listener) => {
      listeners.delete(listener)
      dropped++
      while (Queue.takeUnsafe(listener.queue)?._tag === "Success") {
        // discarded
      }
      listener.queued = 0
      Queue.endUnsafe(listener.queue)
      listener.cut()
    }

    const deliver = (id: string, event: string, text: string) => {
      const item = { id, bytes: SseWire.encode(SseWire.event(text, id, event)) }
      for (const listener of listeners) {
        const behind = listener.queued + listener.writing > options.maxBufferedBytes
        if (behind || !offerTo(listener, item)) drop(listener)
      }
    }

    // Following the shared stream, listeners need no bus.
    const bus = tail === undefined ? options.bus : undefined
    if (bus !== undefined) {
      yield* bus.subscribe(BROADCAST_TOPIC, (message) =>
        Effect.sync(() => {
          const carried = decodeCarried(message)
          if (carried !== undefined) deliver(carried.id, carried.event, carried.text)
        }))
    }

    // Combinators, not `Effect.gen` (docs/design.md, "Per-request code and the old generation").
    const broadcast = (event: string, data: unknown) =>
      Effect.suspend(() => {
        const text = JSON.stringify(data === undefined ? null : data)
        return Effect.flatMap(store.append(streamId, text, event), (id) => {
          if (tail !== undefined) return Effect.succeed(id)
          if (bus === undefined) {
            deliver(id, event, text)
            return Effect.succeed(id)
          }
          return bus.publish(BROADCAST_TOPIC, JSON.stringify({ id, event, text })).pipe(
            Effect.catch((error) => Effect.logWarning(`broadcast ${event}: not published`, error)),
            Effect.as(id)
          )
        })
      })

    // Connections following the shared stream, by how each is ended.
    const followers = new Set<() => void>()
    // Combinators, not `Effect.gen` (docs/design.md, "Per-request code and the old generation").
    const follow = (lastEventId: string | undefined, tail: Tail): Effect.Effect<Option.Option<Stream.Stream<Uint8Array>>> => {
      const connect = () => {
        let mine: (() => void) | undefined
        return Option.some(SharedStream.follower({
          tail,
          streamId,
          from: lastEventId === undefined ? "end" : { after: lastEventId },
          keepAlive,
          onOpen: (end) => {
            mine = end
            followers.add(end)
          },
          onClose: () => {
            if (mine !== undefined) followers.delete(mine)
          }
        }))
      }
      if (lastEventId === undefined) return Effect.sync(connect)
      return Effect.map(store.streamOf(lastEventId), (of) => Option.isNone(of) || of.value !== streamId ? Option.none() : connect())
    }

    // The listeners of this instance, when there is no shared stream to follow.
    const local: Local = { store, streamId, buffer: options.buffer, keepAlive, listeners }
    const listen = (lastEventId: string | undefined, cut: () => void) =>
      tail !== undefined ? follow(lastEventId, tail) : listenHere(local, lastEventId, cut)

    const closeAll = Effect.sync(() => {
      for (const listener of listeners) Queue.endUnsafe(listener.queue)
      listeners.clear()
      for (const end of followers) end()
      followers.clear()
    })
    yield* Effect.addFinalizer(() => closeAll)

    return {
      streamId,
      broadcast,
      listeners: () => listeners.size + followers.size,
      dropped: () => dropped,
      listen,
      closeAll
    } satisfies Broadcast
  })

/** What a listener of an instance's own broadcast stream is added to. */
interface Local {
  readonly store: EventStoreShape
  readonly streamId: string
  /** Events a listener may fall behind by before it is dropped. */
  readonly buffer: number
  readonly keepAlive: KeepAlive.Ticker
  readonly listeners: Set<Listener>
}

// One generator function for every events GET (docs/design.md, "Per-request code and the old generation").

/** A listener of the instance's own stream: replays what followed `lastEventId`, then what is broadcast. */
const listenHere = Effect.fnUntraced(function*(
  local: Local,
  lastEventId: string | undefined,
  cut: () => void
): Effect.fn.Return<Option.Option<Stream.Stream<Uint8Array>>> {
  const { listeners, store, streamId } = local
  const queue = yield* Queue.bounded<Item, Cause.Done>(local.buffer)
  const listener: Listener = { queue, queued: 0, writing: 0, cut }
  let replayed: ReadonlySet<string> = new Set()
  let head = ""
  if (lastEventId !== undefined) {
    // Listen before reading the store, so nothing between the two is missed.
    listeners.add(listener)
    const replay = yield* store.replayAfter(lastEventId)
    if (Option.isNone(replay) || replay.value.streamId !== streamId) {
      listeners.delete(listener)
      return Option.none()
    }
    replayed = new Set(replay.value.events.map((e) => e.id))
    yield* Metrics.eventsReplayed(replay.value.events.length)
    head = replay.value.events.map((e) => SseWire.event(e.data, e.id, e.event)).join("")
  } else {
    listeners.add(listener)
  }
  // Something on the wire at once, so the response headers go out now.
  let opening: Uint8Array | undefined = SseWire.encode(head === "" ? ": stream open\n\n" : head)
  const next: Effect.Effect<readonly [Uint8Array], Cause.Done> = Effect.flatMap(Queue.take(queue), (item) => {
    listener.queued -= item.bytes.byteLength
    if (replayed.has(item.id)) return next
    listener.writing = item.bytes.byteLength
    return Effect.succeed([item.bytes] as const)
  })
  const pull = Effect.suspend((): Effect.Effect<readonly [Uint8Array], Cause.Done> => {
    // Asked for the next chunk: the writer's socket took the last one.
    listener.writing = 0
    if (opening === undefined) return next
    const first = opening
    opening = undefined
    return Effect.succeed([first] as const)
  })
  return Option.some(Stream.unwrap(openFrames(local, listener, pull)))
})

/** The listener's frames, from when its response is written; it is let go when that ends. */
const openFrames = Effect.fnUntraced(function*(
  local: Local,
  listener: Listener,
  pull: Effect.Effect<readonly [Uint8Array], Cause.Done>
): Effect.fn.Return<Stream.Stream<Uint8Array>, never, Scope.Scope> {
  // Only an idle listener needs one; it never displaces an event.
  const stopKeepAlive = yield* local.keepAlive.add(() => {
    if (Queue.sizeUnsafe(listener.queue) === 0) offerTo(listener, keepAliveItem)
  })
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      stopKeepAlive()
      local.listeners.delete(listener)
    })
  )
  return Stream.fromPull(Effect.succeed(pull))
})

export const events = (env: Env, hub: Broadcast): Guarded => (request, principal, headers) =>
  listenTo(env, hub, request, principal, headers)

/** One generator function for every events GET (`fnUntraced`), none made per request. */
const listenTo = Effect.fnUntraced(function*(
  env: Env,
  hub: Broadcast,
  request: HttpServerRequest.HttpServerRequest,
  principal: Security.Principal,
  headers: RequestHeaders
): Effect.fn.Return<HttpServerResponse.HttpServerResponse, never, Scope.Scope> {
  const refusal = RequestBody.eventStreamRefusal(headers)
  if (refusal !== undefined) return refusal
  const admission = yield* env.sessions.enter(principal.id, undefined, true)
  if (admission !== "ok") return yield* SlotRefusal.refuse(admission)
  const stream = yield* hub.listen(headers["last-event-id"], SseWire.cutter(request))
  if (Option.isNone(stream)) return Security.invalid(400, "Bad Request: unknown Last-Event-ID")
  return SseWire.response(stream.value, {})
})

/**
 * The instance's health: `ok` (200), or 503 with `unavailable` while the
 * store a fleet shares cannot be reached and `draining` once shutdown
 * began. With a shared store its state is in the body (`store`); without
 * one the body is `{"status":"ok","transport":"sse"}` as it always was.
 */
export const health = (env: Env): Guarded => () =>
  Effect.sync(() => {
    const draining = env.drain?.draining() === true
    const shared = env.availability
    if (shared === undefined) {
      return draining
        ? HttpServerResponse.jsonUnsafe({ status: "draining", transport: "sse" }, { status: 503 })
        : HttpServerResponse.jsonUnsafe({ status: "ok", transport: "sse" })
    }
    const connected = shared.available()
    const status = draining ? "draining" : connected ? "ok" : "unavailable"
    const body = { status, store: { kind: shared.kind ?? "shared", connected } }
    return status === "ok"
      ? HttpServerResponse.jsonUnsafe(body)
      : HttpServerResponse.setHeader(
        HttpServerResponse.jsonUnsafe(body, { status: 503 }),
        "retry-after",
        String(shared.retryAfterSeconds)
      )
  })

/** Everything no route matched: 204 for preflights, 405 on our own paths, else 404 with a -32600 body. */
export const notFound = (env: Env, ownPaths: ReadonlyArray<string>): Route => {
  const preflighted = preflight(env)
  const refused = guard(env, { auth: false }, (request) => {
    const path = request.url.split("?")[0]
    if (ownPaths.includes(path)) {
      return Effect.succeed(Security.invalid(405, `Method Not Allowed: ${request.method} ${path}`))
    }
    return Effect.succeed(
      Security.errorResponse(404, JsonRpc.ErrorCode.InvalidRequest, `Not found: ${request.method} ${path}`)
    )
  })
  return (request) => request.method === "OPTIONS" ? preflighted(request) : refused(request)
}
