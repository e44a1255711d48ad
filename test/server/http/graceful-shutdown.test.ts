/**
 * Shutting down an HTTP server transport over real loopback HTTP: once its
 * scope starts closing, new requests get 503 with `Retry-After` and
 * `Connection: close`, the health endpoint says `draining`, a session's GET
 * stream and an open `subscriptions/listen` end at once, and the requests
 * already running (both eras) finish and are answered; then the listener
 * closes. Past `shutdownGracePeriod` the running handlers of both eras are
 * interrupted and each client gets an error instead of an answer it would
 * wait for, as the answer or on its stream (a legacy HTTP+SSE session's too).
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import { initializeBody, openLegacy, openSession, openSse, post, sseMessages } from "./helpers.ts"

const HANDSHAKE = "2025-11-25"
const MODERN = "2026-07-28"
const KEY = "s".repeat(32)

interface Probe {
  /** The calls the test makes (`calls`, one per era unless it says otherwise) are running. */
  readonly bothStarted: Deferred.Deferred<void>
  readonly release: Deferred.Deferred<void>
  /** Every running call was interrupted. */
  readonly interrupted: Deferred.Deferred<void>
  readonly calls: number
}

const makeProbe = (calls = 2) =>
  Effect.gen(function*() {
    return {
      bothStarted: yield* Deferred.make<void>(),
      release: yield* Deferred.make<void>(),
      interrupted: yield* Deferred.make<void>(),
      calls
    } satisfies Probe
  })

const server = (probe: Probe) => {
  let started = 0
  let interrupted = 0
  return McpServer.make({
    serverInfo: { name: "draining", version: "1.0.0" },
    capabilities: { tools: {}, resources: { subscribe: true } },
    requestStateKey: KEY
  }).pipe(
    McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [], ttlMs: 0, cacheScope: "private" })),
    McpServer.method("resources/subscribe", {}, () => Effect.succeed({})),
    McpServer.method("tools/call", {}, (params, ctx) =>
      Effect.gen(function*() {
        // "streaming" answers on a stream, opened by a progress notification before it waits.
        if ((params as { name?: unknown }).name === "streaming") yield* ctx.progress(1)
        if (++started === probe.calls) yield* Deferred.succeed(probe.bothStarted, undefined)
        yield* Deferred.await(probe.release)
        return { content: [{ type: "text", text: "finished" }] }
      }).pipe(Effect.onInterrupt(() =>
        ++interrupted === probe.calls ? Deferred.succeed(probe.interrupted, undefined) : Effect.void
      )))
  )
}

/** The server in a scope of its own, closed by the test. */
const start = (probe: Probe, options: HttpServerTransport.Options) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(McpServer.layerHttp(server(probe), { port: 0, ...options }), scope)
    const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
    return { scope, url, base: url.replace(/\/mcp$/, "") }
  })

const modern = (method: string, params: Record<string, unknown>, init: RequestInit = {}) => (url: string) => {
  const meta = RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: {} })
  const full = { ...params, _meta: { ...meta, ...(params._meta as Record<string, unknown> | undefined) } }
  return post(url, { jsonrpc: "2.0", id: 9, method, params: full }, RequestMeta.standardHeaders(MODERN, method, full), init)
}

const sessionHeaders = (session: string) => ({ "mcp-session-id": session, "mcp-protocol-version": HANDSHAKE })
const callBody = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "slow", arguments: {} } }

const answered = (res: Response) =>
  Effect.promise(async () => ({
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    connection: res.headers.get("connection"),
    body: await res.text()
  }))

