/**
 * An SSE answer with a declared length is read whole instead of streamed: its
 * messages are routed in order (those before the response, the response,
 * those after), and a body that ends without the response is resumed with
 * GET and `Last-Event-ID` as a streamed one would be.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { describe, expect } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import { listen } from "../../fixtures/loopback-http.ts"
import { httpClients, liveWith } from "./httpClients.ts"

const event = (message: unknown, id?: string) =>
  `${id === undefined ? "" : `id: ${id}\n`}event: message\ndata: ${JSON.stringify(message)}\n\n`
const priming = (id: string) => `id: ${id}\ndata: \n\n`

/** Sends `body` whole, with its length, as an SSE answer. */
const answerWhole = (res: ServerResponse, body: string) => {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "content-length": Buffer.byteLength(body),
    "mcp-session-id": "s1"
  })
  res.end(body)
}

/**
 * `tools/call` is answered whole: progress, the response, a log message after it.
 * `cut` gets a whole body that stops before its response (a priming id and a log
 * message); the response comes on the GET that resumes from that id.
 */
const startServer = Effect.suspend(() => {
  const resumedFrom: Array<string | undefined> = []
  let cutId: string | number | undefined
  return Effect.map(
    listen((req: IncomingMessage, res: ServerResponse) => {
      if (req.method === "GET") {
        const from = req.headers["last-event-id"] as string | undefined
        resumedFrom.push(from)
        if (from !== "c1" || cutId === undefined) return void res.writeHead(405).end()
        return answerWhole(res, event({ jsonrpc: "2.0", id: cutId, result: { resumed: true } }, "c2"))
      }
      let body = ""
      req.setEncoding("utf8")
      req.on("data", (chunk: string) => body += chunk)
      req.on("end", () => {
        const message = JSON.parse(body) as { id?: string | number; method: string }
        if (message.id === undefined) return void res.writeHead(202).end()
        if (message.method === "cut") {
          cutId = message.id
          return answerWhole(res, priming("c1") + event({ jsonrpc: "2.0", method: "notifications/message", params: { data: "before the cut" } }))
        }
        answerWhole(
          res,
          priming("e0") +
            event({ jsonrpc: "2.0", method: "notifications/message", params: { data: "before" } }, "e1") +
            event({ jsonrpc: "2.0", id: message.id, result: { ok: true } }, "e2") +
            event({ jsonrpc: "2.0", method: "notifications/message", params: { data: "after" } }, "e3")
        )
      })
    }),
    ({ url }) => ({ url, resumedFrom })
  )
})

describe.each(httpClients)("an SSE answer with a declared length, via %s", (_name, clientLayer) => {
  const live = liveWith(clientLayer, 20_000)

  live("routes every message in order: the one before the response, the response, the one after", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      const t = yield* StreamableHttp.make({ url: server.url, listen: false })
      const notes = yield* Stream.take(t.notifications, 2).pipe(Stream.runCollect, Effect.forkChild({ startImmediately: true }))
      expect(yield* t.request("tools/call", { name: "x" })).toEqual({ ok: true })
      const seen = yield* Fiber.join(notes)
      expect(seen.map((n) => (n.params as { data: string }).data)).toEqual(["before", "after"])
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("a body that ends before the response is resumed from its last event id", () =>
    Effect.gen(function*() {
      const server = yield* startServer
      const t = yield* StreamableHttp.make({ url: server.url, listen: false })
      expect(yield* t.request("cut")).toEqual({ resumed: true })
      expect(server.resumedFrom).toEqual(["c1"])
      expect(yield* t.pendingCount).toBe(0)
    }))
})
