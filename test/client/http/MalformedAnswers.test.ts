/**
 * Broken answers over Streamable HTTP: a malformed response that names its
 * request fails that request at once, wherever it arrives (its own JSON body
 * or SSE stream, another request's stream, the GET listener), and a parse
 * error without an id fails the one pending request, or is only a diagnostic.
 */
import { describe, expect } from "@effect/vitest"
import { Deferred, Effect, Fiber, Stream } from "effect"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import { malformedResponses, malformedShapeNames, parseErrorWithoutId } from "../../fixtures/malformed-responses.ts"
import * as Server from "./MisbehavingServer.ts"
import { httpClients, liveWith } from "./httpClients.ts"

const isMethod = (method: string) => (r: Server.Received) => r.json?.method === method

// Requests wait an hour: a request left to its timeout shows as the test timing out.
const connect = (server: Server.MisbehavingServer) => StreamableHttp.make({ url: server.url, defaultTimeout: "1 hour" })

describe.each(httpClients)("malformed answers over Streamable HTTP via %s", (_name, clientLayer) => {
  const live = liveWith(clientLayer, 15_000)

  live("each malformed shape fails its request with MalformedMessage, in a JSON body and on an SSE stream left open", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) =>
        Effect.succeed(
          isMethod("json")(r)
            ? Server.json(malformedResponses[r.json.params.shape]!.answer(r.json.id))
            : isMethod("sse")(r)
            ? s.sse(Server.thenSilence([Server.event({ data: malformedResponses[r.json.params.shape]!.answer(r.json.id) })]))
            : undefined
        )
      )
      const t = yield* connect(server)
      for (const method of ["json", "sse"]) {
        for (const shape of malformedShapeNames) {
          const error = yield* Effect.flip(t.request(method, { shape }))
          expect(error, `${method}: ${shape}`).toMatchObject({
            _tag: "MalformedMessage",
            reason: malformedResponses[shape]!.reason,
            method
          })
          expect(yield* t.pendingCount).toBe(0)
        }
      }
    }))

  // A request's caller resumes once its own exchange ends (Correlation's sendWithin), so in the next
  // two tests the named request's own SSE stream stays open until the test has seen the broken
  // answer routed, then ends without an answer: what the request fails with is what settled it.

  live("a malformed answer on another request's stream fails the request it names", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const release = yield* Deferred.make<void>()
      let waitingId: unknown
      yield* server.setHandler((r, s) =>
        Effect.sync(() => {
          if (isMethod("waiting")(r)) {
            waitingId = r.json.id
            return s.sse(Stream.fromEffect(Deferred.await(release)).pipe(Stream.drain))
          }
          if (isMethod("carrier")(r)) {
            return s.sse(Stream.make(
              Server.event({ data: malformedResponses["error without code"]!.answer(waitingId as number) }),
              Server.event({ data: Server.result(r.json.id, { carried: true }) })
            ))
          }
          return undefined
        })
      )
      const t = yield* connect(server)
      const waiting = yield* Effect.forkChild(Effect.flip(t.request("waiting")), { startImmediately: true })
      yield* server.waitForRequest(isMethod("waiting"))
      expect(yield* t.request("carrier")).toEqual({ carried: true })
      expect(yield* t.pendingCount).toBe(0)
      yield* Deferred.succeed(release, undefined)
      expect(yield* Fiber.join(waiting)).toMatchObject({
        _tag: "MalformedMessage",
        reason: "error.code must be an integer",
        method: "waiting"
      })
    }))

  live("on the GET listener, a parse error without an id fails the one pending request; with two it is a diagnostic", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const feed = yield* server.pushable()
      const release = yield* Deferred.make<void>()
      yield* server.setHandler((r, s) =>
        Effect.sync(() => {
          if (r.verb === "GET") return s.sse(feed.stream)
          if (isMethod("waiting")(r)) return s.sse(Stream.fromEffect(Deferred.await(release)).pipe(Stream.drain))
          return undefined
        })
      )
      const t = yield* connect(server)
      yield* t.listen
      yield* server.waitForRequest((r) => r.verb === "GET")
      /** Pushes `message` on the listener and returns once the client has routed it. */
      const pushRouted = (message: unknown) =>
        Effect.gen(function*() {
          const marker = yield* Stream.runHead(Stream.take(t.notifications, 1)).pipe(
            Effect.forkChild({ startImmediately: true })
          )
          yield* feed.push(Server.event({ data: message }))
          yield* feed.push(Server.event({ data: Server.notification("notifications/marker") }))
          yield* Fiber.join(marker)
        })

      const alone = yield* Effect.forkChild(Effect.flip(t.request("waiting")), { startImmediately: true })
      yield* server.waitForRequest(isMethod("waiting"))
      yield* pushRouted(parseErrorWithoutId)
      expect(yield* t.pendingCount).toBe(0)

      const diagnostics = yield* Stream.runCollect(Stream.take(t.diagnostics, 1)).pipe(
        Effect.forkChild({ startImmediately: true })
      )
      const first = yield* Effect.forkChild(Effect.flip(t.request("waiting")), { startImmediately: true })
      const second = yield* Effect.forkChild(Effect.flip(t.request("waiting")), { startImmediately: true })
      let waitingCount = 0
      yield* server.waitForRequest((r) => isMethod("waiting")(r) && ++waitingCount === 3)
      yield* pushRouted(parseErrorWithoutId)
      expect(yield* Fiber.join(diagnostics)).toEqual([expect.objectContaining({ _tag: "UnknownResponse", id: null })])
      expect(yield* t.pendingCount).toBe(2)

      yield* Deferred.succeed(release, undefined)
      expect(yield* Fiber.join(alone)).toMatchObject({ _tag: "RpcError", code: -32700, method: "waiting" })
      expect(yield* Fiber.join(first)).toMatchObject({ _tag: "NoResponse" })
      expect(yield* Fiber.join(second)).toMatchObject({ _tag: "NoResponse" })
      expect(yield* t.pendingCount).toBe(0)
    }))
})
