import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope, Stream, SubscriptionRef } from "effect"
import { TestClock } from "effect/testing"
import { ClientTransport } from "../../src/client/ClientTransport.ts"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as JsonRpc from "../../src/JsonRpc.ts"
import { RpcError } from "../../src/McpError.ts"
import type { Handler } from "../../src/server/Handler.ts"
import { malformedResponses, malformedShapeNames, parseErrorWithoutId } from "../fixtures/malformed-responses.ts"

/** echo → params; fail → handler failure; error → JSON-RPC error; hang → never answers. */
const handler = (seen: Array<JsonRpc.JsonRpcNotification> = []): Handler => (m) => {
  if (!("id" in m)) {
    seen.push(m)
    return Effect.succeed(null)
  }
  switch (m.method) {
    case "echo":
      return Effect.succeed(JsonRpc.success(m.id, m.params ?? {}))
    case "fail":
      return Effect.fail("boom")
    case "error":
      return Effect.succeed(JsonRpc.failure(m.id, -32002, "Resource not found", { uri: "x" }))
    case "hang":
      return Effect.never
    default:
      return Effect.succeed(JsonRpc.methodNotFound(m.id, m.method))
  }
}

describe("InMemoryTransport", () => {
  it.effect("round-trips requests and notifications and reports Ready", () =>
    Effect.gen(function*() {
      const seen: Array<JsonRpc.JsonRpcNotification> = []
      const client = yield* InMemoryTransport.make(handler(seen))
      expect(client.kind).toBe("in-memory")
      expect((yield* SubscriptionRef.get(client.state))._tag).toBe("Ready")
      expect(yield* client.request("echo", { a: [1, 2] })).toEqual({ a: [1, 2] })
      yield* client.notify("notifications/initialized")
      // The notification reaches the handler before the next request's reply comes back.
      yield* client.request("echo", {})
      expect(seen.map((n) => n.method)).toEqual(["notifications/initialized"])
      expect(yield* client.pendingCount).toBe(0)
    }))

  it.effect("maps JSON-RPC errors and handler failures to RpcError", () =>
    Effect.gen(function*() {
      const client = yield* InMemoryTransport.make(handler())
      const e1 = yield* Effect.flip(client.request("error"))
      expect(e1).toBeInstanceOf(RpcError)
      expect(e1).toMatchObject({ code: -32002, rpcMessage: "Resource not found", data: { uri: "x" } })
      const e2 = yield* Effect.flip(client.request("fail"))
      expect(e2).toMatchObject({ _tag: "RpcError", code: -32603, rpcMessage: "Internal error" })
      const e3 = yield* Effect.flip(client.request("nope"))
      expect(e3).toMatchObject({ _tag: "RpcError", code: -32601 })
    }))

  it.effect("passes messages as JSON text: no shared objects, JSON semantics for odd values", () =>
    Effect.gen(function*() {
      let received: unknown
      const keeper: Handler = (m) =>
        Effect.sync(() => {
          received = m.params
          return "id" in m ? JsonRpc.success(m.id, m.params) : null
        })
      const client = yield* InMemoryTransport.make(keeper)
      const params = { list: [1], when: new Date(0), gone: undefined }
      const result = yield* client.request("echo", params) as Effect.Effect<{ list: Array<number> }>
      expect(received).not.toBe(params)
      expect(received).toEqual({ list: [1], when: "1970-01-01T00:00:00.000Z" })
      // Mutating what either side holds does not reach the other.
      params.list.push(2)
      expect(received).toEqual({ list: [1], when: "1970-01-01T00:00:00.000Z" })
      result.list.push(3)
      expect((received as { list: Array<number> }).list).toEqual([1])
    }))

  it.effect("refuses params JSON cannot carry: MalformedMessage for requests, a defect for notifications", () =>
    Effect.gen(function*() {
      const client = yield* InMemoryTransport.make(handler())
      const e = yield* Effect.flip(client.request("echo", { n: 1n }))
      expect(e._tag).toBe("MalformedMessage")
      const exit = yield* Effect.exit(client.notify("n", { n: 1n }))
      expect(Exit.isFailure(exit) && exit.cause.reasons.some((r) => r._tag === "Die")).toBe(true)
      expect(yield* client.pendingCount).toBe(0)
    }))

  it.effect("server-initiated notifications reach the notifications stream, requests reach the request handler", () =>
    Effect.gen(function*() {
      const pair = yield* InMemoryTransport.makePair(handler())
      const got = yield* pair.client.notifications.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild({ startImmediately: true }))
      yield* pair.server.context.notify("notifications/tools/list_changed", { x: 1 })
      expect(yield* Fiber.join(got)).toEqual([{ jsonrpc: "2.0", method: "notifications/tools/list_changed", params: { x: 1 } }])
      // Default client handler: ping → {}, anything else → -32601.
      expect(yield* pair.server.context.request("ping")).toEqual({})
      const e = yield* Effect.flip(pair.server.context.request("roots/list"))
      expect(e).toMatchObject({ _tag: "RpcError", code: -32601 })
      yield* pair.client.setRequestHandler((r) =>
        r.method === "roots/list" ? Effect.succeed({ roots: [] }) : Effect.fail(new RpcError({ code: -1, rpcMessage: "no" }))
      )
      expect(yield* pair.server.context.request("roots/list")).toEqual({ roots: [] })
    }))

  it.effect("a timeout fails with RequestTimeout, cancels the handler at the server and leaves nothing pending", () =>
    Effect.gen(function*() {
      const interrupted = yield* Deferred.make<void>()
      const started = yield* Deferred.make<void>()
      const seen: Array<string> = []
      const slow: Handler = (m) =>
        "id" in m
          ? Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
          )
          : Effect.sync(() => void seen.push(m.method)).pipe(Effect.as(null))
      const pair = yield* InMemoryTransport.makePair(slow, { timeout: "2 seconds" })
      const call = yield* pair.client.request("work").pipe(Effect.flip, Effect.forkChild)
      yield* Deferred.await(started)
      expect(yield* pair.client.pendingCount).toBe(1)
      yield* TestClock.adjust("2 seconds")
      const error = yield* Fiber.join(call)
      expect(error).toMatchObject({ _tag: "RequestTimeout", method: "work", timeoutMs: 2000 })
      yield* Deferred.await(interrupted)
      expect(seen).toEqual(["notifications/cancelled"])
      expect(yield* pair.client.pendingCount).toBe(0)
      expect(yield* pair.server.inFlight).toBe(0)
    }))

  it.effect("interrupting the caller cancels the request at the server", () =>
    Effect.gen(function*() {
      const interrupted = yield* Deferred.make<void>()
      const started = yield* Deferred.make<void>()
      const slow: Handler = (m) =>
        "id" in m
          ? Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
          )
          : Effect.succeed(null)
      const client = yield* InMemoryTransport.make(slow)
      const call = yield* client.request("work").pipe(Effect.forkChild)
      yield* Deferred.await(started)
      yield* Fiber.interrupt(call)
      yield* Deferred.await(interrupted)
      expect(yield* client.pendingCount).toBe(0)
    }))

  it.effect("kill: pending and later requests fail with TransportClosed and the state becomes Closed", () =>
    Effect.gen(function*() {
      const pair = yield* InMemoryTransport.makePair(handler())
      const call = yield* pair.client.request("hang").pipe(Effect.flip, Effect.forkChild({ startImmediately: true }))
      yield* Effect.yieldNow
      yield* pair.server.kill("crashed")
      expect(yield* Fiber.join(call)).toMatchObject({ _tag: "TransportClosed", reason: "crashed" })
      expect(yield* Effect.flip(pair.client.request("echo"))).toMatchObject({ _tag: "TransportClosed" })
      expect(yield* Effect.flip(pair.client.notify("n"))).toMatchObject({ _tag: "TransportClosed" })
      expect((yield* pair.client.awaitClosed).reason).toBe("crashed")
      expect((yield* SubscriptionRef.get(pair.client.state))._tag).toBe("Closed")
      expect(yield* pair.client.pendingCount).toBe(0)
      expect(yield* Effect.flip(pair.server.context.notify("n"))).toMatchObject({ _tag: "TransportClosed" })
    }))

  it.effect("closing the scope fails pending requests with TransportClosed", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const client = yield* InMemoryTransport.make(handler()).pipe(Scope.provide(scope))
      const call = yield* client.request("hang").pipe(Effect.flip, Effect.forkChild({ startImmediately: true }))
      yield* Effect.yieldNow
      yield* Scope.close(scope, Exit.void)
      expect(yield* Fiber.join(call)).toMatchObject({ _tag: "TransportClosed" })
      expect(yield* client.pendingCount).toBe(0)
    }))

  it.effect("size limits: an outgoing message over the limit fails with MessageTooLarge, an incoming one is skipped", () =>
    Effect.gen(function*() {
      const big: Handler = (m) =>
        "id" in m ? Effect.succeed(JsonRpc.success(m.id, { data: "x".repeat(5000) })) : Effect.succeed(null)
      const pair = yield* InMemoryTransport.makePair(big, { maxMessageBytes: 1000, timeout: "1 second" })
      const e = yield* Effect.flip(pair.client.request("echo", { data: "y".repeat(2000) }))
      expect(e).toMatchObject({ _tag: "MessageTooLarge", direction: "outgoing", limit: 1000 })
      const diagnostics = yield* pair.client.diagnostics.pipe(
        Stream.take(1),
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      const call = yield* pair.client.request("big").pipe(Effect.flip, Effect.forkChild)
      expect(yield* Fiber.join(diagnostics)).toEqual([expect.objectContaining({ _tag: "MessageTooLarge", limit: 1000 })])
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(call)).toMatchObject({ _tag: "RequestTimeout" })
    }))

  describe("malformed answers to pending requests", () => {
    /** malformed → the broken answer `params.shape` names; parse-error → an error without id; hang → nothing. */
    const misbehaving: Handler = (m) => {
      if (!("id" in m)) return Effect.succeed(null)
      switch (m.method) {
        case "malformed": {
          const shape = malformedResponses[(m.params as { shape: string }).shape]!
          return Effect.succeed(shape.answer(m.id) as JsonRpc.JsonRpcResponse)
        }
        case "parse-error":
          return Effect.succeed(parseErrorWithoutId as JsonRpc.JsonRpcResponse)
        default:
          return Effect.never
      }
    }
    // The TestClock never moves here: a request left to its timeout shows as the test timing out.
    const patient = { timeout: "1 hour" } as const

    it.effect("each malformed shape fails its request at once with MalformedMessage", () =>
      Effect.gen(function*() {
        const client = yield* InMemoryTransport.make(misbehaving, patient)
        for (const shape of malformedShapeNames) {
          const error = yield* Effect.flip(client.request("malformed", { shape }))
          expect(error, shape).toMatchObject({
            _tag: "MalformedMessage",
            reason: malformedResponses[shape]!.reason,
            method: "malformed"
          })
          const id = (error as { id: number }).id
          expect(JSON.parse((error as { text: string }).text), shape).toEqual(malformedResponses[shape]!.answer(id))
          expect(yield* client.pendingCount).toBe(0)
        }
      }), 10_000)

    it.effect("a parse error without an id fails the one pending request; with two pending it is a diagnostic", () =>
      Effect.gen(function*() {
        const client = yield* InMemoryTransport.make(misbehaving, patient)
        const alone = yield* Effect.flip(client.request("parse-error"))
        expect(alone).toMatchObject({ _tag: "RpcError", code: -32700, method: "parse-error" })
        expect(yield* client.pendingCount).toBe(0)

        const diagnostics = yield* client.diagnostics.pipe(
          Stream.take(1),
          Stream.runCollect,
          Effect.forkChild({ startImmediately: true })
        )
        const hanging = yield* client.request("hang").pipe(Effect.forkChild({ startImmediately: true }))
        const unanswered = yield* client.request("parse-error").pipe(Effect.forkChild({ startImmediately: true }))
        expect(yield* Fiber.join(diagnostics)).toEqual([expect.objectContaining({ _tag: "UnknownResponse", id: null })])
        expect(yield* client.pendingCount).toBe(2)
        yield* Fiber.interrupt(hanging)
        yield* Fiber.interrupt(unanswered)
        expect(yield* client.pendingCount).toBe(0)
      }), 10_000)
  })

  it.effect("layer provides ClientTransport", () =>
    Effect.gen(function*() {
      const transport = yield* ClientTransport
      expect(yield* transport.request("echo", { ok: true })).toEqual({ ok: true })
    }).pipe(Effect.provide(InMemoryTransport.layer(handler()))))

  it.effect("a server-side interceptor sees every frame in both directions", () =>
    Effect.gen(function*() {
      const frames: Array<[InMemoryTransport.Direction, string]> = []
      const client = yield* InMemoryTransport.make(handler(), {
        interceptor: {
          transmit: (direction, text, deliver) =>
            Effect.andThen(Effect.sync(() => void frames.push([direction, text])), deliver(text))
        }
      })
      yield* client.request("echo", { n: 1 })
      expect(frames).toEqual([
        ["client-to-server", JSON.stringify(JsonRpc.request(1, "echo", { n: 1 }))],
        ["server-to-client", JSON.stringify(JsonRpc.success(1, { n: 1 }))]
      ])
    }))
})
