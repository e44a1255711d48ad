/**
 * A session's copy dropped by one instance (here: that instance shuts down
 * cleanly) leaves the session's streams in the shared log: the client
 * resumes a request's stream the dropped copy wrote, through another
 * instance, and reads the rest of it up to its end. Only the session's end
 * (DELETE) removes them.
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

describe.skipIf(!RedisServer.present)("A dropped copy of a session in a fleet", () => {
  it.live("an instance that shuts down keeps the session's streams in the log: the client resumes one on another instance", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const fleet = yield* Fleet.start({ redisUrl: redis.url, names: ["A", "B"], prefix: PREFIX, args: ["--keys", KEY] })
      const a = fleet.instance("A")
      const b = fleet.instance("B")
      const session = yield* Effect.promise(() => openSession(a.url, VERSION))

      // A request answered on A over SSE, read to its end.
      const call = yield* Effect.promise(() =>
        openSse(a.url, {
          method: "POST",
          headers: headersOf(session, { "content-type": "application/json", accept: "application/json, text/event-stream" }),
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 5,
            method: "tools/call",
            params: { name: "ticks", arguments: { count: 3 }, _meta: { progressToken: "t" } }
          })
        })
      )
      expect(call.response.status).toBe(200)
      expect(yield* Effect.promise(() => call.reader!.until((r) => r.ended, 30_000))).toBe(true)
      const first = call.reader!.events.find((e) => e.id !== undefined && e.data !== "")!
      expect(JSON.parse(first.data).method).toBe("notifications/progress")

      // A goes away cleanly: its copy of the session is dropped, the session lives on.
      yield* Effect.promise(() =>
        new Promise<void>((resolve) => {
          a.child.once("exit", () => resolve())
          a.child.kill("SIGTERM")
        })
      )

      // Through B: the rest of the stream A wrote, then its end.
      const resumed = yield* Effect.promise(() =>
        openSse(b.url, {
          method: "GET",
          headers: headersOf(session, { accept: "text/event-stream", "last-event-id": first.id! })
        })
      )
      expect(resumed.response.status).toBe(200)
      expect(yield* Effect.promise(() => resumed.reader!.until((r) => r.ended, 30_000))).toBe(true)
      const messages = resumed.reader!.messages()
      expect(messages.filter((m) => m.method === "notifications/progress")).toHaveLength(2)
      expect(messages.find((m) => m.id === 5)?.result.content[0].text).toBe("3 ticks on A")

      // DELETE ends the session: its streams leave the log.
      const deleted = yield* Effect.promise(() => fetch(b.url, { method: "DELETE", headers: headersOf(session) }))
      expect(deleted.status).toBe(204)
      const left = yield* RedisServer.keysUnder(redis.url, PREFIX)
      expect(left.filter((k) => k.startsWith(`${PREFIX}sess:`))).toEqual([])
    }).pipe(Effect.scoped), 120_000)
})
