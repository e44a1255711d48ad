/**
 * McpServer's per-session records and `SessionState` slots live as long as
 * the transport's session, with nothing wired by the server's author: HTTP
 * (DELETE, idle expiry, the transport closing), stdio (the end of stdin) and
 * the in-memory pair (its scope closing, `kill`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Cause, Deferred, Effect, Exit, Fiber, Ref, Schema, Scope, Sink, Stdio, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as JsonRpc from "../../src/JsonRpc.ts"
import * as ProtocolVersion from "../../src/ProtocolVersion.ts"
import * as RequestMeta from "../../src/RequestMeta.ts"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as SessionStore from "../../src/server/internal/SessionStore.ts"
import * as SessionState from "../../src/server/SessionState.ts"
import * as StdioServerTransport from "../../src/server/StdioServerTransport.ts"
import { eventually, openSession, openSse, post, run, serve } from "./http/helpers.ts"

const VERSION = "2025-11-25"

/** The slots a server's handlers use, and the connections its `conn` slot holds open right now. */
const fixture = () => {
  const open = new Set<number>()
  let made = 0
  const cwd = SessionState.make("cwd", () => "/")
  const conn = SessionState.make(
    "conn",
    Effect.acquireRelease(
      Effect.sync(() => {
        const id = ++made
        open.add(id)
        return id
      }),
      (id) => Effect.sync(() => void open.delete(id))
    )
  )
  const server = McpServer.make({ serverInfo: { name: "session-state", version: "1" }, stateless: true }).pipe(
    McpServer.method("shell/cd", { params: Schema.Struct({ path: Schema.String }) }, ({ path }, ctx) =>
      Effect.flatMap(ctx.sessionState(cwd), (ref) => Effect.as(Ref.set(ref, path), {}))),
    McpServer.method("shell/pwd", {}, (_, ctx) =>
      Effect.gen(function*() {
        const dir = yield* Effect.flatMap(ctx.sessionState(cwd), Ref.get)
        const id = yield* Effect.flatMap(ctx.sessionState(conn), Ref.get)
        return { cwd: dir, conn: id }
      }))
  )
  return { open, server, made: () => made }
}

const initParams = { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "t", version: "1" } }

// ---------------------------------------------------------------------------
// HTTP

const headersFor = (sessionId: string) => ({ "mcp-session-id": sessionId, "mcp-protocol-version": VERSION })

const call = (url: string, sessionId: string, method: string, params?: unknown) =>
  Effect.promise(async () => {
    const res = await post(url, { jsonrpc: "2.0", id: 1, method, params }, { ...headersFor(sessionId), accept: "application/json" })
    return ((await res.json()) as { result: Record<string, unknown> }).result
  })

const deleteSession = (url: string, sessionId: string) =>
  Effect.promise(async () => {
    const res = await fetch(url, { method: "DELETE", headers: headersFor(sessionId) })
    await res.text()
    return res.status
  })

