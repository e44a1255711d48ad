import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Cause, Deferred, Effect, Exit, Fiber, Queue, Schema, Scope, Sink, Stdio, Stream } from "effect"
import { systemError } from "effect/PlatformError"
import { ChildProcess } from "effect/process"
import { TestClock } from "effect/testing"
import * as JsonRpc from "../../src/JsonRpc.ts"
import * as RequestMeta from "../../src/RequestMeta.ts"
import type { Handler } from "../../src/server/Handler.ts"
import * as StdioServerTransport from "../../src/server/StdioServerTransport.ts"
import * as Arbitraries from "../../src/testing/Arbitraries.ts"
import * as StdioInMemory from "../fixtures/stdio-in-memory.ts"

const enc = new TextEncoder()
const dec = new TextDecoder()

/** Answers `echo`-style: every request gets `{ method, params }`; notifications are recorded. */
const echo = (seen: Array<string> = []): Handler => (message) =>
  Effect.sync(() => {
    if (!("id" in message)) {
      seen.push(message.method)
      return null
    }
    return JsonRpc.success(message.id, { method: message.method, params: message.params ?? null })
  })

const line = (m: unknown) => JSON.stringify(m) + "\n"
const req = (id: JsonRpc.RequestId, method: string, params?: unknown) => JsonRpc.request(id, method, params)

/** Collects stdout writes; `lines` parses them as NDJSON. */
const collector = () => {
  const writes: Array<string> = []
  const stdout = () =>
    Sink.forEach((chunk: string | Uint8Array) =>
      Effect.sync(() => void writes.push(typeof chunk === "string" ? chunk : dec.decode(chunk)))
    )
  const lines = () =>
    writes.join("").split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l) as Record<string, unknown>)
  return { writes, stdout, lines }
}

/** Runs the server over a fixed stdin until it completes. */
const runOver = <R>(handler: Handler<R>, input: ReadonlyArray<string | Uint8Array>, options?: StdioServerTransport.StdioServerOptions) =>
  Effect.gen(function*() {
    const out = collector()
    const done = yield* StdioServerTransport.run(handler, { redirectConsole: false, ...options }).pipe(
      Effect.provide(Stdio.layerTest({
        stdin: Stream.fromIterable(input.map((c) => typeof c === "string" ? enc.encode(c) : c)),
        stdout: out.stdout
      }))
    )
    return { done, lines: out.lines(), writes: out.writes }
  })

/** An interactive server: feed stdin, take reply lines one by one. */
const interactive = <R>(handler: Handler<R>, options?: StdioServerTransport.StdioServerOptions) =>
  StdioInMemory.serve(handler, options)

