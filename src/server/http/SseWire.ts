/**
 * What goes on the wire of every SSE response this transport writes: the
 * headers that keep proxies from buffering or transforming the stream, the
 * event framing (Effect's SSE encoder), and keep-alive comments.
 */
import * as Duration from "effect/Duration"
import * as Stream from "effect/Stream"
import * as Sse from "effect/encoding/Sse"
import * as HttpServerResponse from "effect/http/HttpServerResponse"

const encoder = new TextEncoder()

export const sseHeaders = {
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no"
} as const

export const event = (data: string, id?: string | undefined, name = "message"): string =>
  Sse.encoder.write({ _tag: "Event", event: name, id, data })

export const retry = (ms: number): string =>
  Sse.encoder.write(new Sse.Retry({ duration: Duration.millis(ms), lastEventId: undefined }))

const keepAliveFrame = encoder.encode(": keepalive\n\n")

export const encode = (text: string): Uint8Array => encoder.encode(text)

/**
 * Adds a comment every `intervalMs` while `frames` runs (SSE parsers ignore
 * comments); the result ends when `frames` ends.
 */
export const withKeepAlive = <E, R>(
  frames: Stream.Stream<Uint8Array, E, R>,
  intervalMs: number | undefined
): Stream.Stream<Uint8Array, E, R> =>
  intervalMs === undefined || intervalMs <= 0 || !Number.isFinite(intervalMs)
    ? frames
    : Stream.merge(
      frames,
      Stream.tick(Duration.millis(intervalMs)).pipe(Stream.drop(1), Stream.map(() => keepAliveFrame)),
      { haltStrategy: "left" }
    )

/** A complete SSE body, known before the response starts: one write, with its length. */
export const whole = (body: string, headers: Record<string, string>): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(body, {
    contentType: "text/event-stream",
    headers: { ...sseHeaders, ...headers }
  })

export const response = <E>(
  frames: Stream.Stream<Uint8Array, E>,
  headers: Record<string, string>
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.stream(frames, {
    contentType: "text/event-stream",
    headers: { ...sseHeaders, ...headers }
  })
