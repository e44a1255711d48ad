/**
 * SSE answers to POSTs must not cost a TCP connection each: after the
 * response the client reads the body to its end, so the connection goes back
 * to the pool. A loopback node:http server counts the connections it accepts.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { describe, expect } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import { listen } from "../../fixtures/loopback-http.ts"
import { httpClients, liveWith } from "./httpClients.ts"

const sse = (message: unknown) => `event: message\ndata: ${JSON.stringify(message)}\n\n`

/**
 * Answers every request POST with an SSE stream: the response, then (a tick
 * later, so it is a separate chunk) a notification with the end of the body.
 */
const startServer = Effect.suspend(() => {
  let connections = 0
  return Effect.map(
    listen((req: IncomingMessage, res: ServerResponse) => {
      let body = ""
      req.setEncoding("utf8")
      req.on("data", (chunk: string) => body += chunk)
      req.on("end", () => {
        if (req.method !== "POST") {
          res.writeHead(405).end()
          return
        }
        const message = JSON.parse(body) as { id?: string | number; method: string }
        if (message.id === undefined) {
          res.writeHead(202).end()
          return
        }
        const first = sse({ jsonrpc: "2.0", id: message.id, result: { method: message.method } })
        const last = sse({ jsonrpc: "2.0", method: "notifications/message", params: { after: message.id } })
        // A declared length makes the last event's bytes the end of the body (no separate chunked terminator).
        res.writeHead(200, {
          "content-type": "text/event-stream",
          "content-length": Buffer.byteLength(first) + Buffer.byteLength(last),
          "mcp-session-id": "s1"
        })
        res.write(first)
        setTimeout(() => res.end(last), 5)
      })
    }, { keepAliveTimeout: 30_000 }),
    ({ server, url }) => {
      server.on("connection", () => connections++)
      return { url, connections: () => connections }
    }
  )
})

describe.each(httpClients)("SSE answers reuse the connection via %s", (_name, clientLayer) => {
  const live = liveWith(clientLayer, 20_000)

  live("N sequential calls over SSE reuse pooled connections (not one per call), and messages after the response are routed", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      const t = yield* StreamableHttp.make({ url: server.url })
      const calls = 20
      for (let i = 0; i < calls; i++) {
        // The notification comes after the response on the same body: waiting for it means that body has ended.
        const note = yield* Stream.take(t.notifications, 1).pipe(
          Stream.runCollect,
          Effect.forkChild({ startImmediately: true })
        )
        const answer = yield* t.request("tools/call", { name: `t${i}` })
        expect(answer).toEqual({ method: "tools/call" })
        expect(yield* Fiber.join(note)).toMatchObject([{ method: "notifications/message", params: { after: expect.anything() } }])
      }
      // The pool gets a body's socket back a moment after its last event is routed, so a call issued right
      // then may open a second connection; from there on the two alternate. Without draining it was one per call.
      expect(server.connections()).toBeLessThanOrEqual(2)
      expect(yield* t.pendingCount).toBe(0)
    }))
})