describe("StdioServerTransport (in process, Stdio.layerTest)", () => {
  it.effect("answers requests, one NDJSON line each, and completes when stdin ends", () =>
    Effect.gen(function*() {
      const { done, lines, writes } = yield* runOver(echo(), [line(req(1, "ping")), line(req("b", "tools/list", { x: 1 }))])
      expect(lines).toContainEqual({ jsonrpc: "2.0", id: 1, result: { method: "ping", params: null } })
      expect(lines).toContainEqual({ jsonrpc: "2.0", id: "b", result: { method: "tools/list", params: { x: 1 } } })
      expect(lines).toHaveLength(2)
      expect(writes.join("").endsWith("\n")).toBe(true)
      expect(done.reason).toBe("stdin ended")
    }))

  it.effect("a burst read in one chunk is answered in writes of at most 16 replies, each whole, all of them", () =>
    Effect.gen(function*() {
      const burst = Array.from({ length: 40 }, (_, i) => line(req(i, "ping"))).join("")
      const { lines, writes } = yield* runOver(echo(), [burst])
      expect(lines.map((l) => l.id).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 40 }, (_, i) => i))
      expect(writes.length).toBeGreaterThanOrEqual(3)
      for (const write of writes) {
        expect(write.endsWith("\n")).toBe(true)
        expect(write.split("\n").length - 1).toBeLessThanOrEqual(16)
      }
    }))

  it.effect("requests of one read whose handlers yield once are answered in one write, as those answering at once are", () =>
    Effect.gen(function*() {
      const yieldOnce: Handler = (message) =>
        "id" in message ? Effect.andThen(Effect.yieldNow, Effect.succeed(JsonRpc.success(message.id, {}))) : Effect.succeed(null)
      const burst = Array.from({ length: 12 }, (_, i) => line(req(i, "ping"))).join("")
      const { lines, writes } = yield* runOver(yieldOnce, [burst])
      expect(lines.map((l) => l.id).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 12 }, (_, i) => i))
      expect(writes).toHaveLength(1)
    }))

  it.effect("requests of one read answered from separate I/O callbacks leave in at most two writes, not one each", () =>
    Effect.gen(function*() {
      const fromCallback: Handler = (message) => {
        if (!("id" in message)) return Effect.succeed(null)
        const reply = JsonRpc.success(message.id, {})
        return Effect.callback<typeof reply>((resume) => void setImmediate(() => resume(Effect.succeed(reply))))
      }
      const burst = Array.from({ length: 12 }, (_, i) => line(req(i, "ping"))).join("")
      const { lines, writes } = yield* runOver(fromCallback, [burst])
      expect(lines.map((l) => l.id).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 12 }, (_, i) => i))
      // The first reply goes out at the end of its callback's tick; the others wait for the check phase.
      expect(writes.length).toBeLessThanOrEqual(2)
    }))

  it.effect("ignores blank and whitespace-only lines, accepts CRLF and a final line without newline", () =>
    Effect.gen(function*() {
      const { lines } = yield* runOver(echo(), [
        "\n\n   \n\t\r\n",
        JSON.stringify(req(1, "a")) + "\r\n",
        "\n",
        JSON.stringify(req(2, "b"))
      ])
      expect(lines.map((l) => l.id).sort()).toEqual([1, 2])
      expect(lines.every((l) => "result" in l)).toBe(true)
    }))

  it.effect("answers an unparsable line with -32700 and id null, then keeps serving", () =>
    Effect.gen(function*() {
      const { lines } = yield* runOver(echo(), ["{not json\n", line(req(2, "ping"))])
      const parseError = lines.find((l) => l.id === null)
      expect(parseError?.error).toMatchObject({ code: -32700, message: "Parse error" })
      expect((parseError?.error as { data: { text: string } }).data.text).toBe("{not json")
      expect(lines.find((l) => l.id === 2)).toMatchObject({ result: { method: "ping" } })
    }))

  it.effect("answers -32600 for a message that is not JSON-RPC", () =>
    Effect.gen(function*() {
      const { lines } = yield* runOver(echo(), [line({ jsonrpc: "1.0", id: 3, method: "x" }), line(42)])
      expect(lines).toHaveLength(2)
      expect(lines.find((l) => l.id === 3)?.error).toMatchObject({ code: -32600 })
      expect(lines.filter((l) => l.id === null).map((l) => (l.error as { code: number }).code)).toEqual([-32600])
    }))

  it.effect("a handler failure or defect becomes -32603 with no stack trace on the wire", () =>
    Effect.gen(function*() {
      const handler: Handler = (m) =>
        "id" in m && m.method === "fail"
          ? Effect.fail(new Error("secret failure detail"))
          : "id" in m && m.method === "die"
          ? Effect.die(new Error("secret defect detail"))
          : Effect.succeed(null)
      const { writes, lines } = yield* runOver(handler, [line(req(1, "fail")), line(req(2, "die"))])
      expect(lines).toHaveLength(2)
      for (const l of lines) expect(l.error).toEqual({ code: -32603, message: "Internal error" })
      const wire = writes.join("")
      expect(wire).not.toContain("secret")
      expect(wire).not.toContain("    at ")
    }))

  it.effect("a batch of notifications only writes nothing at all, and its notifications are handled", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const { writes } = yield* runOver(echo(seen), [
        line([JsonRpc.notification("notifications/a"), JsonRpc.notification("notifications/b")])
      ])
      expect(writes).toEqual([])
      expect(seen.sort()).toEqual(["notifications/a", "notifications/b"])
    }))

  it.effect("a mixed batch answers with an array of the requests' replies (and invalid entries), nulls filtered", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const { lines, writes } = yield* runOver(echo(seen), [
        line([req(1, "a"), JsonRpc.notification("n"), req(2, "b"), { jsonrpc: "2.0", id: 9 }])
      ])
      expect(writes.join("").split("\n").filter(Boolean)).toHaveLength(1)
      const batch = JSON.parse(writes.join("")) as Array<Record<string, unknown>>
      expect(Array.isArray(batch)).toBe(true)
      expect(batch.map((r) => r.id).sort()).toEqual([1, 2, 9])
      expect(batch.find((r) => r.id === 9)?.error).toMatchObject({ code: -32600 })
      expect(seen).toEqual(["n"])
      expect(lines).toHaveLength(1)
    }))

  it.effect("rejects batches when allowBatch is false", () =>
    Effect.gen(function*() {
      const { lines } = yield* runOver(echo(), [line([req(1, "a")])], { allowBatch: false })
      expect(lines).toEqual([expect.objectContaining({ id: null, error: expect.objectContaining({ code: -32600 }) })])
    }))

  it.effect("a batch over maxBatchSize gets one -32600 with the limit and none of it runs; one at the limit is served", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const { lines } = yield* runOver(echo(seen), [
        line([req(1, "a"), req(2, "b"), JsonRpc.notification("n")]),
        line([req(3, "c"), req(4, "d")])
      ], { maxBatchSize: 2 })
      expect(lines[0]).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: "Invalid Request", data: { reason: "a batch may hold at most 2 entries", limit: 2, size: 3 } }
      })
      expect(seen).toEqual([])
      expect((lines[1] as unknown as Array<{ id: number }>).map((r) => r.id).sort()).toEqual([3, 4])
    }))

  it.effect("a batch holding a stateless-era message (its _meta names a protocol version) gets one -32600 and none of it runs", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const modernMeta = RequestMeta.requestMeta({ protocolVersion: "2026-07-28", clientCapabilities: {} })
      const { lines } = yield* runOver(echo(seen), [
        line([JsonRpc.notification("n"), req(1, "tools/list"), req(2, "tools/call", { name: "t", _meta: modernMeta })]),
        line([JsonRpc.notification("m", { _meta: modernMeta })]),
        // On its own, the same request is served (by the handler's stateless-era rules).
        line(req(3, "tools/call", { name: "t", _meta: modernMeta }))
      ])
      const refused = {
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: "Invalid Request", data: expect.stringContaining("no batches") }
      }
      expect(lines).toEqual([refused, refused, expect.objectContaining({ id: 3, result: expect.anything() })])
      expect(seen).toEqual([])
    }))

  it.effect("the default maxBatchSize is 100", () =>
    Effect.gen(function*() {
      const batch = (n: number) => line(Array.from({ length: n }, (_, i) => req(i, "p")))
      const { lines } = yield* runOver(echo(), [batch(101), batch(100)])
      expect(lines[0]).toMatchObject({ id: null, error: { code: -32600, data: { limit: 100, size: 101 } } })
      expect(lines[1]).toHaveLength(100)
    }))

  it.effect("an oversized line gets -32600 explaining the limit, is dropped, and serving goes on", () =>
    Effect.gen(function*() {
      const big = JSON.stringify(req(1, "big", { data: "x".repeat(5000) }))
      // Split the big line across chunks, so the limit is crossed mid-line.
      const { lines } = yield* runOver(echo(), [big.slice(0, 3000), big.slice(3000) + "\n", line(req(2, "ping"))], {
        maxMessageBytes: 1024
      })
      expect(lines).toHaveLength(2)
      const rejected = lines.find((l) => l.id === null)
      expect(rejected?.error).toMatchObject({ code: -32600, data: { limit: 1024 } })
      expect((rejected?.error as { data: { size: number } }).data.size).toBeGreaterThan(1024)
      expect(lines.find((l) => l.id === 2)).toMatchObject({ result: { method: "ping" } })
    }))

  it.effect("serves requests concurrently: a slow call does not block a ping behind it", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      const handler: Handler = (m) =>
        "id" in m
          ? m.method === "slow"
            ? Effect.as(Deferred.await(release), JsonRpc.success(m.id, "slow"))
            : Effect.succeed(JsonRpc.success(m.id, "fast"))
          : Effect.succeed(null)
      const h = yield* interactive(handler)
      yield* h.send(req(1, "slow"))
      yield* h.send(req(2, "ping"))
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", id: 2, result: "fast" })
      yield* Deferred.succeed(release, undefined)
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", id: 1, result: "slow" })
      yield* h.end
      expect((yield* h.server.awaitDone).reason).toBe("stdin ended")
    }))

  it.effect("handles single notifications in arrival order", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const handler: Handler = (m) =>
        "id" in m
          ? Effect.succeed(JsonRpc.success(m.id, {}))
          // Odd notifications take longer: order must still hold.
          : Effect.sync(() => void seen.push(m.method)).pipe(
            Effect.delay(Number(m.method.slice(1)) % 2 === 1 ? 1 : 0),
            Effect.as(null)
          )
      const input = Array.from({ length: 30 }, (_, i) => line(JsonRpc.notification(`n${i}`)))
      const fiber = yield* runOver(handler, input).pipe(Effect.forkChild)
      for (let i = 0; i < 30; i++) yield* TestClock.adjust(1)
      yield* Fiber.join(fiber)
      expect(seen).toEqual(input.map((_, i) => `n${i}`))
    }))

  it.effect("a request starts only after the notifications that arrived before it were handled", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const seen: Array<string> = []
      const handler: Handler = (m) =>
        "id" in m
          ? Effect.sync(() => JsonRpc.success(m.id, { seen: [...seen] }))
          : Deferred.await(gate).pipe(Effect.andThen(Effect.sync(() => void seen.push(m.method))), Effect.as(null))
      const h = yield* interactive(handler)
      yield* h.send(JsonRpc.notification("notifications/initialized"))
      yield* h.send(req(1, "tools/list"))
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow
      expect(yield* Queue.size(h.replies)).toBe(0)
      yield* Deferred.succeed(gate, undefined)
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", id: 1, result: { seen: ["notifications/initialized"] } })
      yield* h.end
      yield* h.server.awaitDone
    }))

  it.effect("a notification handler may wait for the client's answer to its own request (responses bypass the lane)", () =>
    Effect.gen(function*() {
      const roots = yield* Deferred.make<unknown>()
      const handler: Handler = (m, ctx) =>
        "id" in m
          ? Effect.succeed(JsonRpc.success(m.id, "pong"))
          : m.method === "notifications/roots/list_changed"
          ? ctx.request("roots/list").pipe(Effect.flatMap((r) => Deferred.succeed(roots, r)), Effect.as(null))
          : Effect.succeed(null)
      const h = yield* interactive(handler)
      yield* h.send(JsonRpc.notification("notifications/roots/list_changed"))
      const asked = yield* h.next
      expect(asked).toMatchObject({ method: "roots/list" })
      yield* h.send(JsonRpc.success(asked.id as JsonRpc.RequestId, { roots: ["a"] }))
      expect(yield* Deferred.await(roots)).toEqual({ roots: ["a"] })
      yield* h.send(req(2, "ping"))
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", id: 2, result: "pong" })
      yield* h.end
      yield* h.server.awaitDone
    }))

  it.effect("stdin EOF: waits for the replies in flight, writes them, then completes", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const handler: Handler = (m) =>
        "id" in m
          ? Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Deferred.await(release)),
            Effect.as(JsonRpc.success(m.id, "late"))
          )
          : Effect.succeed(null)
      const h = yield* interactive(handler)
      yield* h.send(req(7, "work"))
      yield* Deferred.await(started)
      yield* h.end
      const done = yield* h.server.awaitDone.pipe(Effect.forkChild)
      yield* Effect.yieldNow
      expect(done.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(release, undefined)
      expect((yield* Fiber.join(done)).reason).toBe("stdin ended")
      expect(yield* Queue.takeAll(h.replies)).toEqual([{ jsonrpc: "2.0", id: 7, result: "late" }])
    }))

  it.effect("stdin EOF: a handler still running after the grace period is interrupted and the server completes", () =>
    Effect.gen(function*() {
      const interrupted = yield* Deferred.make<void>()
      const handler: Handler = (m) =>
        "id" in m ? Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))) : Effect.succeed(null)
      const h = yield* interactive(handler, { shutdownGracePeriod: "5 seconds" })
      yield* h.send(req(1, "hang"))
      yield* h.end
      const done = yield* h.server.awaitDone.pipe(Effect.forkChild)
      yield* TestClock.adjust("5 seconds")
      yield* Deferred.await(interrupted)
      expect((yield* Fiber.join(done)).reason).toBe("stdin ended")
      expect(yield* Queue.size(h.replies)).toBe(0)
    }))

  it.effect("stdin EOF while the client no longer reads stdout: the grace period bounds the flush", () =>
    Effect.gen(function*() {
      const fiber = yield* StdioServerTransport.run(echo(), { redirectConsole: false, shutdownGracePeriod: "3 seconds" }).pipe(
        Effect.provide(Stdio.layerTest({
          stdin: Stream.make(enc.encode(line(req(1, "ping")))),
          stdout: () => Sink.forEach(() => Effect.never)
        })),
        Effect.forkChild
      )
      // Virtual time only: step until the server gives up on stdout (bounded).
      for (let i = 0; i < 100 && fiber.pollUnsafe() === undefined; i++) yield* TestClock.adjust("100 millis")
      expect((yield* Fiber.join(fiber)).reason).toBe("stdin ended")
    }))

  it.effect("notifications/cancelled interrupts the running handler and no reply is written", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const handler: Handler = (m) =>
        "id" in m && m.method === "hang"
          ? Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
          )
          : "id" in m
          ? Effect.succeed(JsonRpc.success(m.id, "pong"))
          : Effect.succeed(null)
      const h = yield* interactive(handler)
      yield* h.send(req(1, "hang"))
      yield* Deferred.await(started)
      yield* h.send(JsonRpc.notification("notifications/cancelled", { requestId: 1, reason: "user" }))
      yield* Deferred.await(interrupted)
      yield* h.send(req(2, "ping"))
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", id: 2, result: "pong" })
      yield* h.end
      yield* h.server.awaitDone
      // No reply for the cancelled request, then or later.
      expect(yield* Queue.size(h.replies)).toBe(0)
    }))

  it.effect("a cancellation in the same chunk as its request still finds the request", () =>
    Effect.gen(function*() {
      let ran = 0
      const handler: Handler = (m) =>
        "id" in m ? Effect.sync(() => ran++).pipe(Effect.andThen(Effect.never)) : Effect.succeed(null)
      const { lines, done } = yield* runOver(handler, [
        line(req(1, "hang")) + line(JsonRpc.notification("notifications/cancelled", { requestId: 1 }))
      ])
      expect(lines).toEqual([])
      expect(done.reason).toBe("stdin ended")
      expect(ran).toBe(1)
    }))

  it.effect("server-initiated requests go to stdout and the client's response comes back through the session (context destructured)", () =>
    Effect.gen(function*() {
      const handler: Handler = (m, { notify, request }) =>
        "id" in m
          ? notify("notifications/progress", { progress: 1 }).pipe(
            Effect.andThen(request("roots/list", {})),
            Effect.map((result) => JsonRpc.success(m.id, { fromClient: result }))
          )
          : Effect.succeed(null)
      const h = yield* interactive(handler)
      yield* h.send(req(1, "tools/call"))
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", method: "notifications/progress", params: { progress: 1 } })
      const outgoing = yield* h.next
      expect(outgoing).toMatchObject({ jsonrpc: "2.0", method: "roots/list", params: {} })
      yield* h.send(JsonRpc.success(outgoing.id as JsonRpc.RequestId, { roots: [] }))
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", id: 1, result: { fromClient: { roots: [] } } })
      // And outside any request, through the server's own context.
      yield* h.server.context.notify("notifications/tools/list_changed")
      expect(yield* h.next).toEqual({ jsonrpc: "2.0", method: "notifications/tools/list_changed" })
      yield* h.end
      yield* h.server.awaitDone
    }))

  it.effect("stdin EOF fails the requests the server is waiting on from the client, so replies still go out", () =>
    Effect.gen(function*() {
      const asked = yield* Deferred.make<void>()
      const handler: Handler = (m, ctx) =>
        "id" in m
          ? Deferred.succeed(asked, undefined).pipe(
            Effect.andThen(ctx.request("sampling/createMessage", {})),
            Effect.map(() => JsonRpc.success(m.id, "answered")),
            Effect.catchTag("TransportClosed", (e) => Effect.succeed(JsonRpc.success(m.id, e.reason)))
          )
          : Effect.succeed(null)
      const h = yield* interactive(handler)
      yield* h.send(req(1, "tools/call"))
      yield* Deferred.await(asked)
      expect(yield* h.next).toMatchObject({ method: "sampling/createMessage" })
      yield* h.end
      yield* h.server.awaitDone
      expect(yield* Queue.takeAll(h.replies)).toEqual([{ jsonrpc: "2.0", id: 1, result: "stdin ended" }])
    }))

  it.effect("writes nothing once the transport has stopped", () =>
    Effect.gen(function*() {
      const h = yield* interactive(echo())
      yield* h.send(req(1, "ping"))
      expect(yield* h.next).toMatchObject({ id: 1 })
      yield* Scope.close(h.scope, Exit.void)
      const error = yield* Effect.flip(h.server.context.notify("notifications/message", {}))
      expect(error._tag).toBe("TransportClosed")
      expect((yield* h.server.awaitDone).reason).toBe("server scope closed")
      expect(yield* Queue.size(h.replies)).toBe(0)
    }))

  it.effect("a second server on the same stdin fails with StdioAlreadyServing; the first keeps it", () =>
    Effect.gen(function*() {
      const layer = Stdio.layerTest({ stdin: Stream.never })
      const stdio = yield* Stdio.Stdio.pipe(Effect.provide(layer))
      const provideSame = Effect.provideService(Stdio.Stdio, stdio)
      const first = yield* Scope.make()
      yield* StdioServerTransport.make(echo(), { redirectConsole: false }).pipe(provideSame, Scope.provide(first))
      const second = yield* StdioServerTransport.make(echo(), { redirectConsole: false }).pipe(provideSame, Effect.flip)
      expect(second._tag).toBe("StdioAlreadyServing")
      expect(second.message).toContain("already being served")
      yield* Scope.close(first, Exit.void)
      // Once the first server's scope is closed, stdin can be served again.
      const third = yield* Scope.make()
      const server = yield* StdioServerTransport.make(echo(), { redirectConsole: false }).pipe(provideSame, Scope.provide(third))
      expect(yield* server.inFlight).toBe(0)
      yield* Scope.close(third, Exit.void)
    }))

  it.effect("redirects console.log and friends while serving, and restores them afterwards", () =>
    Effect.gen(function*() {
      const original = { log: console.log, info: console.info, debug: console.debug, table: console.table }
      const scope = yield* Scope.make()
      yield* StdioServerTransport.make(echo()).pipe(
        Effect.provide(Stdio.layerTest({ stdin: Stream.never })),
        Scope.provide(scope)
      )
      expect(console.log).not.toBe(original.log)
      expect(console.info).not.toBe(original.info)
      expect(console.debug).not.toBe(original.debug)
      expect(console.table).not.toBe(original.table)
      yield* Scope.close(scope, Exit.void)
      expect(console.log).toBe(original.log)
      expect(console.info).toBe(original.info)
      expect(console.debug).toBe(original.debug)
      expect(console.table).toBe(original.table)
    }))

  it.effect("stops when stdin fails, and when stdout fails", () =>
    Effect.gen(function*() {
      const stdinError = systemError({ module: "Stdio", method: "stdin", _tag: "Unknown", cause: new Error("EIO") })
      const a = yield* StdioServerTransport.run(echo(), { redirectConsole: false }).pipe(
        Effect.provide(Stdio.layerTest({ stdin: Stream.fail(stdinError) }))
      )
      expect(a.reason).toBe("stdin failed")
      const stdoutError = systemError({ module: "Stdio", method: "stdout", _tag: "Unknown", cause: new Error("EPIPE") })
      const b = yield* StdioServerTransport.run(echo(), { redirectConsole: false }).pipe(
        Effect.provide(Stdio.layerTest({
          stdin: Stream.concat(Stream.make(enc.encode(line(req(1, "ping")))), Stream.never),
          stdout: () => Sink.fail(stdoutError)
        }))
      )
      expect(b.reason).toBe("stdout failed")
    }))

  it.effect("a reply JSON cannot carry becomes -32603 for its id", () =>
    Effect.gen(function*() {
      const handler: Handler = (m) => "id" in m ? Effect.succeed(JsonRpc.success(m.id, { n: 1n })) : Effect.succeed(null)
      const { lines } = yield* runOver(handler, [line(req(4, "x"))])
      expect(lines).toEqual([expect.objectContaining({ id: 4, error: expect.objectContaining({ code: -32603 }) })])
    }))

  it.effect("the layer provides the server as a service", () =>
    Effect.gen(function*() {
      const out = collector()
      const done = yield* StdioServerTransport.StdioServer.use((s) => s.awaitDone).pipe(
        Effect.provide(StdioServerTransport.layer(echo(), { redirectConsole: false })),
        Effect.provide(Stdio.layerTest({ stdin: Stream.make(enc.encode(line(req(1, "ping")))), stdout: out.stdout }))
      )
      expect(done.reason).toBe("stdin ended")
      expect(out.lines()).toEqual([{ jsonrpc: "2.0", id: 1, result: { method: "ping", params: null } }])
    }))

  // -------------------------------------------------------------------------
  // Property: chunk boundaries never change the replies

  const frame = Arbitrary.all({
    kind: Arbitrary.schema(Schema.Literals(["request", "notification", "batch", "garbage", "blank"])),
    request: Arbitraries.request,
    notification: Arbitraries.notification,
    garbage: Arbitraries.garbage,
    crlf: Arbitrary.schema(Schema.Boolean)
  })
  const cuts = Arbitrary.array(Arbitraries.fraction, { maxLength: 40 })

  it.effect("arbitrary splits of a stream of lines give the same replies", () =>
    Effect.gen(function*() {
      let mostChunks = 0
      const result = yield* Arbitrary.checkEffect(
        Arbitrary.all({ frames: Arbitrary.array(frame, { maxLength: 12 }), cuts }),
        ({ cuts, frames }) =>
          Effect.gen(function*() {
            let nextId = 0
            // Ids are made unique: duplicate ids in flight are the client's bug, not framing's.
            const texts = frames.map((f) => {
              const eol = f.crlf ? "\r\n" : "\n"
              const notification = f.notification.method === "notifications/cancelled"
                ? { ...f.notification, method: "n" }
                : f.notification
              switch (f.kind) {
                case "request":
                  return JSON.stringify({ ...f.request, id: nextId++ }) + eol
                case "notification":
                  return JSON.stringify(notification) + eol
                case "batch":
                  return JSON.stringify([{ ...f.request, id: nextId++ }, notification]) + eol
                case "garbage":
                  return f.garbage + eol
                case "blank":
                  return "  " + eol
              }
            })
            const bytes = enc.encode(texts.join(""))
            const positions = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b)
            const chunks: Array<Uint8Array> = []
            let at = 0
            for (const p of positions) {
              if (p > at && p < bytes.length) {
                chunks.push(bytes.subarray(at, p))
                at = p
              }
            }
            chunks.push(bytes.subarray(at))
            mostChunks = Math.max(mostChunks, chunks.length)
            const whole = yield* runOver(echo(), [bytes])
            const split = yield* runOver(echo(), chunks)
            const canonical = (ls: ReadonlyArray<unknown>) => ls.map((l) => JSON.stringify(l)).sort()
            return JSON.stringify(canonical(whole.lines)) === JSON.stringify(canonical(split.lines)) &&
              whole.lines.length === frames.filter((f) => f.kind !== "blank" && f.kind !== "notification").length
          }),
        { runs: 60, seed: 20260425, size: 40 }
      )
      expect(Arbitrary.formatCheckFailure(result)).toBeUndefined()
      expect(result._tag).toBe("Passed")
      expect(mostChunks).toBeGreaterThan(10)
    }))
})

