/**
 * When a handshake-era POST in a fleet is put in the in-flight registry
 * (in memory here, recording what it is asked): a request answered with
 * JSON is never recorded, since its reply never reaches the event log; one
 * whose handler sends the client something on the way is recorded before
 * its stream opens, once; a client that reads SSE only, or a server that
 * answers on SSE, is recorded up front; one whose handler cuts its
 * stream's connection before sending anything, at the cut. Refused, the
 * handler's message fails as on a closed stream (a cut does nothing) and
 * its answer still comes as JSON; a reply given while its message waited
 * for the record is the POST's JSON answer, and the message goes to the
 * session's GET stream.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Layer, Option } from "effect"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import { Availability } from "../../../src/server/Availability.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import { InFlight, type InFlightShape } from "../../../src/server/InFlight.ts"
import { LeaseLost } from "../../../src/server/InstanceLease.ts"
import { SessionRegistry } from "../../../src/server/SessionRegistry.ts"
import * as MemorySessionRegistry from "../../fixtures/MemorySessionRegistry.ts"
import { openSession, openSse } from "../http/helpers.ts"

const progress = { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "p", progress: 1 } }

/** What the registry was asked, in order, and how it answers `record`. */
interface Registry {
  readonly asked: Array<string>
  refuse: boolean
  /** When set, `record` waits for it. */
  gate: Deferred.Deferred<void> | undefined
}

/**
 * `quiet` answers at once; `notify` sends a progress notification (noting
 * whether it could) and then answers; `forks` sends it from a fiber of its
 * own and answers 50 ms later; `cuts` closes its SSE stream's connection
 * and answers 50 ms later.
 */
const handler = (sent: Array<string>): Handler => (message, context) => {
  if (!("id" in message)) return Effect.succeed(null)
  if (message.method === "initialize") {
    return Effect.succeed(JsonRpc.success(message.id, {
      protocolVersion: (message.params as { protocolVersion: string }).protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: "record-on-open", version: "1.0.0" }
    }))
  }
  const notify = Effect.flatMap(Effect.exit(context.notify("notifications/progress", { progressToken: "p", progress: 1 })), (exit) =>
    Effect.sync(() => sent.push(`${String(message.id)} ${Exit.isSuccess(exit) ? "sent" : "refused"}`)))
  const reply = Effect.succeed(JsonRpc.success(message.id, {}))
  if (message.method === "notify") return Effect.andThen(notify, reply)
  if (message.method === "cuts") {
    return Effect.andThen(context.closeSseStream?.() ?? Effect.void, Effect.andThen(Effect.sleep(50), reply))
  }
  // The reply comes once the message is on its way.
  if (message.method === "forks") return Effect.andThen(Effect.forkDetach(notify), Effect.andThen(Effect.sleep(50), reply))
  return reply
}

const serve = (options: HttpServerTransport.Options = {}) =>
  Effect.gen(function*() {
    const registry: Registry = { asked: [], refuse: false, gate: undefined }
    const sent: Array<string> = []
    const idsOf = (entries: ReadonlyArray<{ readonly requestId: JsonRpc.RequestId }>) => entries.map((e) => e.requestId).join(",")
    const inFlight: InFlightShape = {
      run: (entries, work) => Effect.andThen(Effect.sync(() => registry.asked.push(`run ${idsOf(entries)}`)), work),
      runRecordingLater: (entries, work) =>
        Effect.suspend(() => {
          registry.asked.push(`later ${idsOf(entries)}`)
          const record = Effect.suspend(() => {
            registry.asked.push(`record ${idsOf(entries)}`)
            const waited = registry.gate === undefined ? Effect.void : Deferred.await(registry.gate)
            return Effect.andThen(waited, registry.refuse ? Effect.fail(new LeaseLost({ instanceId: "i" })) : Effect.void)
          })
          return Effect.ensuring(work(record), Effect.sync(() => registry.asked.push(`end ${idsOf(entries)}`)))
        })
    }
    const context = yield* Layer.build(
      HttpServerTransport.layer(handler(sent), { port: 0, ...options }).pipe(
        Layer.provide(Layer.mergeAll(
          Layer.succeed(Availability, { available: () => true, retryAfterSeconds: 1 }),
          Layer.succeed(SessionRegistry, MemorySessionRegistry.make()),
          Layer.succeed(InFlight, inFlight)
        ))
      )
    )
    const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
    const session = yield* Effect.promise(() => openSession(url))
    // The initialize, answered on a stream, was recorded up front.
    expect(registry.asked).toEqual(["run 1"])
    registry.asked.length = 0
    const headers = (accept: string) => ({
      "content-type": "application/json",
      accept,
      "mcp-session-id": session,
      "mcp-protocol-version": "2025-11-25"
    })
    return { url, session, headers, registry, sent }
  })

const both = "application/json, text/event-stream"

