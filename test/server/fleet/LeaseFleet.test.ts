/**
 * What a dying or paused instance means for its requests, with instances as
 * real child processes on a real Redis:
 * - SIGKILL the instance running a tool call: once its lease ran out (a
 *   bound of lease + 10 s to wait on, not a speed claim) the request's
 *   stream in the shared log holds a -32603 error naming no internals,
 *   while another instance's request runs on to its answer;
 * - SIGSTOP an instance past its lease, then SIGCONT it: the appends its
 *   request goes on to make are refused by the fence (the log ends with the
 *   reaper's error), a request it finds waiting is refused with 503 and
 *   `Retry-After`, and once it holds a new lease it serves again, and the
 *   client resuming its stream there reads the reaper's error.
 * - a call answered with JSON writes nothing to the in-flight registry; one
 *   that streams progress is recorded before its first event and removed
 *   after its answer (seen with `MONITOR`).
 * Each scenario counts the keys it leaves.
 */
import * as http from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as InFlight from "../../../src/server/InFlight.ts"
import * as Fleet from "../../fixtures/Fleet.ts"
import * as LogWait from "../../fixtures/LogWait.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"
import { eventually, initializeBody, openSession, openSse, post, type SseReader } from "../http/helpers.ts"

const PREFIX = "lf:"
const KEY = "q".repeat(32)
const LEASE_MS = 1500
// How long to wait for the reaper's error: nominally the lease's expiry plus one reaper pass (at most about
// 2.5 s), long enough for that on a loaded machine, where the reaping instance can fall behind.
const REAPED_WITHIN_MS = LEASE_MS + 10_000
const VERSION = "2025-11-25"

const start = (redisUrl: string) =>
  Fleet.start({ redisUrl, names: ["A", "B"], prefix: PREFIX, args: ["--keys", KEY, "--lease-ms", String(LEASE_MS)] })

/** A tool call on one instance, answered over SSE; resolves once its first progress notification arrived. */
const callTool = (url: string, session: string, id: number, name: string, args: Record<string, unknown> = {}) =>
  Effect.promise(async () => {
    const opened = await openSse(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": session,
        "mcp-protocol-version": VERSION
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name, arguments: args, _meta: { progressToken: `p${id}` } }
      })
    })
    if (opened.reader === undefined) throw new Error(`tools/call ${name}: ${opened.response.status}`)
    const reader: SseReader = opened.reader
    if (!(await reader.until((r) => r.messages().some((m) => m.method === "notifications/progress")))) {
      throw new Error(`tools/call ${name}: no progress`)
    }
    return reader
  })

/**
 * An initialize POST written whole to the instance's socket: `written`
 * resolves once the request left this process (a stopped instance's kernel
 * accepts the connection and holds the bytes), `response` with its status
 * and headers.
 */
const postWritten = (url: string, body: unknown) => {
  const target = new URL(url)
  const payload = JSON.stringify(body)
  const req = http.request({
    host: target.hostname,
    port: target.port,
    path: target.pathname,
    method: "POST",
    agent: false,
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "content-length": Buffer.byteLength(payload)
    }
  })
  const response = new Promise<{ readonly status: number; readonly retryAfter: string | undefined }>((resolve, reject) => {
    req.once("error", reject)
    req.once("response", (res) => {
      res.resume()
      res.once("end", () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers["retry-after"] as string | undefined }))
      res.once("error", reject)
    })
  })
  const written = new Promise<void>((resolve, reject) => {
    req.once("error", reject)
    req.end(payload, () => resolve())
  })
  return { written, response }
}

/** The log key of the stream an event id belongs to. */
const logKeyOf = (eventId: string) => {
  const streamId = eventId.slice(0, eventId.lastIndexOf("_"))
  return `${PREFIX}log:{${streamId.slice(0, streamId.indexOf("~"))}}:${streamId}`
}

const isStopped = (id: number) => (e: LogWait.LoggedEvent) => {
  const m = JSON.parse(e.data)
  return m.id === id && m.error !== undefined
}

/**
 * Keys other than the event log's (streams of sessions still alive, which
 * expire with them), once no reaper holds a claim (a pass under way deletes
 * its claim when done; an abandoned one expires).
 */
const fleetKeys = (url: string): Effect.Effect<ReadonlyArray<string>> =>
  Effect.flatMap(
    RedisServer.keysUnder(url, PREFIX),
    (keys) =>
      keys.some((k) => k.startsWith(`${PREFIX}reap:`))
        ? Effect.andThen(Effect.sleep("50 millis"), fleetKeys(url))
        : Effect.succeed(keys.filter((k) => !k.startsWith(`${PREFIX}log:`) && !k.startsWith(`${PREFIX}streams:`)))
  )

