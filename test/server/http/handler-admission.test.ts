/**
 * `Handler.admitSession`: a handler whose sessions cost more than the
 * transport's own refuses new ones. The refused `initialize` (and legacy
 * SSE connection) gets 503 with the handler's `Retry-After` and message, no
 * session id, and the session it would have had is ended at once, the
 * handler told.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Handler } from "../../../src/server/Handler.ts"
import { eventually, initializeBody, isClean, post, run, withServer } from "./helpers.ts"
import { testHandler } from "../../fixtures/http-test-server.ts"

/** The test server, admitting `room` sessions at once; records who was asked and who ended. */
const admitting = (room: number, asked: Array<string>, ended: Array<string | undefined>) => (): Handler => {
  const inner = testHandler()
  const open = new Set<string>()
  return Object.assign((...args: Parameters<Handler>) => inner(...args), {
    admitSession: (sessionId: string) =>
      Effect.sync(() => {
        asked.push(sessionId)
        if (open.size >= room) return { retryAfterSeconds: 7, message: "Service unavailable: no room for another session" }
        open.add(sessionId)
        return undefined
      }),
    sessionEnded: (sessionId: string | undefined) =>
      Effect.sync(() => {
        ended.push(sessionId)
        if (sessionId !== undefined) open.delete(sessionId)
      })
  })
}

describe("HTTP server transport: the handler's say on new sessions", () => {
  it.live("a refused initialize gets 503 with the handler's Retry-After; the session is ended; a freed slot admits again", () => {
    const asked: Array<string> = []
    const ended: Array<string | undefined> = []
    return withServer({}, async ({ base, url, transport }) => {
      const first = await post(url, initializeBody(1))
      expect(first.status).toBe(200)
      await first.text()
      const sessionId = first.headers.get("mcp-session-id")!

      const second = await post(url, initializeBody(2))
      expect(second.status).toBe(503)
      expect(second.headers.get("retry-after")).toBe("7")
      expect(second.headers.get("mcp-session-id")).toBe(null)
      expect(await second.json()).toMatchObject({ error: { message: "Service unavailable: no room for another session" } })
      expect(asked.length).toBe(2)
      // The refused session ended, the handler told; only the first is left.
      expect(ended).toEqual([asked[1]])
      expect(await run(transport.sessionIds)).toEqual([sessionId])

      // A legacy SSE connection is a session too.
      const legacy = await fetch(`${base}/sse`, { headers: { accept: "text/event-stream" } })
      expect(legacy.status).toBe(503)
      expect(legacy.headers.get("retry-after")).toBe("7")
      await legacy.text()

      await fetch(url, { method: "DELETE", headers: { "mcp-session-id": sessionId } })
      expect(await eventually(() => ended.includes(sessionId))).toBe(true)
      const third = await post(url, initializeBody(3))
      expect(third.status).toBe(200)
      await third.text()
      await fetch(url, { method: "DELETE", headers: { "mcp-session-id": third.headers.get("mcp-session-id")! } })
      expect(await eventually(() => isClean(transport))).toBe(true)
    }, admitting(1, asked, ended))
  })
})