/** A POST's answer: status, content type, and its messages (the JSON body's one, or the SSE stream's). */
const answer = (url: string, id: number, method: string, headers: Record<string, string>) =>
  Effect.promise(async () => {
    const { reader, response } = await openSse(url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id, method }) })
    const contentType = response.headers.get("content-type") ?? ""
    if (reader === undefined) return { status: response.status, contentType, messages: [await response.json()] }
    await reader.done
    return { status: response.status, contentType, messages: reader.messages() }
  })

describe("a handshake-era POST in the in-flight registry", () => {
  it.live("answered with JSON: never recorded; a handler that sends on the way: recorded once, before its stream opens", () =>
    Effect.gen(function*() {
      const { headers, registry, sent, url } = yield* serve()

      const quiet = yield* answer(url, 3, "quiet", headers(both))
      expect(quiet.contentType).toContain("application/json")
      expect(quiet.messages).toEqual([{ jsonrpc: "2.0", id: 3, result: {} }])
      expect(registry.asked).toEqual(["later 3", "end 3"])

      registry.asked.length = 0
      const notify = yield* answer(url, 4, "notify", headers(both))
      expect(notify.contentType).toContain("text/event-stream")
      expect(notify.messages).toEqual([progress, { jsonrpc: "2.0", id: 4, result: {} }])
      expect(registry.asked).toEqual(["later 4", "record 4", "end 4"])
      expect(sent).toEqual(["4 sent"])
    }).pipe(Effect.scoped), 30_000)

  it.live("a client that reads SSE only, or a server that answers on SSE: recorded up front", () =>
    Effect.gen(function*() {
      const { headers, registry, url } = yield* serve()
      const sseOnly = yield* answer(url, 5, "quiet", headers("text/event-stream"))
      expect(sseOnly.messages).toEqual([{ jsonrpc: "2.0", id: 5, result: {} }])
      expect(registry.asked).toEqual(["run 5"])

      const onSse = yield* serve({ responseMode: "sse" })
      yield* answer(onSse.url, 6, "quiet", onSse.headers(both))
      expect(onSse.registry.asked).toEqual(["run 6"])
    }).pipe(Effect.scoped), 30_000)

  it.live("refused: the handler's message fails as on a closed stream, and its answer still comes as JSON", () =>
    Effect.gen(function*() {
      const { headers, registry, sent, url } = yield* serve()
      registry.refuse = true
      const refused = yield* answer(url, 7, "notify", headers(both))
      expect(refused.status).toBe(200)
      expect(refused.contentType).toContain("application/json")
      expect(refused.messages).toEqual([{ jsonrpc: "2.0", id: 7, result: {} }])
      expect(sent).toEqual(["7 refused"])
      expect(registry.asked).toEqual(["later 7", "record 7", "end 7"])
    }).pipe(Effect.scoped), 30_000)

  it.live("a handler that cuts its stream before sending anything: recorded first, the answer JSON as without a fleet; refused, the cut does nothing", () =>
    Effect.gen(function*() {
      const { headers, registry, url } = yield* serve()
      const cut = yield* answer(url, 9, "cuts", headers(both))
      expect(cut.contentType).toContain("application/json")
      expect(cut.messages).toEqual([{ jsonrpc: "2.0", id: 9, result: {} }])
      expect(registry.asked).toEqual(["later 9", "record 9", "end 9"])

      registry.asked.length = 0
      registry.refuse = true
      const refused = yield* answer(url, 10, "cuts", headers(both))
      expect(refused.contentType).toContain("application/json")
      expect(refused.messages).toEqual([{ jsonrpc: "2.0", id: 10, result: {} }])
      expect(registry.asked).toEqual(["later 10", "record 10", "end 10"])
    }).pipe(Effect.scoped), 30_000)

  it.live("a reply given while its message waits for the record is the JSON answer; the message goes to the GET stream", () =>
    Effect.gen(function*() {
      const { headers, registry, sent, session, url } = yield* serve()
      const listening = yield* Effect.promise(() =>
        openSse(url, { method: "GET", headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } })
      )
      const reader = listening.reader!
      registry.gate = yield* Deferred.make<void>()
      const forks = yield* answer(url, 8, "forks", headers(both))
      expect(forks.contentType).toContain("application/json")
      expect(forks.messages).toEqual([{ jsonrpc: "2.0", id: 8, result: {} }])
      expect(sent).toEqual([])
      expect(registry.asked).toEqual(["later 8", "record 8", "end 8"])

      yield* Deferred.succeed(registry.gate, void 0)
      expect(yield* Effect.promise(() => reader.until((r) => r.messages().length > 0, 10_000))).toBe(true)
      expect(reader.messages()).toEqual([progress])
      expect(sent).toEqual(["8 sent"])
      listening.controller.abort()
    }).pipe(Effect.scoped), 30_000)
})
