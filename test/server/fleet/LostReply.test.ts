/**
 * A handshake-era POST whose work fails before it replies, in a fleet
 * (a session registry, an in-flight registry and the store's availability,
 * in memory here, each made to fail on demand): a request is never
 * answered with an empty 202. The shared store failing under the work
 * (a `RedisError`) is 503 with `Retry-After`, and an `initialize` so
 * answered leaves no session behind; any other failure is a JSON-RPC
 * -32603 with the request's id, the other replies of a batch intact. A
 * POST of notifications alone is still 202. Answered on an SSE stream (its
 * 200 already sent), each request left unanswered gets -32603 there, the
 * store's failure included, or the shutdown's error while draining; a
 * request the client cancelled still gets nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { RedisError } from "effect/persistence/Redis"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import { Availability } from "../../../src/server/Availability.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import { InFlight, type InFlightShape, stoppedResponse } from "../../../src/server/InFlight.ts"
import { LeaseLost } from "../../../src/server/InstanceLease.ts"
import { SessionRegistry } from "../../../src/server/SessionRegistry.ts"
import * as MemorySessionRegistry from "../../fixtures/MemorySessionRegistry.ts"
import { eventually, initializeBody, openSession, openSse, post } from "../http/helpers.ts"

const RETRY_AFTER = 7

/** Where a test holds the handler: `slow` runs until cancelled, `logging/setLevel` waits for `release` while `holdLevel`. */
interface Gate {
  readonly slowStarted: Deferred.Deferred<void>
  readonly release: Deferred.Deferred<void>
}

/**
 * Answers every request: `initialize` with the revision asked for, anything
 * else with `{}` (after a progress notification when its params say
 * `notify`); `slow` never (until cancelled).
 */
const handler = (gate: Gate, faults: Faults): Handler => (message, context) => {
  if (!("id" in message)) return Effect.succeed(null)
  if (message.method === "slow") return Effect.andThen(Deferred.succeed(gate.slowStarted, undefined), Effect.never)
  if ((message.params as { notify?: unknown } | undefined)?.notify === true) {
    const { notify: _, ...params } = message.params as Record<string, unknown>
    return Effect.andThen(
      context.notify("notifications/progress", { progressToken: "p", progress: 1 }),
      handler(gate, faults)({ ...message, params }, context)
    )
  }
  const reply = Effect.succeed(
    message.method === "initialize"
      ? JsonRpc.success(message.id, {
        protocolVersion: (message.params as { protocolVersion: string }).protocolVersion,
        capabilities: { tools: {}, logging: {} },
        serverInfo: { name: "lost-reply", version: "1.0.0" }
      })
      : JsonRpc.success(message.id, {})
  )
  return message.method === "logging/setLevel" && faults.holdLevel ? Effect.andThen(Deferred.await(gate.release), reply) : reply
}

/** What the fleet's services do when asked; `undefined`: they work. */
interface Faults {
  /** The in-flight registry's `run` dies with it (as the Redis one does on a command that fails). */
  inFlight: unknown
  /** The session registry's `create` dies with it. */
  create: unknown
  /** The session registry's `update` dies with it. */
  update: unknown
  /** `logging/setLevel` waits for the gate's `release`. */
  holdLevel: boolean
  /** The in-flight registry refuses the work: this instance lost its lease. */
  leaseLost: boolean
}

const serve = (options: HttpServerTransport.Options = {}) => Effect.gen(function*() {
  const faults: Faults = { inFlight: undefined, create: undefined, update: undefined, holdLevel: false, leaseLost: false }
  const gate: Gate = { slowStarted: yield* Deferred.make<void>(), release: yield* Deferred.make<void>() }
  const registry = MemorySessionRegistry.make(faults)
  const inFlight: InFlightShape = {
    run: (_entries, work) =>
      faults.leaseLost
        ? Effect.fail(new LeaseLost({ instanceId: "lost" }))
        : faults.inFlight !== undefined
        ? Effect.die(faults.inFlight)
        : work
  }
  const context = yield* Layer.build(
    HttpServerTransport.layer(handler(gate, faults), { port: 0, ...options }).pipe(
      Layer.provide(Layer.mergeAll(
        Layer.succeed(Availability, { available: () => true, retryAfterSeconds: RETRY_AFTER }),
        Layer.succeed(SessionRegistry, registry),
        Layer.succeed(InFlight, inFlight)
      ))
    )
  )
  const transport = Context.get(context, HttpServerTransport.HttpServerTransport)
  return { url: Option.getOrThrow(transport.url), transport, faults, gate }
})

