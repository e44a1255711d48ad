/**
 * What goes on the wire of every SSE response this transport writes: the
 * headers that keep proxies from buffering or transforming the stream, the
 * event framing (Effect's SSE encoder), and how such a response is cut when
 * its reader falls too far behind.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Duration from "effect/Duration"
import * as Stream from "effect/Stream"
import * as Sse from "effect/encoding/Sse"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as ResponseHeaders from "./ResponseHeaders.ts"

const encoder = new TextEncoder()

export const sseHeaders = {
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no"
} as const

export const event = (data: string, id?: string | undefined, name = "message"): string =>
  Sse.encoder.write({ _tag: "Event", event: name, id, data })

export const retry = (ms: number): string =>
  Sse.encoder.write(new Sse.Retry({ duration: Duration.millis(ms), lastEventId: undefined }))

export const encode = (text: string): Uint8Array => encoder.encode(text)

/** A complete SSE body, known before the response starts: one write, with its length. */
export const whole = (body: string, headers: Record<string, string>): HttpServerResponse.HttpServerResponse =>
  ResponseHeaders.add(ResponseHeaders.add(HttpServerResponse.text(body, { contentType: "text/event-stream" }), sseHeaders), headers)

export const response = <E>(
  frames: Stream.Stream<Uint8Array, E>,
  headers: Record<string, string>
): HttpServerResponse.HttpServerResponse =>
  ResponseHeaders.add(ResponseHeaders.add(HttpServerResponse.stream(frames, { contentType: "text/event-stream" }), sseHeaders), headers)

/**
 * Ends the response to `request` at once, unwritten bytes lost. Node's
 * writer waits on a full socket for as long as the client leaves it full, so
 * ending the body's stream alone would not free the connection; destroying
 * the response does, and interrupts the request (its finalizers run). On a
 * server that is not Node's this does nothing: the stream then ends after
 * what its writer already took.
 */
export const cutter = (request: HttpServerRequest.HttpServerRequest) => (): void => {
  const response: { readonly destroy?: unknown } | undefined = NodeHttpServerRequest.toServerResponse(request)
  if (typeof response?.destroy === "function") (response as { destroy(): void }).destroy()
}
