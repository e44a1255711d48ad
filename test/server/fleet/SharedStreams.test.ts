/**
 * The delivery path of streams held anywhere, with each "instance" a store
 * on a connection of its own to one real redis-server: a session's
 * standalone stream written by two instances is delivered by a third and,
 * once that connection is gone, resumed on a fourth, each message once and
 * in order; a POST's stream whose client went away is stored as it is
 * written and, resumed on another instance, followed to its end; and over
 * HTTP, a finished POST stream resumes through the log while a stream of
 * another session is refused.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Stream } from "effect"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import * as EventStore from "../../../src/server/EventStore.ts"
import type { EventStoreShape } from "../../../src/server/EventStore.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import * as OutStream from "../../../src/server/http/OutStream.ts"
import { mayResume, type Session, sessionDigest, sharedStandaloneId } from "../../../src/server/http/Sessions.ts"
import * as SharedStream from "../../../src/server/http/SharedStream.ts"
import * as RedisEventStore from "../../../src/server/RedisEventStore.ts"
import * as RedisFleet from "../../../src/server/RedisFleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"
import { openSession, openSse, post } from "../http/helpers.ts"

const PREFIX = "shared:"

const instanceStore = (url: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(RedisFleet.layerConnection({ url }))
    return yield* Effect.provideContext(RedisEventStore.make({ prefix: PREFIX }), context)
  })

interface Event {
  readonly id: string | undefined
  readonly data: string
}

/** SSE frames to their events (comments and priming events left out). */
const events = (frames: Stream.Stream<Uint8Array>): Stream.Stream<Event> => {
  const decoder = new TextDecoder()
  let buffer = ""
  return frames.pipe(
    Stream.flatMap((bytes) => {
      buffer += decoder.decode(bytes, { stream: true })
      const blocks = buffer.split("\n\n")
      buffer = blocks.pop()!
      const out: Array<Event> = []
      for (const block of blocks) {
        let id: string | undefined
        const data: Array<string> = []
        for (const line of block.split("\n")) {
          if (line.startsWith("id: ")) id = line.slice(4)
          else if (line.startsWith("data: ")) data.push(line.slice(6))
          else if (line === "data:") data.push("")
        }
        if (data.length > 0 && data.join("\n") !== "") out.push({ id, data: data.join("\n") })
      }
      return Stream.fromIterable(out)
    })
  )
}

const note = (data: string): JsonRpc.JsonRpcMessage => ({
  jsonrpc: "2.0",
  method: "notifications/message",
  params: { level: "info", data }
})
const dataOf = (e: Event) => (JSON.parse(e.data) as { params: { data: string } }).params.data

const redisIdOf = (eventId: string) => {
  const [ms, seq] = eventId.slice(eventId.lastIndexOf("_") + 1).split("-").map(BigInt)
  return ms * 1_000_000n + seq
}

const tailed = (store: EventStoreShape) => {
  if (store.tail === undefined) throw new Error("no tail")
  return { store, tail: store.tail }
}

describe("streams held anywhere: the resumption check", () => {
  it("in a fleet, any stream under the session's digest resumes in that session, wherever it was written; another session's never", () => {
    const session = { id: "session-one", ownedStreams: new Set<string>() } as unknown as Session
    const shared = EventStore.makeMemoryUnsafe({ tail: true })
    const local = EventStore.makeMemoryUnsafe()
    const mine = `${sessionDigest("session-one")}~elsewhere-7`
    const theirs = `${sessionDigest("session-two")}~elsewhere-7`
    expect(sharedStandaloneId("session-one").startsWith(`${sessionDigest("session-one")}~`)).toBe(true)
    expect(mayResume(session, mine, shared)).toBe(true)
    expect(mayResume(session, sharedStandaloneId("session-one"), shared)).toBe(true)
    expect(mayResume(session, theirs, shared)).toBe(false)
    expect(mayResume(session, "broadcast", shared)).toBe(false)
    // One process: only the streams this session made here.
    expect(mayResume(session, mine, local)).toBe(false)
    session.ownedStreams.add(mine)
    expect(mayResume(session, mine, local)).toBe(true)
  })
})

