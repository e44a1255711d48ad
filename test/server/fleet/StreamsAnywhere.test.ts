/**
 * Streams held anywhere, with real instances (child processes) on one real
 * Redis: producers on two instances write one stream and a listener gets
 * every event once, in strictly increasing id order, across a resume on a
 * third; the instance holding a listener is killed (SIGKILL) while events
 * flow from another, and the listener resumes elsewhere with every event
 * once, in order. The broadcast stream shows it today; a session's GET
 * stream shows it once sessions are known on every instance (the session
 * registry). After each scenario, the keys left in Redis are counted.
 */
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fleet from "../../fixtures/Fleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"
import { openSession, openSse, post, type SseEvent, type SseReader } from "../http/helpers.ts"

const SERVER = fileURLToPath(new URL("../../fixtures/fleet-streams-server.ts", import.meta.url))
const VERSION = "2025-11-25"
const PREFIX = "streams:"
/** Sessions are known on every instance once the session registry is there. */
const sessionsShared = existsSync(fileURLToPath(new URL("../../../src/server/SessionRegistry.ts", import.meta.url)))

const eventsUrl = (url: string) => url.replace(/\/mcp$/, "/mcp/events")

const callTool = (url: string, session: string, name: string, args: Record<string, unknown>) =>
  Effect.promise(async () => {
    const res = await post(url, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }, {
      "mcp-session-id": session,
      "mcp-protocol-version": VERSION,
      accept: "application/json"
    })
    expect(res.status).toBe(200)
    return await res.json()
  })

const listen = (url: string, lastEventId?: string) =>
  Effect.promise(() =>
    openSse(url, {
      method: "GET",
      headers: { accept: "text/event-stream", ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }) }
    })
  ).pipe(Effect.map((opened) => {
    expect(opened.response.status).toBe(200)
    return opened.reader!
  }))

const ticks = (reader: SseReader): Array<SseEvent> => reader.events.filter((e) => e.event === "tick")
const until = (reader: SseReader, predicate: (r: SseReader) => boolean) =>
  Effect.promise(() => reader.until(predicate, 60_000)).pipe(Effect.map((ok) => expect(ok).toBe(true)))

const redisIdOf = (eventId: string) => {
  const [ms, seq] = eventId.slice(eventId.lastIndexOf("_") + 1).split("-").map(BigInt)
  return ms * 1_000_000n + seq
}

/** Every id strictly greater than the one before (so no event came twice), across all the readers in order. */
const expectIncreasing = (events: ReadonlyArray<SseEvent>) => {
  const ids = events.map((e) => redisIdOf(e.id!))
  for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true)
}

const endSession = (url: string, session: string) =>
  Effect.promise(() =>
    fetch(url, { method: "DELETE", headers: { "mcp-session-id": session, "mcp-protocol-version": VERSION } })
  ).pipe(Effect.map((res) => expect(res.status).toBe(204)))

/** What is left of streams in Redis: only the fleet's broadcast stream, which expires on its own. */
const expectOnlyBroadcastLeft = (redisUrl: string) =>
  Effect.gen(function*() {
    expect(yield* RedisServer.keysUnder(redisUrl, `${PREFIX}log:`)).toEqual([`${PREFIX}log:{_}:broadcast`])
    expect(yield* RedisServer.keysUnder(redisUrl, `${PREFIX}streams:`)).toEqual([`${PREFIX}streams:{_}`])
    expect(yield* RedisServer.keysUnder(redisUrl, `${PREFIX}sess:`)).toEqual([])
  })

