/**
 * Reads one SSE response body: decodes bytes, parses events with
 * `effect/encoding`'s callback parser (which hands `retry:` over inline
 * instead of failing the stream), hands each data-carrying event to the
 * caller and reports how the body ended. The caller decides whether that
 * end is a normal stop, a reason to reconnect, or a failure.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Pull from "effect/Pull"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Sse from "effect/encoding/Sse"
import { MessageTooLarge } from "../../McpError.ts"

/** Where a stream got to; shared across reconnects so `Last-Event-ID` and `retry` carry over. */
export interface Cursor {
  lastEventId: string | undefined
  /** The server's last `retry:` value in milliseconds. */
  retryMs: number | undefined
  /** Bytes received on the current connection, keep-alive comments included. */
  bytes: number
}

export const makeCursor = (lastEventId?: string): Cursor => ({ lastEventId, retryMs: undefined, bytes: 0 })

export type Ending =
  /** The event handler asked to stop. */
  | { readonly _tag: "Stopped" }
  /** The server ended the body cleanly. */
  | { readonly _tag: "Ended" }
  /** The connection broke while reading. */
  | { readonly _tag: "Broken"; readonly cause: unknown }
  /** Nothing at all (not even a keep-alive comment) arrived for `idleMs`. */
  | { readonly _tag: "Idle"; readonly idleMs: number }

export interface ReadOptions<E, R> {
  readonly maxEventBytes: number
  /** Milliseconds of silence after which the stream counts as dead; `undefined` waits forever. */
  readonly idleTimeoutMs: number | undefined
  /** Handles one event that carries data. Returning `true` stops reading. */
  readonly onEvent: (event: Sse.Event) => Effect.Effect<boolean, E, R>
  /**
   * Called for an event over `maxEventBytes`; reading goes on with the next
   * event. Without it, an oversized event fails the read with MessageTooLarge.
   */
  readonly onOversized?: ((limit: number) => void) | undefined
}

/** Moves the cursor past a parsed item: a `retry:` field only moves it; an event is handed back. */
const advance = (cursor: Cursor, parsed: Sse.AnyEvent): Sse.Event | undefined => {
  if (parsed._tag === "Retry") {
    cursor.retryMs = Duration.toMillis(parsed.duration)
    if (parsed.lastEventId !== undefined) cursor.lastEventId = parsed.lastEventId
    return undefined
  }
  if (parsed.id !== undefined) cursor.lastEventId = parsed.id
  return parsed
}

const ENDED: Ending = { _tag: "Ended" }
const STOPPED: Ending = { _tag: "Stopped" }

type Step =
  | { readonly _tag: "Chunks"; readonly chunks: ReadonlyArray<Uint8Array> }
  | Ending

/**
 * Consumes `body` until it ends, breaks, goes silent or the handler stops it.
 * Events with empty data (priming events) only move the cursor. One
 * generator function for every body read (docs/design.md, "Per-request code
 * and the old generation").
 */
export const read = Effect.fnUntraced(function*<EB, E, R>(
  body: Stream.Stream<Uint8Array, EB>,
  cursor: Cursor,
  options: ReadOptions<E, R>
): Effect.fn.Return<Ending, E | MessageTooLarge, R | Scope.Scope> {
  const pull = yield* Stream.toPull(body)
  const decoder = new TextDecoder()
  const limit = options.maxEventBytes
  // Parsed but not yet handled, in order; `OVERSIZED` marks an event dropped for its size.
  const events: Array<Sse.Event | typeof OVERSIZED> = []
  const parser = Sse.makeParser((parsed) => {
    const event = advance(cursor, parsed)
    if (event === undefined) return
    // The parser bounds only what is pending between chunks; a whole event inside one chunk is checked here.
    events.push(event.data.length > limit ? OVERSIZED : event)
  }, { maxEventSize: limit })

  const tooLarge = () => {
    if (options.onOversized === undefined) {
      return Effect.fail(new MessageTooLarge({ limit, size: limit + 1, direction: "incoming" }))
    }
    options.onOversized(limit)
    return Effect.void
  }

  let next: Effect.Effect<Step, never, Scope.Scope> = pull.pipe(
    Effect.map((chunks): Step => ({ _tag: "Chunks", chunks })),
    Pull.catchDone(() => Effect.succeed(ENDED)),
    Effect.catch((cause) => Effect.succeed<Step>({ _tag: "Broken", cause }))
  )
  const idleMs = options.idleTimeoutMs
  if (idleMs !== undefined && idleMs > 0 && Number.isFinite(idleMs)) {
    const idle: Step = { _tag: "Idle", idleMs }
    next = Effect.timeoutOrElse(next, { duration: Duration.millis(idleMs), orElse: () => Effect.succeed(idle) })
  }

  while (true) {
    const step = yield* next
    if (step._tag !== "Chunks") return step
    for (const chunk of step.chunks) {
      cursor.bytes += chunk.length
      const error = parser.feed(decoder.decode(chunk, { stream: true }))
      while (events.length > 0) {
        const event = events.shift()!
        if (event === OVERSIZED) {
          yield* tooLarge()
          continue
        }
        if (event.data.length === 0) continue
        if (yield* options.onEvent(event)) return STOPPED
      }
      if (error !== undefined) yield* tooLarge()
    }
  }
}, Effect.scoped)

const OVERSIZED = Symbol("OVERSIZED")

/**
 * The events of an SSE body already read whole (a body with a declared length
 * within the limit), in order, with the cursor moved as `read` would move it.
 * Events with empty data (priming events) only move the cursor; an event cut
 * off by the end of the body is not an event.
 */
export const parseWhole = (text: string, cursor: Cursor): Array<Sse.Event> => {
  const events: Array<Sse.Event> = []
  const parser = Sse.makeParser((parsed) => {
    const event = advance(cursor, parsed)
    if (event !== undefined && event.data.length > 0) events.push(event)
  }, { maxEventSize: Number.MAX_SAFE_INTEGER })
  cursor.bytes += text.length
  parser.feed(text)
  return events
}

/** MCP messages travel as events named `message` (the default when the `event:` field is absent). */
export const isMessageEvent = (event: { readonly event: string }): boolean => event.event === "message"