describe("McpServer sessions end with the transport's", () => {
  describe("over HTTP", () => {
    it.live("DELETE: no record is left with nothing wired", () =>
      Effect.gen(function*() {
        const { server } = fixture()
        const handle = yield* McpServer.toHandler(server)
        const { url } = yield* serve(undefined, () => handle.handler)
        const [kept, deleted] = yield* Effect.promise(() => Promise.all([openSession(url), openSession(url)]))
        expect((yield* handle.sessions).map((s) => s.sessionId).sort()).toEqual([kept, deleted].sort())
        expect(yield* deleteSession(url, deleted)).toBe(204)
        expect((yield* handle.sessions).map((s) => s.sessionId)).toEqual([kept])
      }))

    it.live("state lives across a session's requests, apart per session, and is finalized at DELETE", () =>
      Effect.gen(function*() {
        const { open, server } = fixture()
        const handle = yield* McpServer.toHandler(server)
        const { url } = yield* serve(undefined, () => handle.handler)
        const [a, b] = yield* Effect.promise(() => Promise.all([openSession(url), openSession(url)]))
        yield* call(url, a, "shell/cd", { path: "/home/a" })
        const firstA = yield* call(url, a, "shell/pwd")
        expect(firstA.cwd).toBe("/home/a")
        expect(yield* call(url, a, "shell/pwd")).toEqual(firstA)
        const firstB = yield* call(url, b, "shell/pwd")
        expect(firstB.cwd).toBe("/")
        expect(firstB.conn).not.toBe(firstA.conn)
        expect(open).toEqual(new Set([firstA.conn, firstB.conn]))
        expect(yield* deleteSession(url, a)).toBe(204)
        expect(open).toEqual(new Set([firstB.conn]))
        expect(yield* call(url, b, "shell/pwd")).toEqual(firstB)
      }))

    it.effect("idle expiry ends the session's record and state", () =>
      Effect.gen(function*() {
        const { open, server } = fixture()
        const handle = yield* McpServer.toHandler(server)
        const { url } = yield* serve({ sessionIdleTimeout: "30 minutes" }, () => handle.handler)
        const id = yield* Effect.promise(() => openSession(url))
        yield* call(url, id, "shell/pwd")
        expect(open.size).toBe(1)
        yield* TestClock.adjust("31 minutes")
        const gone = yield* Effect.promise(() => eventually(async () => (await run(handle.sessions)).length === 0))
        expect(gone).toBe(true)
        expect(open.size).toBe(0)
      }))

    it.live("the transport closing ends every session's record and state", () =>
      Effect.gen(function*() {
        const { open, server } = fixture()
        const handle = yield* McpServer.toHandler(server)
        const scope = yield* Scope.make()
        const { url } = yield* serve(undefined, () => handle.handler).pipe(Scope.provide(scope))
        const ids = yield* Effect.promise(() => Promise.all([openSession(url), openSession(url), openSession(url)]))
        yield* Effect.forEach(ids, (id) => call(url, id, "shell/pwd"), { discard: true })
        expect(open.size).toBe(3)
        yield* Scope.close(scope, Exit.void)
        expect(yield* handle.sessions).toEqual([])
        expect(open.size).toBe(0)
      }))

    it.live("a legacy SSE connection going away ends its session's record and state", () =>
      Effect.gen(function*() {
        const { open, server } = fixture()
        const handle = yield* McpServer.toHandler(server)
        const { base } = yield* serve({ legacySse: true }, () => handle.handler)
        const result = yield* Effect.promise(async () => {
          const sse = await openSse(`${base}/sse`, { headers: { accept: "text/event-stream" } })
          const reader = sse.reader!
          await reader.until((r) => r.events.some((e) => e.event === "endpoint"))
          const endpoint = reader.events.find((e) => e.event === "endpoint")!.data
          const send = async (body: unknown) => void (await (await post(`${base}${endpoint}`, body)).text())
          await send({ jsonrpc: "2.0", id: 1, method: "initialize", params: initParams })
          await send({ jsonrpc: "2.0", method: "notifications/initialized" })
          await send({ jsonrpc: "2.0", id: 2, method: "shell/pwd" })
          await reader.until((r) => r.messages().some((m) => m.id === 2))
          const before = { sessions: (await run(handle.sessions)).length, open: open.size }
          reader.close()
          const gone = await eventually(async () => (await run(handle.sessions)).length === 0)
          return { before, gone }
        })
        expect(result.before).toEqual({ sessions: 1, open: 1 })
        expect(result.gone).toBe(true)
        expect(open.size).toBe(0)
      }))

    it.live("many sessions opened and deleted leave no record and no state", () =>
      Effect.gen(function*() {
        const { open, server, made } = fixture()
        const handle = yield* McpServer.toHandler(server)
        const { url, transport } = yield* serve(undefined, () => handle.handler)
        yield* Effect.forEach(Array.from({ length: 40 }, (_, i) => i), (i) =>
          Effect.gen(function*() {
            const id = yield* Effect.promise(() => openSession(url))
            yield* call(url, id, "shell/cd", { path: `/s/${i}` })
            expect((yield* call(url, id, "shell/pwd")).cwd).toBe(`/s/${i}`)
            expect(yield* deleteSession(url, id)).toBe(204)
          }), { concurrency: 8, discard: true })
        expect(made()).toBe(40)
        expect(yield* handle.sessions).toEqual([])
        expect(open.size).toBe(0)
        expect(yield* transport.sessionIds).toEqual([])
      }))

    it.live("a request of the stateless era gets slots of its own, finalized when it ends", () =>
      Effect.gen(function*() {
        const { open, server, made } = fixture()
        const handle = yield* McpServer.toHandler(server)
        const { url } = yield* serve(undefined, () => handle.handler)
        const meta = RequestMeta.requestMeta({ protocolVersion: ProtocolVersion.LATEST_STATELESS, clientCapabilities: {} })
        const statelessCall = (method: string, params: Record<string, unknown>) =>
          Effect.promise(async () => {
            const res = await post(url, { jsonrpc: "2.0", id: 1, method, params: { ...params, _meta: meta } }, {
              "mcp-protocol-version": ProtocolVersion.LATEST_STATELESS,
              "mcp-method": method,
              accept: "application/json"
            })
            return ((await res.json()) as { result: Record<string, unknown> }).result
          })
        yield* statelessCall("shell/cd", { path: "/elsewhere" })
        expect(yield* statelessCall("shell/pwd", {})).toMatchObject({ cwd: "/" })
        expect(yield* statelessCall("shell/pwd", {})).toMatchObject({ cwd: "/" })
        expect(made()).toBe(2)
        expect(open.size).toBe(0)
        expect(yield* handle.sessions).toEqual([])
      }))
  })

  // -------------------------------------------------------------------------
  // stdio

  describe("over stdio", () => {
    const enc = new TextEncoder()
    const line = (m: unknown) => enc.encode(JSON.stringify(m) + "\n")

    it.effect("the end of stdin ends the record and the state, while the server's scope is still open", () =>
      Effect.gen(function*() {
        const { open, server } = fixture()
        const handle = yield* McpServer.toHandler(server)
        const replies: Array<string> = []
        const input = [
          line(JsonRpc.request(1, "initialize", initParams)),
          line(JsonRpc.notification("notifications/initialized")),
          line(JsonRpc.request(2, "shell/cd", { path: "/tmp" })),
          line(JsonRpc.request(3, "shell/pwd"))
        ]
        const stdio = yield* StdioServerTransport.make(handle.handler, { redirectConsole: false }).pipe(
          Effect.provide(Stdio.layerTest({
            stdin: Stream.fromIterable(input),
            stdout: () =>
              Sink.forEach((chunk: string | Uint8Array) =>
                Effect.sync(() => void replies.push(typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk)))
              )
          }))
        )
        const reason = yield* stdio.awaitDone
        expect(reason.reason).toBe("stdin ended")
        expect(replies.join("")).toContain(`"cwd":"/tmp"`)
        expect(yield* handle.sessions).toEqual([])
        expect(open.size).toBe(0)
      }))
  })

  // -------------------------------------------------------------------------
  // in memory

  describe("in memory", () => {
    const session = (handle: McpServer.ServerHandle<never>, scope: Scope.Scope) =>
      Effect.gen(function*() {
        const pair = yield* InMemoryTransport.makePair(handle.handler).pipe(Scope.provide(scope))
        yield* pair.client.request("initialize", initParams)
        yield* pair.client.notify("notifications/initialized")
        return pair
      })

    it.effect("the pair's scope closing ends the record and the state", () =>
      Effect.gen(function*() {
        const { open, server } = fixture()
        const handle = yield* McpServer.toHandler(server)
        const scope = yield* Scope.make()
        const { client } = yield* session(handle, scope)
        yield* client.request("shell/cd", { path: "/mem" })
        expect(yield* client.request("shell/pwd")).toMatchObject({ cwd: "/mem" })
        expect(open.size).toBe(1)
        expect((yield* handle.sessions).length).toBe(1)
        yield* Scope.close(scope, Exit.void)
        expect(yield* handle.sessions).toEqual([])
        expect(open.size).toBe(0)
      }))

    it.effect("kill ends the record and the state", () =>
      Effect.gen(function*() {
        const { open, server } = fixture()
        const handle = yield* McpServer.toHandler(server)
        const { client, server: end } = yield* session(handle, yield* Effect.scope)
        yield* client.request("shell/pwd")
        yield* end.kill()
        expect(yield* handle.sessions).toEqual([])
        expect(open.size).toBe(0)
      }))

    it.effect.prop(
      "connections opened and closed in any order leave no record and no state",
      { order: Arbitrary.schema(Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1000 })))) },
      ({ order }) =>
        Effect.gen(function*() {
          const { open, server } = fixture()
          const paths = order.slice(0, 12)
          // One handle per connection, as on stdio; each is checked after its own end.
          const connections = yield* Effect.forEach(paths, (n) =>
            Effect.gen(function*() {
              const handle = yield* McpServer.toHandler(server)
              const scope = yield* Scope.make()
              const { client } = yield* session(handle, scope)
              yield* client.request("shell/cd", { path: `/p/${n}` })
              return { handle, scope, client, n }
            }))
          const byOrder = connections.map((c, i) => ({ c, key: paths[(i * 7) % Math.max(1, paths.length)] ?? 0 }))
            .sort((x, y) => x.key - y.key)
          for (const { c } of byOrder) {
            expect(yield* c.client.request("shell/pwd")).toMatchObject({ cwd: `/p/${c.n}` })
            yield* Scope.close(c.scope, Exit.void)
            expect(yield* c.handle.sessions).toEqual([])
          }
          expect(open.size).toBe(0)
        })
    )
  })
})

