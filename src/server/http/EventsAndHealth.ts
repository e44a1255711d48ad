/**
 * The endpoints beside `POST /mcp` for simple clients and monitors: a broadcast SSE
 * stream (`GET /mcp/events`), a health check, JSON-RPC-shaped 404s and 204
 * preflights. A slow listener never slows the others: each
 * has a bounded buffer and is dropped when it overflows (it can come back
 * with `Last-Event-ID` and replay what it missed from the event store).
 */
import { randomBytes } from "node:crypto"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as JsonRpc from "../../JsonRpc.ts"
import type { EventStoreShape } from "../EventStore.ts"
import type { Env, Guarded, Route } from "./Guard.ts"
import { guard, preflight } from "./Guard.ts"
import * as RequestBody from "./RequestBody.ts"
import * as Security from "./Security.ts"
import * as SlotRefusal from "./SlotRefusal.ts"
import * as SseWire from "./SseWire.ts"

interface Item {
  readonly id: string
  readonly frame: string
}

interface Listener {
  readonly queue: Queue.Queue<Item, Cause.Done>
}

export interface Broadcast {
  readonly streamId: string
  /** Sends `event`/`data` to every listener; `data` is JSON-encoded. Returns the event id. */
  readonly broadcast: (event: string, data: unknown) => Effect.Effect<string>
  readonly listeners: () => number
  /** Listeners dropped for falling behind. */
  readonly dropped: () => number
  readonly listen: (lastEventId: string | undefined) => Effect.Effect<Option.Option<Stream.Stream<Uint8Array>>>
  readonly closeAll: Effect.Effect<void>
}

export const makeBroadcast = (store: EventStoreShape, buffer: number, keepAliveMs: number | undefined) =>
  Effect.gen(function*() {
    const streamId = `broadcast-${randomBytes(6).toString("base64url")}`
    const listeners = new Set<Listener>()
    let dropped = 0

    const broadcast = (event: string, data: unknown) =>
      Effect.gen(function*() {
        const text = JSON.stringify(data === undefined ? null : data)
        const id = yield* store.append(streamId, text, event)
        const item = { id, frame: SseWire.event(text, id, event) }
        for (const listener of listeners) {
          if (!Queue.offerUnsafe(listener.queue, item)) {
            // Full: this listener gets what it has buffered, then its connection ends.
            listeners.delete(listener)
            dropped++
            Queue.endUnsafe(listener.queue)
          }
        }
        return id
      })

    const listen = (lastEventId: string | undefined) =>
      Effect.gen(function*() {
        const queue = yield* Queue.bounded<Item, Cause.Done>(buffer)
        const listener = { queue }
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
          head = replay.value.events.map((e) => SseWire.event(e.data, e.id, e.event)).join("")
        } else {
          listeners.add(listener)
        }
        const live = Stream.fromQueue(queue).pipe(
          Stream.filter((item) => !replayed.has(item.id)),
          Stream.map((item) => SseWire.encode(item.frame))
        )
        // Something on the wire at once, so the response headers go out now.
        const frames = Stream.concat(Stream.make(SseWire.encode(head === "" ? ": stream open\n\n" : head)), live)
        return Option.some(
          SseWire.withKeepAlive(frames, keepAliveMs).pipe(
            Stream.ensuring(Effect.sync(() => {
              listeners.delete(listener)
            }))
          )
        )
      })

    const closeAll = Effect.sync(() => {
      for (const listener of listeners) Queue.endUnsafe(listener.queue)
      listeners.clear()
    })
    yield* Effect.addFinalizer(() => closeAll)

    return {
      streamId,
      broadcast,
      listeners: () => listeners.size,
      dropped: () => dropped,
      listen,
      closeAll
    } satisfies Broadcast
  })

export const events = (env: Env, hub: Broadcast): Guarded => (request, principal) =>
  Effect.gen(function*() {
    if (!RequestBody.acceptsEventStream(request.headers["accept"])) {
      return Security.invalid(406, "Not Acceptable: Accept must include text/event-stream")
    }
    const admission = yield* env.sessions.enter(principal.id, undefined, true)
    if (admission !== "ok") return SlotRefusal.response(admission)
    const stream = yield* hub.listen(request.headers["last-event-id"])
    if (Option.isNone(stream)) return Security.invalid(400, "Bad Request: unknown Last-Event-ID")
    return SseWire.response(stream.value, {})
  })

export const health: Guarded = () => Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "ok", transport: "sse" }))

/** Everything no route matched: 204 for preflights, 405 on our own paths, else 404 with a -32600 body. */
export const notFound = (env: Env, ownPaths: ReadonlyArray<string>): Route => (request) => {
  if (request.method === "OPTIONS") return preflight(env)(request)
  return guard(env, { auth: false }, () => {
    const path = request.url.split("?")[0]
    if (ownPaths.includes(path)) {
      return Effect.succeed(Security.invalid(405, `Method Not Allowed: ${request.method} ${path}`))
    }
    return Effect.succeed(
      Security.errorResponse(404, JsonRpc.ErrorCode.InvalidRequest, `Not found: ${request.method} ${path}`)
    )
  })(request)
}
