/**
 * A handshake-era POST whose work fails before it replies, in a fleet
 * (a session registry, an in-flight registry and the store's availability,
 * in memory here, each made to fail on demand): a request is never
 * answered with an empty 202. The shared store failing under the work
 * (a `RedisError`) is 503 with `Retry-After`, and an `initialize` so
 * answered leaves no session behind; any other failure is a JSON-RPC
 * -32603 with the request's id, the other replies of a batch intact. A
 * POST of notifications alone is still 202.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { RedisError } from "effect/persistence/Redis"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import { Availability } from "../../../src/server/Availability.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import { InFlight, type InFlightShape } from "../../../src/server/InFlight.ts"
import { type SessionRecord, SessionRegistry, type SessionRegistryShape } from "../../../src/server/SessionRegistry.ts"
import { initializeBody, openSession, post } from "../http/helpers.ts"

const RETRY_AFTER = 7

/** Answers every request: `initialize` with the revision asked for, anything else with `{}`. */
const handler: Handler = (message) =>
  Effect.succeed(
    !("id" in message)
      ? null
      : message.method === "initialize"
      ? JsonRpc.success(message.id, {
        protocolVersion: (message.params as { protocolVersion: string }).protocolVersion,
        capabilities: { tools: {}, logging: {} },
        serverInfo: { name: "lost-reply", version: "1.0.0" }
      })
      : JsonRpc.success(message.id, {})
  )

/** What the fleet's services do when asked; `undefined`: they work. */
interface Faults {
  /** The in-flight registry's `run` dies with it (as the Redis one does on a command that fails). */
  inFlight: unknown
  /** The session registry's `create` dies with it. */
  create: unknown
  /** The session registry's `update` dies with it. */
  update: unknown
}

const serve = Effect.gen(function*() {
  const faults: Faults = { inFlight: undefined, create: undefined, update: undefined }
  const records = new Map<string, SessionRecord>()
  const registry: SessionRegistryShape = {
    create: (id, record) => faults.create !== undefined ? Effect.die(faults.create) : Effect.sync(() => void records.set(id, record)),
    load: (id) => Effect.sync(() => Option.fromNullishOr(records.get(id))),
    update: (id, update) =>
      faults.update !== undefined ? Effect.die(faults.update) : Effect.sync(() => {
        const record = records.get(id)
        if (record !== undefined) records.set(id, { ...record, ...update } as SessionRecord)
      }),
    end: (id) => Effect.sync(() => records.delete(id)),
    ended: () => Effect.void
  }
  const inFlight: InFlightShape = { run: (_entries, work) => faults.inFlight !== undefined ? Effect.die(faults.inFlight) : work }
  const context = yield* Layer.build(
    HttpServerTransport.layer(handler, { port: 0 }).pipe(
      Layer.provide(Layer.mergeAll(
        Layer.succeed(Availability, { available: () => true, retryAfterSeconds: RETRY_AFTER }),
        Layer.succeed(SessionRegistry, registry),
        Layer.succeed(InFlight, inFlight)
      ))
    )
  )
  const transport = Context.get(context, HttpServerTransport.HttpServerTransport)
  return { url: Option.getOrThrow(transport.url), transport, faults }
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
      const { faults, transport, url } = yield* serve
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

  it.live("another defect: -32603 with the request's id, the batch's other replies intact; notifications alone still 202", () =>
    Effect.gen(function*() {
      const { faults, transport, url } = yield* serve
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
