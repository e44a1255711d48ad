/**
 * The HTTP server's part in its metrics: the Prometheus scrape endpoint
 * (`metrics` option), and the probe that reports its session streams in
 * `mcp.server.sse.active_streams` and `mcp.server.sse.buffered_bytes`.
 */
import * as Effect from "effect/Effect"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type * as PrometheusMetrics from "effect/observability/PrometheusMetrics"
import type { StreamLoad } from "../../observability/Metrics.ts"
import type { Guarded } from "./Guard.ts"
import type { Session } from "./Sessions.ts"

/**
 * The text exposition of every metric in the registry of the fiber serving
 * the scrape. The formatter is loaded at the first scrape: a server that is
 * never scraped does not load it.
 */
export const scrape = (options: PrometheusMetrics.FormatOptions | undefined): Guarded => () =>
  Effect.promise(() => import("effect/observability/PrometheusMetrics")).pipe(
    Effect.flatMap((Prometheus) => Prometheus.format(options)),
    Effect.map((body) => HttpServerResponse.text(body, { contentType: "text/plain; version=0.0.4; charset=utf-8" }))
  )

/**
 * The streams of `sessions` with a connection attached, and the bytes all of
 * them hold (as `Sessions.stats` counts them: the standalone stream once).
 */
export const streamLoad = (sessions: () => ReadonlyArray<Session>) => (): StreamLoad => {
  let streams = 0
  let bufferedBytes = 0
  for (const s of sessions()) {
    if (!s.liveStreams.has(s.standalone.streamId)) {
      bufferedBytes += s.standalone.bufferedBytes()
      if (s.standalone.hasReader()) streams++
    }
    for (const out of s.liveStreams.values()) {
      bufferedBytes += out.bufferedBytes()
      if (out.hasReader()) streams++
    }
  }
  return { streams, bufferedBytes }
}