const read = (response: Promise<Response>) =>
  Effect.promise(async () => {
    const res = await response
    return { status: res.status, headers: res.headers, body: await res.text() }
  })

const storeDown = () => new RedisError({ cause: new Error("Command timed out") })

describe("a POST whose work fails before it replies", () => {
  it.live("the shared store failing under it: 503 with Retry-After, for a call and for an initialize (no session left)", () =>
    Effect.gen(function*() {
      const { faults, transport, url } = yield* serve()
      const session = yield* Effect.promise(() => openSession(url))
      const headers = { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
      faults.inFlight = storeDown()

      const call = yield* read(post(url, { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "x" } }, headers))
      expect(call.status).toBe(503)
      expect(call.headers.get("retry-after")).toBe(String(RETRY_AFTER))
      expect(JSON.parse(call.body).error.message).toBe("Service unavailable: the shared store cannot be reached")

      const initialize = yield* read(post(url, initializeBody(4)))
      expect(initialize.status).toBe(503)
      expect(initialize.headers.get("retry-after")).toBe(String(RETRY_AFTER))
      expect(initialize.headers.get("mcp-session-id")).toBeNull()
      expect(yield* transport.sessionIds).toEqual([session])

      // The record of a new session failing the same way.
      faults.inFlight = undefined
      faults.create = storeDown()
      const unrecorded = yield* read(post(url, initializeBody(5)))
      expect(unrecorded.status).toBe(503)
      expect(unrecorded.headers.get("retry-after")).toBe(String(RETRY_AFTER))
      expect(yield* transport.sessionIds).toEqual([session])

      faults.create = undefined
      const later = yield* read(post(url, { jsonrpc: "2.0", id: 6, method: "tools/call", params: { name: "x" } }, headers))
      expect(later.status).toBe(200)
      expect(JSON.parse(later.body)).toEqual({ jsonrpc: "2.0", id: 6, result: {} })
    }).pipe(Effect.scoped), 30_000)

  it.live("another defect: -32603 with the request's id, the batch's other replies intact; a lost lease answers the batch's unrecorded entries too; notifications alone still 202", () =>
    Effect.gen(function*() {
      const { faults, transport, url } = yield* serve()
      const session = yield* Effect.promise(() => openSession(url, "2025-03-26"))
      const headers = { "mcp-session-id": session, "mcp-protocol-version": "2025-03-26" }
      faults.update = new Error("the level's record broke")

      const single = yield* read(post(url, { jsonrpc: "2.0", id: "lvl", method: "logging/setLevel", params: { level: "debug" } }, headers))
      expect(single.status).toBe(200)
      expect(JSON.parse(single.body)).toMatchObject({ jsonrpc: "2.0", id: "lvl", error: { code: JsonRpc.ErrorCode.InternalError } })

      const batch = yield* read(post(url, [
        { jsonrpc: "2.0", id: 10, method: "logging/setLevel", params: { level: "info" } },
        { jsonrpc: "2.0", id: 11, method: "tools/call", params: { name: "x" } },
        { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } }
      ], headers))
      expect(batch.status).toBe(200)
      const replies = JSON.parse(batch.body) as Array<JsonRpc.JsonRpcResponse>
      expect(replies).toHaveLength(2)
      expect(replies.find((r) => r.id === 11)).toEqual({ jsonrpc: "2.0", id: 11, result: {} })
      expect(replies.find((r) => r.id === 10)).toMatchObject({ error: { code: JsonRpc.ErrorCode.InternalError } })

      // The instance's lease lost: the recorded request gets the refusal, the batch's invalid entry its own answer.
      faults.update = undefined
      faults.leaseLost = true
      const refused = yield* read(post(url, [
        { jsonrpc: "2.0", id: 20, method: "tools/call", params: { name: "x" } },
        { jsonrpc: "2.0", id: 21 },
        { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } }
      ], headers))
      faults.leaseLost = false
      expect(refused.status).toBe(200)
      const answers = JSON.parse(refused.body) as Array<JsonRpc.JsonRpcResponse>
      expect(answers).toHaveLength(2)
      expect(answers.find((r) => r.id === 20)).toEqual(stoppedResponse(20))
      expect(answers.find((r) => r.id === 21)).toMatchObject({ error: { code: JsonRpc.ErrorCode.InvalidRequest } })

      // The session's record failing otherwise than with the store: the initialize's error, and no session.
      faults.create = new Error("the record broke")
      const initialize = yield* read(post(url, initializeBody("init")))
      expect(initialize.status).toBe(200)
      expect(JSON.parse(initialize.body)).toMatchObject({ id: "init", error: { code: JsonRpc.ErrorCode.InternalError } })
      expect(initialize.headers.get("mcp-session-id")).toBeNull()
      expect(yield* transport.sessionIds).toEqual([session])

      const notified = yield* read(post(url, { jsonrpc: "2.0", method: "notifications/roots/list_changed" }, headers))
      expect(notified.status).toBe(202)
      expect(notified.body).toBe("")
    }).pipe(Effect.scoped), 30_000)
})