// ---------------------------------------------------------------------------
// The store behind the slots

describe("SessionStore", () => {
  it.effect("concurrent first uses share one initial run", () =>
    Effect.gen(function*() {
      let runs = 0
      const gate = yield* Deferred.make<void>()
      const slot = SessionState.make("slow", Effect.andThen(Deferred.await(gate), Effect.sync(() => ++runs)))
      const store = SessionStore.make()
      const uses = yield* Effect.forkChild(Effect.all(Array.from({ length: 5 }, () => store.get(slot)), { concurrency: "unbounded" }))
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, undefined)
      const refs = yield* Fiber.join(uses)
      expect(new Set(refs).size).toBe(1)
      expect(runs).toBe(1)
    }))

  it.effect("a failed initial fails that use, releases what it acquired, and the next use tries again", () =>
    Effect.gen(function*() {
      const released: Array<number> = []
      let attempt = 0
      const slot = SessionState.make(
        "flaky",
        Effect.gen(function*() {
          const n = ++attempt
          yield* Effect.acquireRelease(Effect.succeed(n), (i) => Effect.sync(() => void released.push(i)))
          if (n === 1) return yield* Effect.fail("first attempt fails")
          return n
        })
      )
      const store = SessionStore.make()
      expect(yield* Effect.flip(store.get(slot))).toBe("first attempt fails")
      expect(released).toEqual([1])
      expect(yield* Effect.flatMap(store.get(slot), Ref.get)).toBe(2)
      yield* store.close
      expect(released).toEqual([1, 2])
    }))

  it.effect("release sees the slot's last value, before initial's own finalizers", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const slot = SessionState.make(
        "dir",
        Effect.acquireRelease(Effect.succeed("/"), (first) => Effect.sync(() => void seen.push(`finalizer ${first}`))),
        { release: (last) => Effect.sync(() => void seen.push(`release ${last}`)) }
      )
      const store = SessionStore.make()
      yield* Effect.flatMap(store.get(slot), (ref) => Ref.set(ref, "/work"))
      yield* store.close
      expect(seen).toEqual(["release /work", "finalizer /"])
    }))

  it.effect("a use after the session ended is a defect, and finalizers ran once", () =>
    Effect.gen(function*() {
      let closed = 0
      const slot = SessionState.make("r", Effect.acquireRelease(Effect.succeed(1), () => Effect.sync(() => void closed++)))
      const store = SessionStore.make()
      yield* store.get(slot)
      yield* store.close
      yield* store.close
      expect(closed).toBe(1)
      const exit = yield* Effect.exit(store.get(slot))
      expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
    }))
})
