/**
 * A session's copy dropped by one instance (here: that instance shuts down
 * cleanly) leaves the session's streams in the shared log: the client
 * resumes a request's stream the dropped copy wrote, through another
 * instance, and reads the rest of it up to its end. Only the session's end
 * (DELETE) removes them. A request the instance interrupted as it shut down
 * ends its stream with the shutdown's error, which the resumed stream reads.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fleet from "../../fixtures/Fleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"
import { openSession, openSse } from "../http/helpers.ts"

const PREFIX = "dc:"
const KEY = "d".repeat(32)
const VERSION = "2025-11-25"

const headersOf = (session: string, extra: Record<string, string> = {}) => ({
  "mcp-session-id": session,
  "mcp-protocol-version": VERSION,
  ...extra
})

/** A `tools/call` POSTed to `url` in `session`, answered over SSE, with a progress token. */
const callOverSse = (url: string, session: string, id: number, name: string, args: Record<string, unknown>) =>
  Effect.promise(() =>
    openSse(url, {
      method: "POST",
      headers: headersOf(session, { "content-type": "application/json", accept: "application/json, text/event-stream" }),
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args, _meta: { progressToken: `p${id}` } } })
    })
  )

/** The session's stream resumed through `url` after `lastEventId`, read to its end: its messages. */
const resumeOn = (url: string, session: string, lastEventId: string) =>
  Effect.gen(function*() {
    const resumed = yield* Effect.promise(() =>
      openSse(url, { method: "GET", headers: headersOf(session, { accept: "text/event-stream", "last-event-id": lastEventId }) })
    )
    expect(resumed.response.status).toBe(200)
    expect(yield* Effect.promise(() => resumed.reader!.until((r) => r.ended, 30_000))).toBe(true)
    return resumed.reader!.messages()
  })

describe.skipIf(!RedisServer.present)("A dropped copy of a session in a fleet", () => {
  it.live("an instance that shuts down keeps the session's streams in the log: the client resumes one on another instance", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const fleet = yield* Fleet.start({ redisUrl: redis.url, names: ["A", "B"], prefix: PREFIX, args: ["--keys", KEY] })
      const a = fleet.instance("A")
      const b = fleet.instance("B")
      const session = yield* Effect.promise(() => openSession(a.url, VERSION))

      // A request answered on A over SSE, read to its end.
      const call = yield* callOverSse(a.url, session, 5, "ticks", { count: 3 })
      expect(call.response.status).toBe(200)
      expect(yield* Effect.promise(() => call.reader!.until((r) => r.ended, 30_000))).toBe(true)
      const first = call.reader!.events.find((e) => e.id !== undefined && e.data !== "")!
      expect(JSON.parse(first.data).method).toBe("notifications/progress")

      // A goes away cleanly: its copy of the session is dropped, the session lives on.
      yield* fleet.stop("A")

      // Through B: the rest of the stream A wrote, then its end.
      const messages = yield* resumeOn(b.url, session, first.id!)
      expect(messages.filter((m) => m.method === "notifications/progress")).toHaveLength(2)
      expect(messages.find((m) => m.id === 5)?.result.content[0].text).toBe("3 ticks on A")

      // DELETE ends the session: its streams leave the log.
      const deleted = yield* Effect.promise(() => fetch(b.url, { method: "DELETE", headers: headersOf(session) }))
      expect(deleted.status).toBe(204)
      const left = yield* RedisServer.keysUnder(redis.url, PREFIX)
      expect(left.filter((k) => k.startsWith(`${PREFIX}sess:`))).toEqual([])
    }).pipe(Effect.scoped), 120_000)

  it.live("a request interrupted by its instance's shutdown: its stream, resumed on another instance, ends with the shutdown's error", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const fleet = yield* Fleet.start({
        redisUrl: redis.url,
        names: ["A", "B"],
        prefix: PREFIX,
        args: ["--keys", KEY],
        argsOf: (name) => name === "A" ? ["--grace-ms", "0"] : []
      })
      const a = fleet.instance("A")
      const b = fleet.instance("B")
      const session = yield* Effect.promise(() => openSession(a.url, VERSION))
      const call = yield* callOverSse(a.url, session, 6, "hang", {})
      expect(call.response.status).toBe(200)
      const progress = yield* Effect.promise(() =>
        call.reader!.until((r) => r.events.some((e) => e.id !== undefined && e.data !== ""), 30_000)
      )
      expect(progress).toBe(true)
      const first = call.reader!.events.find((e) => e.id !== undefined && e.data !== "")!
      expect(JSON.parse(first.data).method).toBe("notifications/progress")

      yield* fleet.stop("A")
      const shutDown = { jsonrpc: "2.0", id: 6, error: { code: -32603, message: "The server shut down before the request finished" } }
      // Read on A before it went: the error, then the stream's end.
      expect(yield* Effect.promise(() => call.reader!.until((r) => r.ended, 30_000))).toBe(true)
      expect(call.reader!.messages().find((m) => m.id === 6)).toEqual(shutDown)

      // Through B: the same error from the log, then the end.
      expect(yield* resumeOn(b.url, session, first.id!)).toEqual([shutDown])
    }).pipe(Effect.scoped), 120_000)
})
