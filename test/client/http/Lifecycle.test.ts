/**
 * Closing a Streamable HTTP transport: in-flight calls are aborted and fail
 * with TransportClosed, then the session is ended with a DELETE — however the
 * scope closes (normally, by interruption, by a failing parent).
 */
import { describe, expect } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Scope, Stream, SubscriptionRef } from "effect"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as Server from "./MisbehavingServer.ts"
import { httpClients, liveWith } from "./httpClients.ts"

const isMethod = (method: string) => (r: Server.Received) => r.json?.method === method
const isDelete = (r: Server.Received) => r.verb === "DELETE"
const abandoned = (label: string) => (e: Server.LogEntry): e is Server.Abandoned =>
  e._tag === "Abandoned" && e.label === label

const hangingServer = Effect.gen(function*() {
  const server = yield* Server.make
  yield* server.setHandler((r, s) =>
    isMethod("hang")(r) ? s.withhold("hang") : Effect.succeed(r.verb === "GET" ? s.sse(Stream.never, { label: "listener" }) : undefined)
  )
  return server
})

const session = (server: Server.MisbehavingServer, options: Partial<StreamableHttp.Options> = {}) =>
  Effect.gen(function*() {
    const t = yield* StreamableHttp.make({ url: server.url, ...options })
    yield* t.request("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "0" } })
    yield* t.setProtocolVersion("2025-11-25")
    return t
  })

describe.each(httpClients)("closing the Streamable HTTP transport via %s", (_name, clientLayer) => {
  const live = liveWith(clientLayer, 15_000)

  live("normal close: pending calls fail with TransportClosed, listener and POST are aborted, then DELETE", () =>
    Effect.gen(function*() {
      const server = yield* hangingServer
      const scope = yield* Scope.make()
      const t = yield* session(server).pipe(Scope.provide(scope))
      yield* t.listen
      yield* server.waitForRequest((r) => r.verb === "GET")
      const pending = yield* Effect.forkChild(t.request("hang"))
      yield* server.waitForRequest(isMethod("hang"))
      yield* Scope.close(scope, Exit.void)

      const error = yield* Effect.flip(Fiber.join(pending))
      expect(error).toMatchObject({ _tag: "TransportClosed", reason: "transport scope closed" })
      const del = yield* server.waitForRequest(isDelete)
      expect(del.headers["mcp-session-id"]).toBe(Server.SESSION_ID)
      expect(del.headers["mcp-protocol-version"]).toBe("2025-11-25")
      yield* server.waitFor(abandoned("hang"))
      yield* server.waitFor(abandoned("listener"))
      // The calls were aborted before the DELETE went out.
      const log = server.log()
      const at = (p: (e: Server.LogEntry) => boolean) => log.findIndex(p)
      expect(at(abandoned("hang"))).toBeLessThan(at((e) => e._tag === "Received" && isDelete(e)))
      expect(at(abandoned("listener"))).toBeLessThan(at((e) => e._tag === "Received" && isDelete(e)))
      expect(yield* SubscriptionRef.get(t.state)).toMatchObject({ _tag: "Closed" })
      expect((yield* t.awaitClosed).reason).toBe("transport scope closed")
      const after = yield* Effect.flip(t.request("ping"))
      expect(after._tag).toBe("TransportClosed")
      expect(yield* t.pendingCount).toBe(0)
    }))

  live("Effect.scoped: the DELETE arrives when the block completes", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const result = yield* Effect.scoped(Effect.flatMap(session(server), (t) => t.request("tools/list")))
      expect(result).toEqual({ method: "tools/list", params: null })
      const del = yield* server.waitForRequest(isDelete)
      expect(del.headers["mcp-session-id"]).toBe(Server.SESSION_ID)
    }))

  live("interruption: the DELETE still arrives", () =>
    Effect.gen(function*() {
      const server = yield* hangingServer
      const fiber = yield* Effect.forkChild(Effect.scoped(Effect.flatMap(session(server), (t) => t.request("hang"))))
      yield* server.waitForRequest(isMethod("hang"))
      const exit = yield* Fiber.interrupt(fiber).pipe(Effect.andThen(Fiber.await(fiber)))
      expect(Exit.hasInterrupts(exit)).toBe(true)
      const del = yield* server.waitForRequest(isDelete)
      expect(del.headers["mcp-session-id"]).toBe(Server.SESSION_ID)
      yield* server.waitFor(abandoned("hang"))
    }))

  live("a failing parent: the DELETE still arrives and the failure is kept", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const exit = yield* Effect.exit(Effect.scoped(Effect.gen(function*() {
        const t = yield* session(server)
        yield* t.request("tools/list")
        return yield* Effect.fail("parent failed")
      })))
      expect(Exit.isFailure(exit) && Cause.squash(exit.cause)).toBe("parent failed")
      const del = yield* server.waitForRequest(isDelete)
      expect(del.headers["mcp-session-id"]).toBe(Server.SESSION_ID)
    }))

  live("a defect in the parent: the DELETE still arrives", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const exit = yield* Effect.exit(Effect.scoped(Effect.flatMap(session(server), () => Effect.die("boom"))))
      expect(Exit.hasDies(exit)).toBe(true)
      yield* server.waitForRequest(isDelete)
    }))

  live("the DELETE is bounded: a server that never answers it does not hold the close", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) => isDelete(r) ? s.withhold("delete") : Effect.succeed(undefined))
      yield* Effect.scoped(session(server, { closeTimeout: "200 millis" }))
      yield* server.waitForRequest(isDelete)
      yield* server.waitFor(abandoned("delete"))
    }))

  live("a DELETE answered 405 or 500 is ignored", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r) => Effect.succeed(isDelete(r) ? Server.status(405) : undefined))
      yield* Effect.scoped(session(server))
      yield* server.waitForRequest(isDelete)
      yield* server.setHandler((r) => Effect.succeed(isDelete(r) ? Server.status(500, "nope") : undefined))
      yield* Effect.scoped(session(server))
      expect(server.received("DELETE").length).toBe(2)
    }))

  live("no DELETE without a session, nor for an expired one", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      // A sessionless server: initialize without an id.
      yield* server.setHandler((r) =>
        Effect.succeed(isMethod("initialize")(r) ? Server.json(Server.result(r.json.id, { protocolVersion: "2025-11-25" })) : undefined)
      )
      yield* Effect.scoped(Effect.flatMap(session(server), (t) => t.request("ping")))
      // An expired session.
      yield* server.setHandler((r) => Effect.succeed(isMethod("ping")(r) ? Server.status(404, "gone") : undefined))
      const expired = yield* Effect.scoped(Effect.flatMap(session(server), (t) => Effect.flip(t.request("ping"))))
      expect(expired._tag).toBe("SessionExpired")
      // A final marker request, so that anything sent on close above has arrived before it.
      const done = yield* Deferred.make<void>()
      yield* server.setHandler((r) => isMethod("marker")(r) ? Effect.as(Deferred.succeed(done, undefined), undefined) : Effect.succeed(undefined))
      yield* Effect.scoped(Effect.flatMap(StreamableHttp.make({ url: server.url }), (t) => t.request("marker")))
      yield* Deferred.await(done)
      expect(server.received("DELETE")).toEqual([])
    }))
})
