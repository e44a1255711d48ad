/**
 * effect/http tracing of the transport's own requests (`httpTracing`): by
 * default no client span and no trace headers on the wire; "span" adds the
 * span only; "propagate" adds the span and the `traceparent` / `b3` headers.
 * A loopback node:http server records the headers each request arrived with,
 * and a recording tracer lists the spans the HTTP client opened.
 */
import type { IncomingHttpHeaders } from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Tracer } from "effect"
import type { HttpClient } from "effect/http"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import { listen } from "../../fixtures/loopback-http.ts"
import { httpClients } from "./httpClients.ts"

/** Answers requests with a JSON body, notifications with 202; keeps every request's headers. */
const startServer = Effect.suspend(() => {
  const seen: Array<IncomingHttpHeaders> = []
  return Effect.map(
    listen((req, res) => {
      seen.push(req.headers)
      let body = ""
      req.setEncoding("utf8")
      req.on("data", (chunk: string) => body += chunk)
      req.on("end", () => {
        if (req.method !== "POST") {
          res.writeHead(req.method === "DELETE" ? 204 : 405).end()
          return
        }
        const message = JSON.parse(body) as { id?: string | number }
        if (message.id === undefined) {
          res.writeHead(202).end()
          return
        }
        res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s1" })
          .end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result: {} }))
      })
    }),
    ({ url }) => ({ url, seen })
  )
})

/** A tracer that keeps the name and kind of every span it starts. */
const recordingTracer = () => {
  const spans: Array<string> = []
  const tracer = Tracer.make({
    span(options) {
      spans.push(`${options.kind}:${options.name}`)
      return new Tracer.NativeSpan(options)
    }
  })
  return { spans, tracer }
}

const TRACE_HEADERS = ["traceparent", "b3"] as const

/** Initialize, initialized, one request, then the DELETE at close; returns the headers and client spans seen. */
const session = (clientLayer: Layer.Layer<HttpClient.HttpClient>, httpTracing?: StreamableHttp.HttpTracing) =>
  Effect.gen(function*() {
    const server = yield* startServer
    const { spans, tracer } = recordingTracer()
    yield* Effect.scoped(Effect.gen(function*() {
      const t = yield* StreamableHttp.make(httpTracing === undefined ? { url: server.url } : { url: server.url, httpTracing })
      yield* t.request("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } })
      yield* t.notify("notifications/initialized")
      yield* t.request("ping").pipe(Effect.withSpan("caller"))
    })).pipe(Effect.withTracer(tracer), Effect.provide(clientLayer))
    return { seen: server.seen, clientSpans: spans.filter((s) => s.startsWith("client:")) }
  })

describe.each(httpClients)("httpTracing via %s", (_name, clientLayer) => {
  it.live("by default: no trace headers on any request and no client span", () =>
    Effect.gen(function*() {
      const { seen, clientSpans } = yield* session(clientLayer)
      expect(seen.map((h) => h["mcp-session-id"] ?? "-")).toEqual(["-", "s1", "s1", "s1"])
      for (const headers of seen) {
        for (const name of TRACE_HEADERS) expect(headers[name]).toBeUndefined()
      }
      expect(clientSpans).toEqual([])
    }).pipe(Effect.scoped))

  it.live("\"span\": a client span per HTTP request, still no trace headers", () =>
    Effect.gen(function*() {
      const { seen, clientSpans } = yield* session(clientLayer, "span")
      expect(clientSpans).toEqual(["client:POST", "client:POST", "client:POST", "client:DELETE"])
      for (const headers of seen) {
        for (const name of TRACE_HEADERS) expect(headers[name]).toBeUndefined()
      }
    }).pipe(Effect.scoped))

  it.live("\"propagate\": the span and traceparent / b3 headers on every request", () =>
    Effect.gen(function*() {
      const { seen, clientSpans } = yield* session(clientLayer, "propagate")
      expect(clientSpans).toHaveLength(4)
      expect(seen).toHaveLength(4)
      for (const headers of seen) {
        expect(headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/)
        expect(headers.b3).toMatch(/^[0-9a-f]{32}-[0-9a-f]{16}/)
      }
    }).pipe(Effect.scoped))
})
