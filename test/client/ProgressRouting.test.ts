/**
 * How a server's notifications reach `McpClient` and its calls: as the
 * transport routes them (no hop per notification), so a progress the server
 * sends before a result is seen by the call before it returns, a malformed
 * progress is published as `Other` with the Schema's reason and reaches no
 * call, and a progress for a token no call holds is published but reaches no
 * call. The server is a child process that writes a call's notifications and
 * its result in one stdout write.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Result, Schema, Stream } from "effect"
import * as McpSchema from "effect/ai/McpSchema"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import { Diagnostic } from "../../src/client/ClientTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as NotificationListener from "../../src/client/internal/NotificationListener.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as JsonRpc from "../../src/JsonRpc.ts"
import type { Handler } from "../../src/server/Handler.ts"

const fixturePath = new URL("../fixtures/progress-stdio-server.ts", import.meta.url).pathname

const connect = McpClient.connect(StdioClientTransport.make({
  command: process.execPath,
  args: [fixturePath],
  shutdown: { gracePeriod: "300 millis", killAfter: "300 millis" }
}))

const schemaReason = (params: unknown): string => {
  const r = Schema.decodeUnknownResult(Schema.Struct(McpSchema.ProgressNotification.payloadSchema.fields))(params)
  return Result.isFailure(r) ? r.failure.message : ""
}

describe("progress routing", { timeout: 60_000 }, () => {
  it.live("every progress written before the result is seen by onProgress before callTool returns, in order", () =>
    Effect.gen(function*() {
      const client = yield* connect
      const steps = 40
      const expected = Array.from({ length: steps }, (_, i) => i + 1)
      // Concurrent calls: each one's progress interleaves with the others' results in the same reads.
      const seen = yield* Effect.forEach(Array.from({ length: 24 }), () =>
        Effect.gen(function*() {
          const mine: Array<number> = []
          const result = yield* client.callTool({ name: "steps", arguments: { steps } }, {
            onProgress: (p) => Effect.sync(() => void mine.push(p.progress))
          })
          expect(result.content).toEqual([{ type: "text", text: "done" }])
          return [...mine]
        }), { concurrency: 8 })
      for (const mine of seen) expect(mine).toEqual(expected)
      // A streamed call likewise: all its progress, then its result.
      const events = yield* Stream.runCollect(client.callToolStream({ name: "steps", arguments: { steps: 5 } }))
      expect(events.map((e) => (e._tag === "Progress" ? e.progress.progress : "result"))).toEqual([1, 2, 3, 4, 5, "result"])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("a malformed progress is published as Other with the Schema's reason and reaches no call", () =>
    Effect.gen(function*() {
      const client = yield* connect
      const notifications = yield* client.subscribeNotifications
      const collected = yield* notifications.pipe(Stream.take(4), Stream.runCollect, Effect.forkChild)
      const malformed = [
        { progressToken: "$token", progress: "2" },
        { progressToken: "$token", progress: 3, total: "many" },
        { progressToken: "$token" }
      ]
      const mine: Array<number> = []
      yield* client.callTool({ name: "mixed", arguments: { steps: 1, extra: malformed } }, {
        onProgress: (p) => Effect.sync(() => void mine.push(p.progress))
      })
      expect(mine).toEqual([1])
      const heard = yield* Fiber.join(collected)
      expect(heard[0]).toMatchObject({ _tag: "Progress", progress: 1, total: 1 })
      const token = heard[0]!._tag === "Progress" ? heard[0]!.progressToken : undefined
      heard.slice(1).forEach((n, i) => {
        const params = Object.fromEntries(Object.entries(malformed[i]!).map(([k, v]) => [k, v === "$token" ? token : v]))
        expect(n).toStrictEqual(
          McpClient.ServerNotification.Other({ method: "notifications/progress", params, invalid: schemaReason(params) })
        )
      })
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("a progress for a token no call holds is published and reaches no call", () =>
    Effect.gen(function*() {
      const client = yield* connect
      const progress = yield* client.subscribeProgress
      const collected = yield* progress.pipe(Stream.take(3), Stream.runCollect, Effect.forkChild)
      const mine: Array<number> = []
      yield* client.callTool({
        name: "stranger",
        arguments: {
          extra: [
            { progressToken: "nobody", progress: 7 },
            { progressToken: "$token", progress: 1 },
            { progressToken: 12345, progress: 8 }
          ]
        }
      }, { onProgress: (p) => Effect.sync(() => void mine.push(p.progress)) })
      expect(mine).toEqual([1])
      const heard = yield* Fiber.join(collected)
      expect(heard.map((p) => p.progress)).toEqual([7, 1, 8])
      expect(heard[0]!.progressToken).toBe("nobody")
      expect(heard[2]!.progressToken).toBe(12345)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("progress read from the child, one write at a time, restarts the idle timeout; silence past it fails the call", () =>
    Effect.gen(function*() {
      const client = yield* connect
      // Eight progress 150 ms apart: the call lasts about 1.35 s, past its 1 s idle timeout, and lives.
      const seen: Array<number> = []
      const result = yield* client.callTool({ name: "spaced", arguments: { steps: 8, everyMs: 150 } }, {
        timeout: "1 second",
        onProgress: (p) => Effect.sync(() => void seen.push(p.progress))
      })
      expect(result.content).toEqual([{ type: "text", text: "done" }])
      expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
      // Without a callback too (the restart rides the transport's read).
      const plain = yield* client.callTool({ name: "spaced", arguments: { steps: 8, everyMs: 150 } }, { timeout: "1 second" })
      expect(plain.content).toEqual([{ type: "text", text: "done" }])
      // Progress 1.5 s apart: the idle timeout runs out before the first.
      const silent = yield* Effect.flip(
        client.callTool({ name: "spaced", arguments: { steps: 2, everyMs: 1500 } }, { timeout: "1 second" })
      )
      expect(silent).toMatchObject({
        _tag: "McpTransportError",
        reason: { _tag: "RequestTimeout", method: "tools/call", timeoutMs: 1000, phase: "No response or progress" }
      })
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})

describe("notification listeners", () => {
  /** Answers initialize; a `tools/call` sends the notifications in its arguments first. */
  const handler: Handler = (message, ctx) =>
    Effect.gen(function*() {
      if (!("id" in message)) return null
      if (message.method === "initialize") {
        return JsonRpc.success(message.id, {
          protocolVersion: "2025-11-25",
          capabilities: { tools: {} },
          serverInfo: { name: "listeners", version: "1" }
        })
      }
      const params = message.params as {
        arguments?: { send?: ReadonlyArray<JsonRpc.JsonRpcNotification>; steps?: number }
        _meta?: { progressToken?: string }
      }
      for (const n of params.arguments?.send ?? []) yield* ctx.notify(n.method, n.params)
      for (let i = 1; i <= (params.arguments?.steps ?? 0); i++) {
        yield* ctx.notify("notifications/progress", { progressToken: params._meta?.progressToken, progress: i })
      }
      return JsonRpc.success(message.id, { content: [] })
    })

  it.effect("a listener that throws is reported as ListenerError; the notification still reaches subscribers", () =>
    Effect.gen(function*() {
      const pair = yield* InMemoryTransport.makePair(handler)
      const listen = NotificationListener.of(pair.client)
      expect(listen).toBeDefined()
      yield* listen!(() => {
        throw new Error("listener broke")
      })
      const diagnostics = yield* pair.client.diagnostics.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild)
      const notifications = yield* pair.client.subscribeNotifications
      const heard = yield* notifications.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild)
      yield* Effect.yieldNow
      const sent = JsonRpc.notification("notifications/message", { level: "info", data: "hello" })
      yield* pair.client.request("tools/call", { name: "t", arguments: { send: [sent] } })
      expect((yield* Fiber.join(heard))[0]).toMatchObject({ method: "notifications/message", params: { data: "hello" } })
      const [diagnostic] = yield* Fiber.join(diagnostics)
      expect(Diagnostic.$is("ListenerError")(diagnostic!)).toBe(true)
    }))

  it.effect("over a transport without listeners McpClient still routes progress to its call and publishes it", () =>
    Effect.gen(function*() {
      const pair = yield* InMemoryTransport.makePair(handler)
      const bare = Object.fromEntries(Object.entries(pair.client)) as typeof pair.client
      expect(NotificationListener.of(bare)).toBeUndefined()
      const client = yield* McpClient.fromTransport(bare)
      const progress = yield* client.subscribeProgress
      const heard = yield* progress.pipe(Stream.take(3), Stream.runCollect, Effect.forkChild)
      const mine: Array<number> = []
      yield* client.callTool({ name: "t", arguments: { steps: 2 } }, {
        onProgress: (p) => Effect.sync(() => void mine.push(p.progress))
      })
      expect(mine).toEqual([1, 2])
      // A token no call holds: published all the same, to no call.
      yield* pair.server.context.notify("notifications/progress", { progressToken: "other", progress: 9 })
      expect((yield* Fiber.join(heard)).map((p) => p.progress)).toEqual([1, 2, 9])
      expect(mine).toEqual([1, 2])
    }))

  it.effect("a call's integer token echoed as a string still reaches the call; other spellings of it do not", () =>
    Effect.gen(function*() {
      const echoing: Handler = (message, ctx) =>
        Effect.gen(function*() {
          if (!("id" in message)) return null
          if (message.method === "initialize") {
            return JsonRpc.success(message.id, {
              protocolVersion: "2025-11-25",
              capabilities: { tools: {} },
              serverInfo: { name: "echoing", version: "1" }
            })
          }
          const token = (message.params as { _meta?: { progressToken?: unknown } })._meta?.progressToken
          const send = (progressToken: unknown, progress: number) =>
            ctx.notify("notifications/progress", { progressToken, progress })
          yield* send(`${String(token)}.0`, 1)
          yield* send(` ${String(token)}`, 2)
          yield* send(String(token), 3)
          yield* send(token, 4)
          return JsonRpc.success(message.id, { content: [], structuredContent: { token } })
        })
      const pair = yield* InMemoryTransport.makePair(echoing)
      const client = yield* McpClient.fromTransport(pair.client)
      const mine: Array<number> = []
      const result = yield* client.callTool({ name: "t" }, {
        onProgress: (p) => Effect.sync(() => void mine.push(p.progress))
      })
      expect(typeof (result.structuredContent as { token: unknown }).token).toBe("number")
      expect(mine).toEqual([3, 4])
    }))
})