describe("graceful shutdown of the HTTP server transport", () => {
  it.live("new requests get 503 + Retry-After, health says draining, streams end, running calls of both eras finish; then the listener closes", () =>
    Effect.gen(function*() {
      const probe = yield* makeProbe()
      const { base, scope, url } = yield* start(probe, { shutdownGracePeriod: "2 minutes" })
      const session = yield* Effect.promise(() => openSession(url, HANDSHAKE))
      const stream = yield* Effect.promise(() =>
        openSse(url, { method: "GET", headers: { ...sessionHeaders(session), accept: "text/event-stream" } })
      )
      expect(stream.response.status).toBe(200)
      const listen = yield* Effect.promise(() =>
        modern("subscriptions/listen", { notifications: { resourceSubscriptions: ["file:///x"] } })(url).then((response) => ({
          response,
          text: response.text()
        }))
      )
      expect(listen.response.status).toBe(200)
      // A JSON-only client (the answer comes as one JSON body) and a stateless-era call.
      const handshakeCall = Effect.runPromise(
        Effect.promise(() => post(url, callBody, { ...sessionHeaders(session), accept: "application/json" })).pipe(
          Effect.flatMap(answered)
        )
      )
      const modernCall = Effect.runPromise(
        Effect.promise(() => modern("tools/call", { name: "slow", arguments: {} })(url)).pipe(Effect.flatMap(answered))
      )
      yield* Deferred.await(probe.bothStarted)

      const closing = yield* Effect.forkDetach(Scope.close(scope, Exit.void))
      // The streams nothing here waits on end first: the GET stream and the listen (with its final reply).
      yield* Effect.promise(() => stream.reader!.done)
      expect(yield* Effect.promise(() => listen.text)).toContain(`"result"`)

      const refused = [
        yield* answered(yield* Effect.promise(() => post(url, { jsonrpc: "2.0", id: 3, method: "tools/list" }, sessionHeaders(session)))),
        yield* answered(yield* Effect.promise(() => modern("tools/list", {})(url))),
        yield* answered(yield* Effect.promise(() => fetch(`${base}/mcp/events`, { headers: { accept: "text/event-stream" } })))
      ]
      for (const r of refused) {
        expect(r.status).toBe(503)
        expect(r.retryAfter).toBe("1")
        expect(r.connection).toBe("close")
        expect(JSON.parse(r.body).error.message).toBe("Service unavailable: this server is shutting down")
      }
      const health = yield* answered(yield* Effect.promise(() => fetch(`${base}/mcp/health`)))
      expect(health.status).toBe(503)
      expect(JSON.parse(health.body)).toEqual({ status: "draining", transport: "sse" })

      yield* Deferred.succeed(probe.release, undefined)
      for (const call of [yield* Effect.promise(() => handshakeCall), yield* Effect.promise(() => modernCall)]) {
        expect(call.status).toBe(200)
        expect(JSON.parse(call.body).result.content[0].text).toBe("finished")
      }
      yield* Fiber.join(closing)
      expect(Deferred.isDoneUnsafe(probe.interrupted)).toBe(false)
      const after = yield* Effect.promise(() => fetch(`${base}/mcp/health`).then(() => "listening", () => "closed"))
      expect(after).toBe("closed")
    }), 60_000)

  it.live("past the grace period the running handlers of both eras are interrupted, and each client is told so, as its answer or on its stream, before the listener closes", () =>
    Effect.gen(function*() {
      const probe = yield* makeProbe(5)
      const { base, scope, url } = yield* start(probe, { shutdownGracePeriod: "200 millis" })
      const session = yield* Effect.promise(() => openSession(url, HANDSHAKE))
      const handshakeCall = Effect.runPromise(
        Effect.promise(() => post(url, callBody, { ...sessionHeaders(session), accept: "application/json" })).pipe(
          Effect.flatMap(answered)
        )
      )
      const handshakeStream = Effect.runPromise(
        Effect.promise(() =>
          post(url, { ...callBody, id: 3, params: { name: "streaming", arguments: {}, _meta: { progressToken: "p" } } }, sessionHeaders(session))
        ).pipe(Effect.flatMap(answered))
      )
      // Read to its end: a body cut by the listener's close (rather than ended) rejects.
      const modernCall = (name: string, extra: Record<string, unknown>) =>
        modern("tools/call", { name, arguments: {}, ...extra })(url).then(async (r) => ({
          status: r.status,
          contentType: r.headers.get("content-type"),
          body: await r.text()
        }))
      const modernJson = modernCall("slow", {})
      const modernStream = modernCall("streaming", { _meta: { progressToken: "p" } })
      // A legacy HTTP+SSE session, its answers on its GET stream.
      const legacy = yield* Effect.promise(async () => {
        const session = await openLegacy(base)
        await (await session.send(initializeBody(1, "2024-11-05"))).text()
        await session.reader.until((r) => r.messages().some((m) => m.id === 1))
        await (await session.send({ jsonrpc: "2.0", method: "notifications/initialized" })).text()
        await (await session.send({ ...callBody, id: 4 })).text()
        return session
      })
      yield* Deferred.await(probe.bothStarted)
      yield* Scope.close(scope, Exit.void)
      yield* Deferred.await(probe.interrupted)

      const shutDown = { code: -32603, message: "The server shut down before the request finished" }
      const call = yield* Effect.promise(() => handshakeCall)
      expect(call.status).toBe(200)
      expect(JSON.parse(call.body)).toEqual({ jsonrpc: "2.0", id: 2, error: shutDown })
      // One answering on its POST stream gets it as the stream's last event (else it would resume the
      // stream, here or on another instance, waiting for an answer nothing will give).
      const sessionStream = sseMessages((yield* Effect.promise(() => handshakeStream)).body)
      expect(sessionStream.map((e) => e.method ?? "answer")).toEqual(["notifications/progress", "answer"])
      expect(sessionStream[1]).toEqual({ jsonrpc: "2.0", id: 3, error: shutDown })
      // A stateless-era request waiting for its answer gets the same error as its answer,
      const json = yield* Effect.promise(() => modernJson)
      expect(json.contentType).toContain("application/json")
      expect(JSON.parse(json.body)).toEqual({ jsonrpc: "2.0", id: 9, error: shutDown })
      // and one answering on a stream as the stream's last event.
      const streamed = yield* Effect.promise(() => modernStream)
      expect(streamed.contentType).toContain("text/event-stream")
      const events = sseMessages(streamed.body)
      expect(events.map((e) => e.method ?? "answer")).toEqual(["notifications/progress", "answer"])
      expect(events[1]).toEqual({ jsonrpc: "2.0", id: 9, error: shutDown })
      // A legacy session's call gets it on the session's stream, before the stream ends.
      expect(yield* Effect.promise(() => legacy.reader.until((r) => r.ended))).toBe(true)
      expect(legacy.reader.messages().find((m) => m.id === 4)).toEqual({ jsonrpc: "2.0", id: 4, error: shutDown })
    }), 60_000)

  it.live("a server with nothing running shuts down at once, its health body unchanged until then", () =>
    Effect.gen(function*() {
      const probe = yield* makeProbe()
      const { base, scope } = yield* start(probe, { shutdownGracePeriod: "1 hour" })
      const health = yield* answered(yield* Effect.promise(() => fetch(`${base}/mcp/health`)))
      expect(health.status).toBe(200)
      expect(JSON.parse(health.body)).toEqual({ status: "ok", transport: "sse" })
      // Nothing to wait for: the grace period does not hold the close.
      yield* Scope.close(scope, Exit.void)
      const after = yield* Effect.promise(() => fetch(`${base}/mcp/health`).then(() => "listening", () => "closed"))
      expect(after).toBe("closed")
    }), 60_000)
})
