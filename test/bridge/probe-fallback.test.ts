/**
 * A client of both eras in front of the bridge on a connection (stdio, here
 * the in-memory pair) probes with `server/discover`; when no answer comes in
 * its probe timeout it gives the probe up without a cancel and sends
 * `initialize`. What the bridge opened to answer the probe must not outlive
 * it: the upstream ends up with the one session of the client's handshake.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Scope } from "effect"
import * as Bridge from "../../src/bridge/Bridge.ts"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import type { ClientTransportShape } from "../../src/client/ClientTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import { serveHttp as serveBothEras } from "../fixtures/peers/our-server.ts"
import { serve } from "../interop/InteropServer.ts"
import { eventually } from "./helpers.ts"

const methodOf = (text: string): unknown => (JSON.parse(text) as { method?: unknown }).method
const idOf = (text: string): unknown => (JSON.parse(text) as { id?: unknown }).id

/**
 * The probe's answer never reaches the client (it comes too late), and the
 * client's `initialize` reaches the bridge only once the bridge has answered
 * the probe: what a loaded machine does to a probe timeout.
 */
const lateProbeAnswer = Effect.gen(function*() {
  const answered = yield* Deferred.make<void>()
  let probeId: unknown
  const interceptor: InMemoryTransport.WireInterceptor = {
    transmit: (direction, text, deliver) =>
      Effect.suspend(() => {
        if (direction === "client-to-server") {
          const method = methodOf(text)
          if (method === "server/discover") probeId = idOf(text)
          return method === "initialize" ? Effect.andThen(Deferred.await(answered), deliver(text)) : deliver(text)
        }
        return probeId !== undefined && idOf(text) === probeId ? Deferred.succeed(answered, undefined) : deliver(text)
      })
  }
  return { interceptor, answered }
})

/** The bridge in this process, connected first as `runStdio` does, with `connect` opening upstream connections. */
const bridgeTo = <R>(connect: Effect.Effect<ClientTransportShape, unknown, R>) =>
  Effect.gen(function*() {
    const bridge = yield* Bridge.make({ connect })
    yield* bridge.upstream()
    return bridge
  })

describe("bridge: a probe the client gave up", { timeout: 60_000 }, () => {
  it.live("answered too late by the stateless front: the client's initialize closes the pool opened for it; one upstream session, which ends with the client", () =>
    Effect.gen(function*() {
      const server = yield* serve({ eras: "legacy" })
      const scope = yield* Scope.make()
      const bridge = yield* bridgeTo(StreamableHttpClientTransport.make({ url: server.url })).pipe(Scope.provide(scope))
      const late = yield* lateProbeAnswer
      const client = yield* McpClient.connect(
        InMemoryTransport.make(bridge.handler, { interceptor: late.interceptor }),
        { probeTimeout: "100 millis" }
      ).pipe(Scope.provide(scope))
      expect(client.era).toBe("legacy")
      expect(yield* Deferred.isDone(late.answered)).toBe(true)
      yield* client.ping()
      expect(yield* server.transport.sessionIds).toHaveLength(1)
      expect(yield* bridge.upstreams).toBe(1)
      yield* Scope.close(scope, Exit.void)
      expect(yield* eventually(server.transport.sessionIds, (ids) => ids.length === 0)).toEqual([])
    }).pipe(Effect.scoped, Effect.provide([NodeServices.layer, NodeHttpClient.layerUndici])))

  it.live("while the bridge still probes the upstream: the probe's request is interrupted, no pool is opened, the upstream's verdict stays", () =>
    Effect.gen(function*() {
      const server = yield* serve({ eras: "legacy" })
      const scope = yield* Scope.make()
      // The upstream's answer to the probe waits for the client's initialize to be forwarded upstream.
      const initializing = yield* Deferred.make<void>()
      let probes = 0
      const connect = Effect.map(StreamableHttpClientTransport.make({ url: server.url }), (t): ClientTransportShape => ({
        ...t,
        request: (method, params, options) =>
          method === "server/discover"
            ? Effect.andThen(Effect.sync(() => probes++), Effect.andThen(Deferred.await(initializing), t.request(method, params, options)))
            : method === "initialize"
            ? Effect.andThen(Deferred.succeed(initializing, undefined), t.request(method, params, options))
            : t.request(method, params, options)
      }))
      const bridge = yield* bridgeTo(connect).pipe(Scope.provide(scope))
      const client = yield* McpClient.connect(InMemoryTransport.make(bridge.handler), { probeTimeout: "1 millis" }).pipe(
        Scope.provide(scope)
      )
      expect(client.era).toBe("legacy")
      yield* client.ping()
      expect(yield* server.transport.sessionIds).toHaveLength(1)
      expect(yield* bridge.upstreams).toBe(1)
      // A later request of the stateless era finds the verdict the probe got: not probed again.
      const modern = yield* McpClient.connect(InMemoryTransport.make(bridge.handler), { protocol: "2026-07-28" }).pipe(
        Effect.exit,
        Scope.provide(scope)
      )
      expect(probes).toBe(1)
      expect(Exit.isSuccess(modern)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect(yield* eventually(server.transport.sessionIds, (ids) => ids.length === 0)).toEqual([])
    }).pipe(Effect.scoped, Effect.provide([NodeServices.layer, NodeHttpClient.layerUndici])))

  it.live("a server of both eras: the connection kept for the stateless era is closed; the handshake's upstream is the one left", () =>
    Effect.gen(function*() {
      const server = yield* serveBothEras()
      const scope = yield* Scope.make()
      const bridge = yield* bridgeTo(StreamableHttpClientTransport.make({ url: server.url })).pipe(Scope.provide(scope))
      const late = yield* lateProbeAnswer
      const client = yield* McpClient.connect(
        InMemoryTransport.make(bridge.handler, { interceptor: late.interceptor }),
        { probeTimeout: "100 millis" }
      ).pipe(Scope.provide(scope))
      expect(client.era).toBe("legacy")
      yield* client.ping()
      expect(yield* server.transport.sessionIds).toHaveLength(1)
      expect(yield* bridge.upstreams).toBe(1)
      yield* Scope.close(scope, Exit.void)
      expect(yield* eventually(server.transport.sessionIds, (ids) => ids.length === 0)).toEqual([])
    }).pipe(Effect.scoped, Effect.provide([NodeServices.layer, NodeHttpClient.layerUndici])))
})