describe("onProgress while the call waits", () => {
  /** A reference the caller sets: the callbacks run with the caller's services. */
  const Label = Context.Reference<string>("test/ProgressRouting/Label", { defaultValue: () => "default" })

  /** Answers initialize; a `tools/call` sends one progress for its token, then answers when `release` is done. */
  const waitingServer = (release: Deferred.Deferred<void>): Handler => (message, ctx) =>
    Effect.gen(function*() {
      if (!("id" in message)) return null
      if (message.method === "initialize") {
        return JsonRpc.success(message.id, {
          protocolVersion: "2025-11-25",
          capabilities: { tools: {} },
          serverInfo: { name: "waiting", version: "1" }
        })
      }
      if (message.method !== "tools/call") return JsonRpc.failure(message.id, JsonRpc.ErrorCode.MethodNotFound, "Method not found")
      const token = (message.params as { _meta?: { progressToken?: string } })._meta?.progressToken
      yield* ctx.notify("notifications/progress", { progressToken: token, progress: 1 })
      yield* Deferred.await(release)
      yield* ctx.notify("notifications/progress", { progressToken: token, progress: 2 })
      return JsonRpc.success(message.id, { content: [] })
    })

  it.effect("runs with the caller's services before the result, and the rest before the call returns", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      const pair = yield* InMemoryTransport.makePair(waitingServer(release))
      const client = yield* McpClient.fromTransport(pair.client)
      const first = yield* Deferred.make<string>()
      const seen: Array<string> = []
      const call = yield* client.callTool({ name: "t" }, {
        onProgress: (p) =>
          Effect.gen(function*() {
            const label = yield* Label
            seen.push(`${label}:${p.progress}`)
            if (p.progress === 1) yield* Deferred.succeed(first, label)
          })
      }).pipe(Effect.provideService(Label, "caller"), Effect.forkChild)
      expect(yield* Deferred.await(first)).toBe("caller")
      expect(call.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(call)
      expect(seen).toEqual(["caller:1", "caller:2"])
    }))

  it.effect("a callback that dies fails the call with its defect", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      const pair = yield* InMemoryTransport.makePair(waitingServer(release))
      const client = yield* McpClient.fromTransport(pair.client)
      const call = yield* client.callTool({ name: "t" }, {
        onProgress: (p) => p.progress === 1 ? Effect.andThen(Deferred.succeed(release, undefined), Effect.die("callback broke")) : Effect.void
      }).pipe(Effect.exit, Effect.forkChild)
      const exit = yield* Fiber.join(call)
      expect(exit).toStrictEqual(Exit.die("callback broke"))
    }))

  it.effect("interrupting the call stops a callback still running", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      const pair = yield* InMemoryTransport.makePair(waitingServer(release))
      const client = yield* McpClient.fromTransport(pair.client)
      const started = yield* Deferred.make<void>()
      const stopped = yield* Deferred.make<void>()
      const call = yield* client.callTool({ name: "t" }, {
        onProgress: () =>
          Effect.andThen(Deferred.succeed(started, undefined), Effect.never).pipe(
            Effect.onInterrupt(() => Deferred.succeed(stopped, undefined))
          )
      }).pipe(Effect.forkChild)
      yield* Deferred.await(started)
      yield* Fiber.interrupt(call)
      yield* Deferred.await(stopped)
      expect(Exit.hasInterrupts(call.pollUnsafe()!)).toBe(true)
    }))
})