// ---------------------------------------------------------------------------
// As a real child process: test/fixtures/echo-stdio-server.ts over pipes

const FIXTURE = new URL("../fixtures/echo-stdio-server.ts", import.meta.url).pathname

const spawnFixture = (args: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const handle = yield* ChildProcess.make(process.execPath, [FIXTURE, ...args], {
      killSignal: "SIGTERM",
      forceKillAfter: "2 seconds"
    })
    const input = yield* Queue.unbounded<string, Cause.Done>()
    yield* Stream.fromQueue(input).pipe(Stream.encodeText, Stream.run(handle.stdin), Effect.forkScoped)
    const stdoutLines = yield* Queue.unbounded<string>()
    const stdoutAll: Array<string> = []
    const stderrAll: Array<string> = []
    const stdoutDone = yield* handle.stdout.pipe(
      Stream.decodeText(),
      Stream.splitLines,
      Stream.runForEach((l) => Effect.sync(() => stdoutAll.push(l)).pipe(Effect.andThen(Queue.offer(stdoutLines, l)))),
      Effect.forkScoped
    )
    const stderrDone = yield* handle.stderr.pipe(
      Stream.decodeText(),
      Stream.splitLines,
      Stream.runForEach((l) => Effect.sync(() => void stderrAll.push(l))),
      Effect.forkScoped
    )
    return {
      handle,
      send: (m: unknown) => Queue.offer(input, typeof m === "string" ? m : line(m)),
      next: Effect.map(Queue.take(stdoutLines), (l) => JSON.parse(l) as Record<string, unknown>),
      end: Queue.end(input),
      /** Waits for the process to exit on its own and for its output to be read. */
      exited: Effect.gen(function*() {
        const code = yield* handle.exitCode
        yield* Fiber.await(stdoutDone)
        yield* Fiber.await(stderrDone)
        return code
      }),
      stdoutAll,
      stderrAll
    }
  })