describe.skipIf(!RedisServer.present)("streams held anywhere", () => {
  it.live("producers on A and B write one broadcast stream; a listener resumed on C gets each event once, ids strictly increasing", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const fleet = yield* Fleet.start({ redisUrl: redis.url, prefix: PREFIX, fixture: SERVER })
      const [a, b, c] = ["A", "B", "C"].map((n) => fleet.instance(n).url)
      const first = yield* listen(eventsUrl(a))
      const onA = yield* Effect.promise(() => openSession(a, VERSION))
      const onB = yield* Effect.promise(() => openSession(b, VERSION))
      yield* callTool(a, onA, "broadcast", { count: 60, rate: 100, tag: "A" })
      yield* callTool(b, onB, "broadcast", { count: 60, rate: 100, tag: "B" })
      yield* until(first, (r) => ticks(r).length >= 40)
      first.close()
      yield* Effect.promise(() => first.done)
      const seen = ticks(first)
      const resumed = yield* listen(eventsUrl(c), seen[seen.length - 1].id)
      yield* until(resumed, (r) => seen.length + ticks(r).length >= 120)
      const all = [...seen, ...ticks(resumed)]
      expect(all.length).toBe(120)
      expectIncreasing(all)
      for (const tag of ["A", "B"]) {
        const mine = all.map((e) => JSON.parse(e.data) as { tag: string; i: number }).filter((d) => d.tag === tag)
        expect(mine.map((d) => d.i)).toEqual(Array.from({ length: 60 }, (_, i) => i))
      }
      resumed.close()
      yield* endSession(a, onA)
      yield* endSession(b, onB)
      yield* expectOnlyBroadcastLeft(redis.url)
    }).pipe(Effect.scoped), 120_000)

  it.live("the instance holding a listener is killed while 50 events/s flow from another; resumed elsewhere, every event arrives once, in order", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const fleet = yield* Fleet.start({ redisUrl: redis.url, prefix: PREFIX, fixture: SERVER })
      const [a, b, c] = ["A", "B", "C"].map((n) => fleet.instance(n).url)
      const held = yield* listen(eventsUrl(c))
      const producer = yield* Effect.promise(() => openSession(a, VERSION))
      yield* callTool(a, producer, "broadcast", { count: 150, rate: 50, tag: "A" })
      yield* until(held, (r) => ticks(r).length >= 30)
      yield* fleet.signal("C", "SIGKILL")
      yield* Effect.promise(() => held.done)
      const seen = ticks(held)
      const resumed = yield* listen(eventsUrl(b), seen[seen.length - 1].id)
      yield* until(resumed, (r) => seen.length + ticks(r).length >= 150)
      const all = [...seen, ...ticks(resumed)]
      expect(all.map((e) => (JSON.parse(e.data) as { i: number }).i)).toEqual(Array.from({ length: 150 }, (_, i) => i))
      expectIncreasing(all)
      resumed.close()
      yield* endSession(a, producer)
      yield* expectOnlyBroadcastLeft(redis.url)
    }).pipe(Effect.scoped), 120_000)

  it.live.skipIf(!sessionsShared)(
    "a session's GET stream: its holder is killed while a handler on another instance sends 50 notifications/s; resumed elsewhere, every one arrives once, in order, in the same session",
    () =>
      Effect.gen(function*() {
        const redis = yield* RedisServer.make()
        const fleet = yield* Fleet.start({ redisUrl: redis.url, prefix: PREFIX, fixture: SERVER })
        const [a, b, c] = ["A", "B", "C"].map((n) => fleet.instance(n).url)
        const session = yield* Effect.promise(() => openSession(a, VERSION))
        const headers = { "mcp-session-id": session, "mcp-protocol-version": VERSION, accept: "text/event-stream" }
        const held = yield* Effect.promise(() => openSse(c, { method: "GET", headers }))
        expect(held.response.status).toBe(200)
        const notes = (r: SseReader) => r.messages().filter((m) => m.method === "notifications/message")
        // The handler runs on B; the GET stream is held by C.
        yield* callTool(b, session, "notify", { count: 150, rate: 50 })
        yield* until(held.reader!, (r) => notes(r).length >= 30)
        yield* fleet.signal("C", "SIGKILL")
        yield* Effect.promise(() => held.reader!.done)
        const seen = held.reader!.events.filter((e) => e.data !== "")
        const resumed = yield* Effect.promise(() =>
          openSse(a, { method: "GET", headers: { ...headers, "last-event-id": seen[seen.length - 1].id! } })
        )
        expect(resumed.response.status).toBe(200)
        expect(resumed.response.headers.get("mcp-session-id")).toBe(session)
        yield* until(resumed.reader!, (r) => notes(held.reader!).length + notes(r).length >= 150)
        const all = [...notes(held.reader!), ...notes(resumed.reader!)]
        expect(all.map((m) => m.params.data)).toEqual(Array.from({ length: 150 }, (_, i) => `n${i}`))
        expectIncreasing([...seen, ...resumed.reader!.events.filter((e) => e.data !== "")])
        resumed.reader!.close()
        // Another session's client, on an instance that never wrote this stream, cannot resume it.
        const other = yield* Effect.promise(() => openSession(b, VERSION))
        const refused = yield* Effect.promise(() =>
          fetch(b, {
            method: "GET",
            headers: { ...headers, "mcp-session-id": other, "last-event-id": seen[seen.length - 1].id! }
          })
        )
        expect(refused.status).toBe(400)
        yield* endSession(b, other)
        yield* endSession(a, session)
        expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}log:`)).toEqual([])
        expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}streams:`)).toEqual([])
        expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}sess:`)).toEqual([])
      }).pipe(Effect.scoped),
    120_000
  )
})