const sseOnly = { "content-type": "application/json", accept: "text/event-stream" }
const both = { "content-type": "application/json", accept: "application/json, text/event-stream" }

/** A POST answered with an SSE stream, read to its end: its status, content type and messages. */
const streamed = (url: string, body: unknown, headers: Record<string, string>) =>
  Effect.promise(async () => {
    const { reader, response } = await openSse(url, { method: "POST", headers, body: JSON.stringify(body) })
    if (reader === undefined) return { status: response.status, contentType: response.headers.get("content-type"), messages: [] }
    await reader.done
    return { status: response.status, contentType: reader.response.headers.get("content-type"), messages: reader.messages() }
  })

const internalError = (id: JsonRpc.RequestId) => ({ jsonrpc: "2.0", id, error: { code: JsonRpc.ErrorCode.InternalError, message: "Internal error" } })

const toolCall = (id: JsonRpc.RequestId) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "x" } })

/** A stream that carried nothing but the -32603 owed request `id`. */
const expectOwedOnStream = (answer: { status: number; contentType: string | null; messages: Array<unknown> }, id: JsonRpc.RequestId) => {
  expect(answer.status).toBe(200)
  expect(answer.contentType).toContain("text/event-stream")
  expect(answer.messages).toEqual([internalError(id)])
}

