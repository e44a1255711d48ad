/**
 * Cuts the connections whose client stopped taking what the server sends.
 *
 * Node keeps whatever a response writes until the socket takes it, and a
 * client that never reads leaves it there for as long as the connection
 * stays open: a JSON answer of many megabytes is handed to Node whole, an
 * SSE frame too. So every connection that carries a response of the
 * transport, JSON or SSE, is watched from that response's request until it
 * closes, and it is cut (the socket reset and destroyed, which frees Node's
 * buffers and the kernel's) when:
 * - its socket has bytes waiting and took none of them for `sendTimeoutMs`;
 * - or it holds more than `maxBufferedBytes` waiting and took none of them
 *   for a quarter of that: bytes past the per-stream bound are kept only
 *   for a client that keeps reading. One answer larger than the bound still
 *   goes out whole to such a client.
 *
 * The connection, not each response, is watched: an HTTP/1.1 connection
 * sends one response at a time, so what waits on its socket is the current
 * response's, and a keep-alive connection between responses has nothing
 * waiting. Watching each response cost a table entry and two listeners per
 * request; a connection costs them once.
 *
 * "Took" is the socket's own account: a write completed
 * (`bytesWritten - writableLength` grows) or the part of the current write
 * still queued in libuv (the handle's `writeQueueSize`) shrank. A
 * connection with nothing waiting (a handler still at work, an idle SSE
 * stream, a keep-alive connection between requests) is never stalled. Time
 * is counted in ticks of one shared timer, each at least a check interval
 * apart, so a server whose event loop was held up does not count that time
 * against its clients; the timer runs while any watched connection is open.
 * HTTP/2 responses are not watched: their socket is shared by every stream
 * of the session.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"

export interface SendWatchOptions {
  /** No progress this long cuts a connection with bytes waiting; never when undefined. */
  readonly sendTimeoutMs: number | undefined
  /** Past this many bytes waiting, a quarter of the timeout does. */
  readonly maxBufferedBytes: number
}

export interface SendWatch {
  /**
   * Watches the connection that carries the response to `request` (from now
   * until it closes, if not yet watched). Done at once, as plain code: what
   * comes back, when something does, starts the shared timer and is the
   * caller's to run.
   */
  readonly watchUnsafe: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<void> | undefined
  /** Connections cut so far. */
  readonly cut: () => number
  /** Bytes Node holds right now for the watched connections that their sockets have not taken. */
  readonly unsentBytes: () => number
}

/** What the watch reads of a Node socket (a `net.Socket`). */
interface SocketLike {
  readonly destroyed: boolean
  readonly writableLength: number
  readonly bytesWritten: number
  readonly _handle?: { readonly writeQueueSize?: number } | null
  destroy(): void
  resetAndDestroy?(): void
  on(event: "close", listener: (this: SocketLike) => void): void
}

/** What the watch reads of a Node response (`http.ServerResponse`). */
interface ResponseLike {
  readonly socket: SocketLike | null
  readonly writableFinished: boolean
  readonly destroyed: boolean
}

interface Watched {
  readonly socket: SocketLike
  /** Bytes whose writes completed, at the last tick. */
  completed: number
  /** Bytes of the current write libuv still held, at the last tick. */
  queued: number
  /** Consecutive ticks that found bytes waiting and none taken. */
  stalledTicks: number
}

/** One tick per this many milliseconds at most: an eighth of the timeout, within [5 ms, 1 s]. */
const intervalOf = (timeoutMs: number) => Math.min(1000, Math.max(5, timeoutMs / 8))

export const none: SendWatch = { watchUnsafe: () => undefined, cut: () => 0, unsentBytes: () => 0 }

const nodeResponse = (request: HttpServerRequest.HttpServerRequest): ResponseLike | undefined => {
  const response: unknown = NodeHttpServerRequest.toServerResponse(request)
  if (typeof response !== "object" || response === null) return undefined
  const r = response as Partial<ResponseLike>
  // An HTTP/2 response's socket is its session's, shared by every stream on it: not this response's to cut.
  if ("stream" in r) return undefined
  return "socket" in r ? response as ResponseLike : undefined
}

const isSocket = (socket: SocketLike | null | undefined): socket is SocketLike =>
  socket != null && typeof socket.writableLength === "number" && typeof socket.bytesWritten === "number" &&
  typeof socket.on === "function"

export const make = (options: SendWatchOptions): Effect.Effect<SendWatch, never, Scope.Scope> =>
  Effect.gen(function*() {
    const timeoutMs = options.sendTimeoutMs
    if (timeoutMs === undefined || !Number.isFinite(timeoutMs) || timeoutMs <= 0) return none
    const scope = yield* Effect.scope
    const intervalMs = intervalOf(timeoutMs)
    const ticksToCut = Math.max(2, Math.ceil(timeoutMs / intervalMs))
    const ticksToCutOverBound = Math.max(2, Math.ceil(timeoutMs / 4 / intervalMs))
    const watched = new Map<SocketLike, Watched>()
    // One listener for every connection (it reads the socket it is called on), not one made per connection.
    const unwatch = function(this: SocketLike) {
      watched.delete(this)
    }
    let running = false
    let cut = 0

    const check = (entry: Watched) => {
      const socket = entry.socket
      if (socket.destroyed) return
      const waiting = socket.writableLength
      const completed = socket.bytesWritten - waiting
      const queued = socket._handle?.writeQueueSize ?? 0
      const progressed = completed > entry.completed || queued < entry.queued
      entry.completed = completed
      entry.queued = queued
      if (waiting === 0 || progressed) {
        entry.stalledTicks = 0
        return
      }
      entry.stalledTicks++
      const limit = waiting > options.maxBufferedBytes ? ticksToCutOverBound : ticksToCut
      if (entry.stalledTicks < limit) return
      watched.delete(socket)
      cut++
      // A reset drops what the kernel still holds for the peer; a plain close would keep it until the peer reads.
      if (typeof socket.resetAndDestroy === "function") socket.resetAndDestroy()
      else socket.destroy()
    }

    const tick: Effect.Effect<void> = Effect.flatMap(Effect.sleep(Duration.millis(intervalMs)), () => {
      if (watched.size === 0) {
        running = false
        return Effect.void
      }
      for (const entry of watched.values()) check(entry)
      return tick
    })

    const startTimer = Effect.asVoid(Effect.forkIn(tick, scope))
    const watchUnsafe = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<void> | undefined => {
      const response = nodeResponse(request)
      if (response === undefined) return undefined
      const socket = response.socket
      // A kept-alive connection's later requests find their socket watched already: nothing more is read.
      if (socket == null || watched.has(socket as SocketLike)) return undefined
      if (response.writableFinished || response.destroyed || !isSocket(socket) || socket.destroyed) return undefined
      watched.set(socket, { socket, completed: socket.bytesWritten - socket.writableLength, queued: 0, stalledTicks: 0 })
      socket.on("close", unwatch)
      if (running) return undefined
      running = true
      return startTimer
    }

    return {
      watchUnsafe,
      cut: () => cut,
      unsentBytes: () => {
        let bytes = 0
        for (const entry of watched.values()) {
          if (!entry.socket.destroyed) bytes += entry.socket.writableLength
        }
        return bytes
      }
    } satisfies SendWatch
  })