describe.skipIf(!RedisServer.present)("streams held anywhere: the delivery path", () => {
  it.live("a standalone stream written on A and B is delivered by C and resumed on D: each message once, in order", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const streamId = "digest~standalone"
      const [a, b, c, d] = yield* Effect.forEach(["A", "B", "C", "D"], () =>
        Effect.map(instanceStore(redis.url), (store) => SharedStream.makeStandalone({ streamId, ...tailed(store) })))
      const opening = { priming: true, retryMs: 1000, lastEventId: undefined }
      // C holds the client's connection; it takes 30 events and goes away.
      const held = yield* Effect.forkScoped(Stream.runCollect(Stream.take(events(c.attach(opening)), 30)))
      const produced = yield* Effect.forkScoped(Effect.all(
        [a, b].map((out, who) =>
          Effect.forEach(Array.from({ length: 50 }, (_, i) => i), (i) => out.offer(note(`${who}:${i}`)), { discard: true })
        ),
        { concurrency: "unbounded" }
      ))
      const first = yield* Fiber.join(held)
      expect(c.hasReader()).toBe(false)
      const resumed = yield* Stream.runCollect(
        Stream.take(events(d.attach({ priming: false, retryMs: undefined, lastEventId: first[first.length - 1].id })), 70)
      )
      yield* Fiber.join(produced)
      const all = [...first, ...resumed]
      const ids = all.map((e) => redisIdOf(e.id!))
      for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true)
      for (const who of [0, 1]) {
        expect(all.map(dataOf).filter((x) => x.startsWith(`${who}:`))).toEqual(
          Array.from({ length: 50 }, (_, i) => `${who}:${i}`)
        )
      }
    }).pipe(Effect.scoped), 60_000)

  it.live("a new connection takes the stream over from the one before on its instance", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const out = SharedStream.makeStandalone({ streamId: "dg~standalone", ...tailed(yield* instanceStore(redis.url)) })
      const opening = { priming: false, retryMs: undefined, lastEventId: undefined }
      const text = (chunk: ReadonlyArray<Uint8Array>) => chunk.map((b) => new TextDecoder().decode(b)).join("")
      // A connection's first frame comes once it follows the stream.
      const first = yield* Stream.toPull(out.attach(opening))
      expect(text(yield* first)).toBe(": stream open\n\n")
      yield* out.offer(note("one"))
      expect(text(yield* first)).toContain("\"one\"")
      const second = yield* Stream.toPull(out.attach(opening))
      expect(text(yield* second)).toBe(": stream open\n\n")
      // The first connection ended when the second opened.
      expect(Exit.isFailure(yield* Effect.exit(first))).toBe(true)
      expect(out.hasReader()).toBe(true)
      yield* out.offer(note("two"))
      expect(text(yield* second)).toContain("\"two\"")
      yield* out.detach
      expect(out.hasReader()).toBe(false)
      expect(Exit.isFailure(yield* Effect.exit(second))).toBe(true)
    }).pipe(Effect.scoped), 60_000)

  it.live("a POST's stream whose client went away is stored as it is written; resumed on another instance it is followed to its end", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const a = yield* instanceStore(redis.url)
      const b = tailed(yield* instanceStore(redis.url))
      const out = OutStream.makeUnsafe({ streamId: "dg~post", store: a })
      const reading = yield* Effect.forkScoped(
        Stream.runCollect(Stream.take(events(out.attach({ priming: true, retryMs: undefined, lastEventId: undefined })), 2))
      )
      yield* out.offer(note("one"))
      yield* out.offer(note("two"))
      const seen = yield* Fiber.join(reading)
      expect(out.hasReader()).toBe(false)
      // No one reads here: straight to the store, nothing held.
      yield* out.offer(note("three"))
      yield* out.offer({ jsonrpc: "2.0", id: 1, result: {} })
      expect(out.bufferedBytes()).toBe(0)
      yield* out.end
      const rest = yield* Stream.runCollect(events(SharedStream.follower({
        tail: b.tail,
        streamId: "dg~post",
        from: { after: seen[1].id! }
      })))
      expect(rest.map((e) => e.data)).toEqual([JSON.stringify(note("three")), `{"jsonrpc":"2.0","id":1,"result":{}}`])
    }).pipe(Effect.scoped), 60_000)

  it.live("over HTTP: a finished POST stream resumes from the log and ends; another session's stream is refused", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const server = McpServer.make({
        serverInfo: { name: "shared-streams", version: "1.0.0" },
        stateless: false,
        capabilities: { tools: {}, logging: {} }
      }).pipe(
        McpServer.method("tools/call", {}, (_params, ctx) =>
          Effect.as(Effect.orDie(ctx.notify("notifications/message", { level: "info", data: "working" })), {
            content: [{ type: "text", text: "done" }]
          }))
      )
      const context = yield* Layer.build(
        McpServer.layerHttp(server, { port: 0 }).pipe(Layer.provide(RedisFleet.layer({ url: redis.url, prefix: PREFIX })))
      )
      const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
      const version = "2025-11-25"
      const mine = yield* Effect.promise(() => openSession(url, version))
      const other = yield* Effect.promise(() => openSession(url, version))
      const headers = (session: string) => ({ "mcp-session-id": session, "mcp-protocol-version": version })
      const call = yield* Effect.promise(async () => {
        const res = await post(url, { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "x" } }, {
          ...headers(mine),
          accept: "text/event-stream"
        })
        return await res.text()
      })
      const priming = /^id: (.+)$/m.exec(call)![1]
      const resumed = yield* Effect.promise(() =>
        openSse(url, { method: "GET", headers: { ...headers(mine), accept: "text/event-stream", "last-event-id": priming } })
      )
      expect(resumed.response.status).toBe(200)
      yield* Effect.promise(() => resumed.reader!.done)
      expect(resumed.reader!.messages().map((m) => m.method ?? m.result?.content?.[0]?.text)).toEqual([
        "notifications/message",
        "done"
      ])
      const refused = yield* Effect.promise(() =>
        fetch(url, { method: "GET", headers: { ...headers(other), accept: "text/event-stream", "last-event-id": priming } })
      )
      expect(refused.status).toBe(400)
    }).pipe(Effect.scoped), 60_000)
})