describe("a POST answered on an SSE stream whose work fails before it replies", () => {
  it.live("responseMode sse: a defect under the work and the store's failure are each -32603 on the stream, not 503", () =>
    Effect.gen(function*() {
      const { faults, url } = yield* serve({ responseMode: "sse" })
      const session = yield* Effect.promise(() => openSession(url))
      const headers = { ...both, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }

      faults.inFlight = new Error("the registry broke")
      expectOwedOnStream(yield* streamed(url, toolCall(3), headers), 3)

      faults.inFlight = storeDown()
      expectOwedOnStream(yield* streamed(url, toolCall(4), headers), 4)

      faults.inFlight = undefined
      const later = yield* streamed(url, toolCall(5), headers)
      expect(later.messages).toEqual([{ jsonrpc: "2.0", id: 5, result: {} }])
    }).pipe(Effect.scoped), 30_000)

  it.live("a client accepting only text/event-stream: the store's failure and a record that dies are -32603 on the stream", () =>
    Effect.gen(function*() {
      const { faults, url } = yield* serve()
      const session = yield* Effect.promise(() => openSession(url))
      const headers = { ...sseOnly, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }

      faults.inFlight = storeDown()
      expectOwedOnStream(yield* streamed(url, toolCall(3), headers), 3)

      faults.inFlight = undefined
      faults.update = new Error("the level's record broke")
      const level = yield* streamed(url, { jsonrpc: "2.0", id: "lvl", method: "logging/setLevel", params: { level: "debug" } }, headers)
      expect(level.status).toBe(200)
      expect(level.messages).toEqual([internalError("lvl")])
    }).pipe(Effect.scoped), 30_000)

  it.live("a client accepting JSON too, whose handler sent a notification on the way: the record dying is -32603 on the stream", () =>
    Effect.gen(function*() {
      const { faults, url } = yield* serve()
      const session = yield* Effect.promise(() => openSession(url))
      const headers = { ...both, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
      faults.update = new Error("the level's record broke")

      const level = yield* streamed(url, { jsonrpc: "2.0", id: 8, method: "logging/setLevel", params: { level: "debug", notify: true } }, headers)
      expect(level.status).toBe(200)
      expect(level.contentType).toContain("text/event-stream")
      expect(level.messages).toEqual([
        { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "p", progress: 1 } },
        internalError(8)
      ])

      // Nothing sent on the way: the answer is JSON, as before.
      const quiet = yield* read(post(url, { jsonrpc: "2.0", id: 9, method: "logging/setLevel", params: { level: "debug" } }, headers))
      expect(quiet.headers.get("content-type")).toContain("application/json")
      expect(JSON.parse(quiet.body)).toEqual(internalError(9))
    }).pipe(Effect.scoped), 30_000)

  it.live("a batch keeps the reply that was written and gets -32603 for the one whose record died", () =>
    Effect.gen(function*() {
      const { faults, url } = yield* serve({ responseMode: "sse" })
      const session = yield* Effect.promise(() => openSession(url, "2025-03-26"))
      const headers = { ...both, "mcp-session-id": session, "mcp-protocol-version": "2025-03-26" }
      faults.update = new Error("the level's record broke")

      const batch = yield* streamed(url, [
        { jsonrpc: "2.0", id: 10, method: "logging/setLevel", params: { level: "info" } },
        { jsonrpc: "2.0", id: 11, method: "tools/call", params: { name: "x" } },
        { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } }
      ], headers)
      expect(batch.status).toBe(200)
      expect(batch.contentType).toContain("text/event-stream")
      expect(batch.messages).toHaveLength(2)
      expect(batch.messages).toContainEqual({ jsonrpc: "2.0", id: 11, result: {} })
      expect(batch.messages).toContainEqual(internalError(10))
    }).pipe(Effect.scoped), 30_000)

  it.live("a request the client cancels, or whose session is deleted, still gets nothing: its stream just ends", () =>
    Effect.gen(function*() {
      for (const end of ["cancel", "delete"] as const) {
        const { gate, url } = yield* serve({ responseMode: "sse" })
        const session = yield* Effect.promise(() => openSession(url))
        const headers = { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
        const slow = yield* Effect.promise(() =>
          openSse(url, {
            method: "POST",
            headers: { ...sseOnly, ...headers },
            body: JSON.stringify({ jsonrpc: "2.0", id: "slow-1", method: "slow" })
          })
        )
        expect(slow.response.status).toBe(200)
        yield* Deferred.await(gate.slowStarted)
        if (end === "cancel") {
          const cancel = yield* read(post(url, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "slow-1" } }, headers))
          expect(cancel.status).toBe(202)
        } else {
          const deleted = yield* Effect.promise(() => fetch(url, { method: "DELETE", headers }))
          expect(deleted.status).toBe(204)
        }
        yield* Effect.promise(() => slow.reader!.done)
        expect(slow.reader!.messages()).toEqual([])
      }
    }).pipe(Effect.scoped), 30_000)

  it.live("while the server drains, the work that fails owes the shutdown's error on the stream", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { faults, gate, url } = yield* serve({ responseMode: "sse", shutdownGracePeriod: "1 minute" }).pipe(Scope.provide(scope))
      const session = yield* Effect.promise(() => openSession(url))
      const headers = { ...both, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
      faults.holdLevel = true
      const level = yield* Effect.promise(() =>
        openSse(url, {
          method: "POST",
          headers,
          body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "logging/setLevel", params: { level: "debug" } })
        })
      )
      expect(level.response.status).toBe(200)

      const closing = yield* Effect.forkDetach(Scope.close(scope, Exit.void))
      const draining = yield* Effect.promise(() =>
        eventually(async () => (await fetch(url.replace(/\/mcp$/, "/mcp/health"))).status === 503)
      )
      expect(draining).toBe(true)
      faults.update = new Error("the level's record broke")
      yield* Deferred.succeed(gate.release, undefined)

      yield* Effect.promise(() => level.reader!.done)
      expect(level.reader!.messages()).toEqual([{
        jsonrpc: "2.0",
        id: 7,
        error: { code: JsonRpc.ErrorCode.InternalError, message: "The server shut down before the request finished" }
      }])
      yield* Fiber.join(closing)
    }), 30_000)
})
