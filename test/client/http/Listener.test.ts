/**
 * The standalone GET SSE listener of the Streamable HTTP client: started on
 * request or after `notifications/initialized`, quiet on 405, reconnecting
 * with `Last-Event-ID` at the server's `retry` pace or the user's schedule,
 * visibly failed (and harmless to POSTs) once the budget is spent.
 */
import { describe, expect } from "@effect/vitest"
import { Deferred, Effect, Fiber, Schedule, Stream, SubscriptionRef } from "effect"
import type { ConnectionState, Diagnostic } from "../../../src/client/ClientTransport.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as Server from "./MisbehavingServer.ts"
import { httpClients, liveWith } from "./httpClients.ts"

const fastRetry = Schedule.spaced("20 millis").pipe(Schedule.upTo({ times: 3 }))

const awaitRef = <A>(ref: SubscriptionRef.SubscriptionRef<A>, predicate: (a: A) => boolean) =>
  SubscriptionRef.changes(ref).pipe(
    Stream.filter(predicate),
    Stream.runHead,
    Effect.flatMap((o) => o._tag === "Some" ? Effect.succeed(o.value) : Effect.die("state stream ended"))
  )

const isGet = (r: Server.Received) => r.verb === "GET"

const connect = (server: Server.MisbehavingServer, options: Partial<StreamableHttp.Options> = {}) =>
  Effect.gen(function*() {
    const t = yield* StreamableHttp.make({ url: server.url, reconnectSchedule: fastRetry, ...options })
    yield* t.request("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "0" } })
    yield* t.setProtocolVersion("2025-11-25")
    return t
  })

/** Waits until the server has seen `count` GETs. */
const gets = (server: Server.MisbehavingServer, count: number) =>
  Effect.gen(function*() {
    let seen = 0
    yield* server.waitForRequest((r) => isGet(r) && ++seen === count)
    return server.received("GET")
  })

describe.each(httpClients)("the standalone GET listener via %s", (_name, clientLayer) => {
  const live = liveWith(clientLayer, 15_000)

  live("is opened after notifications/initialized when asked to; 405 disables it quietly", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const t = yield* connect(server, { listen: true })
      const diagnostics = yield* Stream.runCollect(Stream.take(t.diagnostics, 1)).pipe(Effect.forkChild({ startImmediately: true }))
      expect(server.received("GET")).toEqual([])
      yield* t.notify("notifications/initialized")
      const [get] = yield* gets(server, 1)
      expect(get!.headers["accept"]).toBe("text/event-stream")
      expect(get!.headers["mcp-session-id"]).toBe(Server.SESSION_ID)
      expect(get!.headers["mcp-protocol-version"]).toBe("2025-11-25")
      expect(get!.headers["last-event-id"]).toBeUndefined()
      expect(yield* awaitRef(t.listenerState, (s) => s._tag === "Disabled")).toEqual({ _tag: "Disabled", status: 405 })
      expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Ready")
      expect(yield* t.request("tools/list")).toEqual({ method: "tools/list", params: null })
      expect(server.received("GET").length).toBe(1)
      // Nothing was reported: a 405 is an answer, not a failure.
      expect(diagnostics.pollUnsafe()).toBeUndefined()
      yield* Fiber.interrupt(diagnostics)
    }))

  live("delivers notifications and server requests; replies go out by POST with the session", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const feed = yield* server.pushable()
      yield* server.setHandler((r, s) => Effect.succeed(isGet(r) ? s.sse(feed.stream) : undefined))
      const t = yield* connect(server)
      const notes = yield* Stream.runCollect(Stream.take(t.notifications, 2)).pipe(Effect.forkChild({ startImmediately: true }))
      yield* t.listen
      yield* t.listen // idempotent while running
      yield* feed.push(Server.event({ data: Server.notification("notifications/tools/list_changed") }))
      yield* feed.push(Server.event({ data: { jsonrpc: "2.0", id: 7, method: "ping" } }))
      yield* feed.push(Server.event({ data: "{broken json" }))
      yield* feed.push(Server.event({ data: Server.notification("notifications/resources/list_changed") }))
      expect((yield* Fiber.join(notes)).map((n) => n.method)).toEqual([
        "notifications/tools/list_changed",
        "notifications/resources/list_changed"
      ])
      const reply = yield* server.waitForRequest((r) => r.json?.id === 7 && "result" in r.json)
      expect(reply.json).toEqual({ jsonrpc: "2.0", id: 7, result: {} })
      expect(reply.headers["mcp-session-id"]).toBe(Server.SESSION_ID)
      expect(server.received("GET").length).toBe(1)
      expect(yield* SubscriptionRef.get(t.listenerState)).toEqual({ _tag: "Open" })
    }))

  live("reconnects after a cut with Last-Event-ID, and publishes Reconnecting with attempt and delay", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      let count = 0
      yield* server.setHandler((r, s) =>
        Effect.sync(() => {
          if (!isGet(r)) return undefined
          count++
          return count === 1
            ? s.sse(Server.cutAfter([Server.event({ id: "g-1", data: Server.notification("notifications/one") })]))
            : s.sse(Server.thenSilence([Server.event({ id: "g-2", data: Server.notification("notifications/two") })]))
        })
      )
      const t = yield* connect(server, { reconnectSchedule: Schedule.spaced("50 millis").pipe(Schedule.upTo({ times: 3 })) })
      const states = yield* SubscriptionRef.changes(t.state).pipe(
        Stream.takeUntil((s: ConnectionState) => s._tag === "Reconnecting"),
        Stream.runCollect,
        Effect.forkChild
      )
      const notes = yield* Stream.runCollect(Stream.take(t.notifications, 2)).pipe(Effect.forkChild({ startImmediately: true }))
      yield* t.listen
      const [first, second] = yield* gets(server, 2)
      expect(first!.headers["last-event-id"]).toBeUndefined()
      expect(second!.headers["last-event-id"]).toBe("g-1")
      expect((yield* Fiber.join(notes)).map((n) => n.method)).toEqual(["notifications/one", "notifications/two"])
      const seen = yield* Fiber.join(states)
      expect(seen.at(-1)).toEqual({ _tag: "Reconnecting", attempt: 1, delayMs: 50 })
      yield* awaitRef(t.state, (s) => s._tag === "Ready")
      expect(yield* SubscriptionRef.get(t.listenerState)).toEqual({ _tag: "Open" })
    }))

  live("honours the server's retry value before reconnecting (SEP-1699 polling)", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) =>
        Effect.succeed(
          isGet(r)
            ? s.sse(Stream.make(Server.event({ id: `poll-${server.received("GET").length}`, retry: 400, data: "" })))
            : undefined
        )
      )
      // The schedule alone would reconnect after 20 ms; the server asks for 400.
      const t = yield* connect(server)
      yield* t.listen
      const [first, second, third] = yield* gets(server, 3)
      expect(second!.headers["last-event-id"]).toBe("poll-1")
      expect(third!.headers["last-event-id"]).toBe("poll-2")
      expect(second!.at - first!.at).toBeGreaterThanOrEqual(395)
      expect(third!.at - second!.at).toBeGreaterThanOrEqual(395)
      // A stream that delivered its priming event counts as healthy: the budget never runs out.
      expect((yield* SubscriptionRef.get(t.listenerState))._tag).not.toBe("Failed")
    }))

  live("when the budget runs out the listener is Failed and reported, and POSTs keep working", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r) => Effect.succeed(isGet(r) ? Server.status(503, "listener down") : undefined))
      const t = yield* connect(server)
      const reported = yield* t.diagnostics.pipe(
        Stream.filter((d: Diagnostic) => d._tag === "ListenerError"),
        Stream.runHead,
        Effect.forkChild
      )
      yield* t.listen
      const failed = yield* awaitRef(t.listenerState, (s) => s._tag === "Failed")
      expect(failed).toMatchObject({ _tag: "Failed", error: { _tag: "HttpError", status: 503, body: "listener down" } })
      const diagnostic = yield* Fiber.join(reported)
      expect(diagnostic._tag === "Some" && diagnostic.value).toMatchObject({
        _tag: "ListenerError",
        error: { _tag: "HttpError", status: 503 }
      })
      // First try plus three retries from the schedule, then nothing more.
      expect(server.received("GET").length).toBe(4)
      expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Ready")
      expect(yield* t.request("tools/list")).toEqual({ method: "tools/list", params: null })
      // Asking again starts a fresh listener.
      yield* t.listen
      yield* gets(server, 5)
    }))

  live("a dead (silent) stream is noticed by the idle timeout and reconnected", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r, s) =>
        Effect.succeed(isGet(r) ? s.sse(Server.thenSilence([Server.event({ id: "s-1", data: "" })]), { label: "silent" }) : undefined)
      )
      const t = yield* connect(server, { sseIdleTimeout: "200 millis" })
      yield* t.listen
      const [, second] = yield* gets(server, 2)
      expect(second!.headers["last-event-id"]).toBe("s-1")
      yield* server.waitFor((e): e is Server.Abandoned => e._tag === "Abandoned" && e.label === "silent")
    }))

  live("a quiet stream with keep-alives is never cut by the idle timeout", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const ticks = yield* Deferred.make<void>()
      yield* server.setHandler((r, s) =>
        Effect.succeed(
          isGet(r)
            ? s.sse(
              Stream.fromSchedule(Schedule.spaced("50 millis")).pipe(
                Stream.tap((n) => n === 15 ? Deferred.succeed(ticks, undefined) : Effect.void),
                Stream.map(() => ": keep-alive\n\n")
              )
            )
            : undefined
        )
      )
      const t = yield* connect(server, { sseIdleTimeout: "500 millis" })
      yield* t.listen
      yield* Deferred.await(ticks)
      // 16 keep-alives over ~800 ms, longer than the idle timeout: still the first GET.
      expect(server.received("GET").length).toBe(1)
      expect(yield* SubscriptionRef.get(t.listenerState)).toEqual({ _tag: "Open" })
    }))

  live("an expired session stops the listener and marks the transport SessionExpired", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      yield* server.setHandler((r) => Effect.succeed(isGet(r) ? Server.status(404, "unknown session") : undefined))
      const t = yield* connect(server)
      yield* t.listen
      const failed = yield* awaitRef(t.listenerState, (s) => s._tag === "Failed")
      expect(failed).toMatchObject({ error: { _tag: "SessionExpired", sessionId: Server.SESSION_ID } })
      expect(yield* SubscriptionRef.get(t.state)).toMatchObject({ _tag: "SessionExpired" })
      expect(server.received("GET").length).toBe(1)
    }))

  live("the conformance sse-retry shape: SSE initialize, 202 initialized, GET polled at the retry pace", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      let events = 0
      yield* server.setHandler((r, s) =>
        Effect.sync(() => {
          if (r.json?.method === "initialize") {
            return s.sse(Stream.make(
              Server.event({ id: `event-${++events}`, retry: 500, data: "" }),
              Server.event({
                event: "message",
                id: `event-${++events}`,
                data: Server.result(r.json.id, { protocolVersion: "2025-06-18", capabilities: {} })
              })
            ))
          }
          if (isGet(r)) return s.sse(Stream.make(Server.event({ id: `event-${++events}`, retry: 500, data: "" })))
          return undefined
        })
      )
      const t = yield* StreamableHttp.make({ url: server.url, listen: true })
      expect(yield* t.request("initialize", {})).toMatchObject({ protocolVersion: "2025-06-18" })
      yield* t.setProtocolVersion("2025-06-18")
      yield* t.notify("notifications/initialized")
      const [first, second] = yield* gets(server, 2)
      expect(second!.headers["last-event-id"]).toBe("event-3")
      expect(second!.at - first!.at).toBeGreaterThanOrEqual(495)
      expect(first!.headers["mcp-protocol-version"]).toBe("2025-06-18")
    }))
})
