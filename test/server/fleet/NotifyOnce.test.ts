/**
 * `notifyAll` in a fleet whose sessions have copies on several instances:
 * every copy writes the session's one GET stream, so only the copy that
 * claims a notification (`SessionRegistry.claimDelivery`) delivers it. A
 * session adopted on three instances gets each `notifications/resources/updated`
 * once, whichever instance made it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fleet from "../../fixtures/Fleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"
import { openSession, openSse, post } from "../http/helpers.ts"

const PREFIX = "once:"
const KEY = "o".repeat(32)
const VERSION = "2025-11-25"
const PUBLISHED = 5

describe.skipIf(!RedisServer.present)("notifyAll on a session with copies on three instances", () => {
  it.live("each notification reaches the session's GET stream once", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const fleet = yield* Fleet.start({ redisUrl: redis.url, prefix: PREFIX, args: ["--keys", KEY] })
      const [a, b, c] = fleet.names.map((name) => fleet.instance(name))
      const session = yield* Effect.promise(() => openSession(a.url, VERSION))
      const headers = { "mcp-session-id": session, "mcp-protocol-version": VERSION }
      const call = (url: string, id: number, name: string, args: Record<string, unknown> = {}) =>
        Effect.promise(async () => {
          const res = await post(url, { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }, {
            ...headers,
            accept: "application/json"
          })
          expect(res.status).toBe(200)
          return await res.json()
        })
      // B and C adopt the session.
      yield* call(b.url, 1, "whoami")
      yield* call(c.url, 2, "whoami")
      const listening = yield* Effect.promise(() => openSse(b.url, { method: "GET", headers: { ...headers, accept: "text/event-stream" } }))
      expect(listening.response.status).toBe(200)
      const reader = listening.reader!
      const updated = (uri: string) =>
        reader.messages().filter((m) => m.method === "notifications/resources/updated" && m.params?.uri === uri).length

      // Made on each instance in turn; then a last one, after which the duplicates (if any) have come.
      for (let i = 0; i < PUBLISHED; i++) yield* call([a, b, c][i % 3].url, 10 + i, "publish", { uri: `test://r/${i}` })
      expect(yield* Effect.promise(() => reader.until(() => updated(`test://r/${PUBLISHED - 1}`) > 0, 30_000))).toBe(true)
      yield* call(a.url, 99, "publish", { uri: "test://r/last" })
      yield* call(b.url, 100, "publish", { uri: "test://r/after-last" })
      expect(yield* Effect.promise(() => reader.until(() => updated("test://r/after-last") > 0, 30_000))).toBe(true)
      for (let i = 0; i < PUBLISHED; i++) expect(updated(`test://r/${i}`), `test://r/${i}`).toBe(1)
      expect(updated("test://r/last")).toBe(1)
      reader.close()
    }).pipe(Effect.scoped), 120_000)
})