const isJsonRpc = (text: string): boolean => {
  try {
    const decoded = JsonRpc.decode(text)
    return decoded._tag === "Single"
      ? decoded.message._tag !== "Invalid"
      : decoded._tag === "Batch" && decoded.messages.every((m) => m._tag !== "Invalid")
  } catch {
    return false
  }
}

describe("StdioServerTransport (child process over pipes)", () => {
  it.live("serves, runs requests concurrently, honours cancellation, and exits 0 on stdin EOF", () =>
    Effect.gen(function*() {
      const p = yield* spawnFixture()
      yield* p.send(req(1, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "0" } }))
      expect(yield* p.next).toMatchObject({ id: 1, result: { protocolVersion: "2025-06-18", serverInfo: { name: "echo-stdio-server" } } })
      yield* p.send(JsonRpc.notification("notifications/initialized"))
      yield* p.send(req(2, "slow", { ms: 60_000 }))
      yield* p.send(req(3, "ping"))
      expect(yield* p.next).toEqual({ jsonrpc: "2.0", id: 3, result: {} })
      yield* p.send(JsonRpc.notification("notifications/cancelled", { requestId: 2, reason: "test" }))
      yield* p.send(req(4, "notifications"))
      expect(yield* p.next).toEqual({
        jsonrpc: "2.0",
        id: 4,
        result: { methods: ["notifications/initialized", "notifications/cancelled"] }
      })
      yield* p.end
      expect(yield* p.exited).toBe(0)
      // The cancelled request never got a reply.
      expect(p.stdoutAll.map((l) => JSON.parse(l).id)).toEqual([1, 3, 4])
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("stdin EOF with a request in flight: the reply is flushed, then the process exits 0", () =>
    Effect.gen(function*() {
      const p = yield* spawnFixture()
      yield* p.send(req(1, "slow", { ms: 300 }))
      yield* p.send(req(2, "echo", { a: 1 }))
      yield* p.end
      expect(yield* p.exited).toBe(0)
      const replies = p.stdoutAll.map((l) => JSON.parse(l))
      expect(replies).toContainEqual({ jsonrpc: "2.0", id: 1, result: { slept: 300 } })
      expect(replies).toContainEqual({ jsonrpc: "2.0", id: 2, result: { a: 1 } })
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("console.log and the Effect logger never reach stdout", () =>
    Effect.gen(function*() {
      const p = yield* spawnFixture(["--startup-noise"])
      yield* p.send(req(1, "log", { text: "from-the-handler" }))
      expect(yield* p.next).toEqual({ jsonrpc: "2.0", id: 1, result: {} })
      yield* p.send(req(2, "fail"))
      expect(yield* p.next).toMatchObject({ id: 2, error: { code: -32603, message: "Internal error" } })
      yield* p.end
      expect(yield* p.exited).toBe(0)
      expect(p.stdoutAll).toHaveLength(2)
      expect(p.stdoutAll.every(isJsonRpc)).toBe(true)
      const stderr = p.stderrAll.join("\n")
      expect(stderr).toContain("stray console.log while serving")
      expect(stderr).toContain("stray console.info while serving")
      expect(stderr).toContain("effect log while serving")
      expect(stderr).toContain("from-the-handler")
      // The handler's failure is explained on stderr, never on stdout.
      expect(stderr).toContain("this handler always fails")
      expect(p.stdoutAll.join("\n")).not.toContain("always fails")
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("parse errors and oversized lines over real pipes", () =>
    Effect.gen(function*() {
      const p = yield* spawnFixture(["--max-bytes", "1000"])
      yield* p.send("{oops\n")
      expect(yield* p.next).toMatchObject({ id: null, error: { code: -32700 } })
      yield* p.send(req(1, "echo", { data: "y".repeat(100_000) }))
      expect(yield* p.next).toMatchObject({ id: null, error: { code: -32600, data: { limit: 1000 } } })
      yield* p.send(req(2, "ping"))
      expect(yield* p.next).toEqual({ jsonrpc: "2.0", id: 2, result: {} })
      yield* p.end
      expect(yield* p.exited).toBe(0)
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("server-initiated requests round-trip through the client over pipes", () =>
    Effect.gen(function*() {
      const p = yield* spawnFixture()
      yield* p.send(req(1, "ask", { method: "roots/list" }))
      const asked = yield* p.next
      expect(asked).toMatchObject({ method: "roots/list" })
      yield* p.send(JsonRpc.success(asked.id as JsonRpc.RequestId, { roots: [{ uri: "file:///tmp" }] }))
      expect(yield* p.next).toEqual({ jsonrpc: "2.0", id: 1, result: { result: { roots: [{ uri: "file:///tmp" }] } } })
      yield* p.end
      expect(yield* p.exited).toBe(0)
    }).pipe(Effect.provide(NodeServices.layer)))
})