describe.skipIf(!RedisServer.present)("Instance leases in a fleet of processes", () => {
  it.live("SIGKILL the instance running a tool call: its stream gets the error once its lease ran out; the other instance's call goes on", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const { a, b, onA, onB } = yield* Effect.scoped(Effect.gen(function*() {
        const fleet = yield* start(redis.url)
        const a = fleet.instance("A")
        const b = fleet.instance("B")
        const onA = yield* Effect.promise(() => openSession(a.url, VERSION))
        const onB = yield* Effect.promise(() => openSession(b.url, VERSION))
        const hanging = yield* callTool(a.url, onA, 41, "hang")
        const ticking = yield* callTool(b.url, onB, 42, "ticks", { count: 40 })
        const seen = hanging.lastId()!
        expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}run:`)).toHaveLength(2)

        yield* fleet.signal("A", "SIGKILL")
        const error = yield* LogWait.awaitEvent(redis.url, logKeyOf(seen), seen, REAPED_WITHIN_MS, isStopped(41))
        expect(error, "the stopped error in the request's stream").toBeDefined()
        const message = JSON.parse(error!.data)
        expect(message).toEqual(InFlight.stoppedResponse(41))
        expect(JSON.stringify(message.error)).not.toContain(a.fleetId!)

        // The client resumes the killed request's stream through B: it reads the error, then the stream ends.
        const resumed = yield* Effect.promise(() =>
          openSse(b.url, {
            method: "GET",
            headers: { accept: "text/event-stream", "mcp-session-id": onA, "mcp-protocol-version": VERSION, "last-event-id": seen }
          })
        )
        expect(resumed.response.status).toBe(200)
        expect(yield* Effect.promise(() => resumed.reader!.until((r) => r.ended, 30_000))).toBe(true)
        expect(resumed.reader!.messages().filter((m) => m.id === 41)).toEqual([InFlight.stoppedResponse(41)])

        // The other instance's request runs on to its answer, and its stream gets no error.
        expect(yield* Effect.promise(() => ticking.until((r) => r.messages().some((m) => m.id === 42), 30_000))).toBe(true)
        const answer = ticking.messages().find((m) => m.id === 42)
        expect(answer.result.content[0].text).toBe("40 ticks on B")
        const bStream = yield* LogWait.all(redis.url, logKeyOf(ticking.lastId()!))
        expect(bStream.filter((e) => e.data !== "" && JSON.parse(e.data).error !== undefined)).toEqual([])

        // Only B is left: its lease and inbox, the set of instances, the fence, the two live sessions'
        // records; nothing of A's requests (A's inbox has no reader and expires on its own).
        expect((yield* fleetKeys(redis.url)).filter((k) => k !== `${PREFIX}inbox:${a.fleetId}`)).toEqual(
          [
            `${PREFIX}fence`,
            `${PREFIX}inbox:${b.fleetId}`,
            `${PREFIX}instance:${b.fleetId}`,
            `${PREFIX}instances`,
            `${PREFIX}sess:{${onA}}`,
            `${PREFIX}sess:{${onB}}`
          ].sort()
        )
        return { a, b, onA, onB }
      }))
      // Every instance stopped: the sessions (never ended) are left, with their records and logs, which expire.
      const left = yield* RedisServer.keysUnder(redis.url, PREFIX)
      expect(left.filter((k) => !k.startsWith(`${PREFIX}log:`) && !k.startsWith(`${PREFIX}streams:`) && !k.startsWith(`${PREFIX}inbox:${a.fleetId}`)))
        .toEqual([`${PREFIX}sess:{${onA}}`, `${PREFIX}sess:{${onB}}`].sort())
      expect(a.fleetId).not.toBe(b.fleetId)
    }).pipe(Effect.scoped), 120_000)

  it.live("the in-flight registry on Redis: a call answered with JSON is never written there; one that streams progress is recorded before its first event and removed after its answer", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const fleet = yield* start(redis.url)
      const a = fleet.instance("A")
      const session = yield* Effect.promise(() => openSession(a.url, VERSION))
      const seen = yield* RedisServer.monitor(redis.url)
      const writesOf = () => seen.filter((line) => line.includes(`${PREFIX}run:{${session}}`) && line.includes("EVALSHA"))

      for (let id = 10; id < 30; id++) {
        const response = yield* Effect.promise(() =>
          post(a.url, { jsonrpc: "2.0", id, method: "tools/call", params: { name: "whoami" } }, {
            "mcp-session-id": session,
            "mcp-protocol-version": VERSION
          })
        )
        expect(response.headers.get("content-type")).toContain("application/json")
        expect(yield* Effect.promise(() => response.json())).toMatchObject({ id, result: { content: [{ text: "A" }] } })
      }
      // The 20 calls' session touches reached Redis, and nothing of theirs went to the registry.
      expect(seen.filter((line) => line.includes(`${PREFIX}sess:{${session}}`)).length).toBeGreaterThanOrEqual(20)
      expect(writesOf()).toEqual([])

      const ticking = yield* callTool(a.url, session, 31, "ticks", { count: 2 })
      // Recorded before the first progress left the instance: it is there to be reaped.
      expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}run:`)).toEqual([`${PREFIX}run:{${session}}`])
      expect(yield* Effect.promise(() => ticking.until((r) => r.ended))).toBe(true)
      expect(ticking.messages().find((m) => m.id === 31)?.result.content[0].text).toBe("2 ticks on A")
      yield* Effect.promise(() => eventually(() => writesOf().length === 2))
      expect(writesOf()).toHaveLength(2)
      expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}run`)).toEqual([])
    }).pipe(Effect.scoped), 60_000)

  it.live("SIGSTOP an instance past its lease, SIGCONT it: its late appends are refused, it answers 503 until it holds a new lease", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const sessionKeys = yield* Effect.scoped(Effect.gen(function*() {
        const fleet = yield* start(redis.url)
        const a = fleet.instance("A")
        const onA = yield* Effect.promise(() => openSession(a.url, VERSION))
        const ticking = yield* callTool(a.url, onA, 7, "ticks", { count: 200 })
        const seen = ticking.lastId()!
        const key = logKeyOf(seen)

        yield* fleet.signal("A", "SIGSTOP")
        // B reaps A once its lease key expired: the error lands in A's request's stream.
        const error = yield* LogWait.awaitEvent(redis.url, key, seen, REAPED_WITHIN_MS, isStopped(7))
        expect(error).toBeDefined()
        // A request that reaches A while it is stopped waits in its socket: A wakes up only once the
        // whole request is there, so it meets the request before it can take a new lease.
        const waiting = postWritten(a.url, initializeBody(1, VERSION))
        yield* Effect.promise(() => waiting.written)
        yield* fleet.signal("A", "SIGCONT")
        const refused = yield* Effect.promise(() => waiting.response)
        expect(refused.status).toBe(503)
        expect(refused.retryAfter).toBe("1")
        yield* a.waitForLog((l) => l.includes("lost its lease")).pipe(Effect.timeout("30 seconds"))
        yield* a.waitForLog((l) => l.includes("holds a new lease (token")).pipe(Effect.timeout("30 seconds"))

        // None of the appends A made after waking is in the log: the reaper's error is the last event (end marks aside).
        const log = yield* LogWait.all(redis.url, key)
        const events = log.filter((e) => e.data !== "")
        expect(events[events.length - 1].redisId).toBe(error!.redisId)
        const progress = log.filter((e) => e.data !== "" && JSON.parse(e.data).method === "notifications/progress")
        expect(progress.length).toBeGreaterThan(0)
        expect(progress.length).toBeLessThan(200)

        // The client resumes its stream (A still holds the session) and reads the reaper's error from the log.
        const resumed = yield* Effect.promise(() =>
          openSse(a.url, {
            method: "GET",
            headers: { accept: "text/event-stream", "mcp-session-id": onA, "mcp-protocol-version": VERSION, "last-event-id": seen }
          })
        )
        expect(resumed.response.status).toBe(200)
        expect(yield* Effect.promise(() => resumed.reader!.until((r) => r.messages().some((m) => m.id === 7)))).toBe(true)
        expect(resumed.reader!.messages().find((m) => m.id === 7)).toEqual(InFlight.stoppedResponse(7))
        resumed.reader!.close()

        // With a new lease, A serves fleet work again.
        const served = yield* Effect.promise(() => post(a.url, initializeBody(2, VERSION)))
        expect(served.status).toBe(200)
        const second = served.headers.get("mcp-session-id")!
        yield* Effect.promise(() => served.text())
        ticking.close()
        const sessionKeys = [`${PREFIX}sess:{${onA}}`, `${PREFIX}sess:{${second}}`]
        expect(yield* fleetKeys(redis.url)).toEqual(
          [
            `${PREFIX}fence`,
            `${PREFIX}inbox:${a.fleetId}`,
            `${PREFIX}inbox:${fleet.instance("B").fleetId}`,
            `${PREFIX}instance:${a.fleetId}`,
            `${PREFIX}instance:${fleet.instance("B").fleetId}`,
            `${PREFIX}instances`,
            ...sessionKeys
          ].sort()
        )
        return sessionKeys
      }))
      // Every instance stopped cleanly: the live sessions' records (and logs) are left; they expire.
      const left = yield* RedisServer.keysUnder(redis.url, PREFIX)
      expect(left.filter((k) => !k.startsWith(`${PREFIX}log:`) && !k.startsWith(`${PREFIX}streams:`))).toEqual(sessionKeys.sort())
    }).pipe(Effect.scoped), 120_000)
})
