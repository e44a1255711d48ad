/**
 * McpClient and tasks against a scripted server in memory, where the
 * TestClock drives the polling: `tasks/get` waits for the server's
 * `pollIntervalMs` on the Clock (a live timer would never fire here), in
 * either era; a task in answer to a method that does not support tasks is
 * an invalid answer; a task the server sends to a client that did not
 * declare the extension is refused.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as InMemoryTransport from "../../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import { McpProtocolError } from "../../../src/McpErrorGroup.ts"
import type { Handler } from "../../../src/server/Handler.ts"

const TASKS = "io.modelcontextprotocol/tasks"
const CREATED_AT = "2026-01-01T00:00:00Z"

interface Seen {
  readonly method: string
  readonly params: Record<string, unknown>
  /** The Clock's time when the request arrived. */
  readonly at: number
}

/**
 * A server of either era whose `slow` tool is a task that completes on the
 * `polls`-th `tasks/get`, polled every `pollIntervalMs` (the interval it
 * asks for changes on the second poll when `laterIntervalMs` is given);
 * `prompts/get` answers a task, which no method but `tools/call` may.
 */
const scripted = (options: { readonly pollIntervalMs: number; readonly laterIntervalMs?: number; readonly polls: number }) => {
  const seen: Array<Seen> = []
  let polls = 0
  const task = (status: string, extra: Record<string, unknown> = {}) => ({
    taskId: "task-1",
    status,
    createdAt: CREATED_AT,
    lastUpdatedAt: `2026-01-01T00:00:0${polls}Z`,
    ttlMs: null,
    pollIntervalMs: polls >= 1 && options.laterIntervalMs !== undefined ? options.laterIntervalMs : options.pollIntervalMs,
    ...extra
  })
  const handler: Handler = (message) =>
    Effect.gen(function*() {
      const params = (message.params ?? {}) as Record<string, unknown>
      seen.push({ method: message.method, params, at: yield* Clock.currentTimeMillis })
      if (!("id" in message)) return null
      const id = message.id
      switch (message.method) {
        case "server/discover":
          return JsonRpc.success(id, {
            resultType: "complete",
            supportedVersions: ["2026-07-28"],
            capabilities: { tools: {}, prompts: {}, extensions: { [TASKS]: {} } }
          })
        case "initialize":
          return JsonRpc.success(id, {
            protocolVersion: "2025-11-25",
            capabilities: { tools: {}, prompts: {} },
            serverInfo: { name: "scripted", version: "1" }
          })
        case "tools/call":
          return JsonRpc.success(id, { resultType: "task", ...task("working") })
        case "tasks/get": {
          polls++
          return JsonRpc.success(
            id,
            polls >= options.polls
              ? { resultType: "complete", ...task("completed", { result: { content: [{ type: "text", text: "slow done" }] } }) }
              : { resultType: "complete", ...task("working") }
          )
        }
        case "prompts/get":
          return JsonRpc.success(id, { resultType: "task", messages: [], ...task("working") })
        default:
          return JsonRpc.failure(id, -32601, "Method not found")
      }
    })
  return { seen, handler }
}

const connect = (handler: Handler, options: McpClient.McpClientOptions = {}) =>
  Effect.gen(function*() {
    const pair = yield* InMemoryTransport.makePair(handler)
    return yield* McpClient.fromTransport(pair.client, options)
  })

/** Advances the TestClock a second at a time until the fiber is done (bounded, so a stuck call fails the test). */
const driveUntilDone = <A, E>(fiber: Fiber.Fiber<A, E>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 10_000; i++) {
      if (fiber.pollUnsafe() !== undefined) return yield* Fiber.join(fiber)
      yield* TestClock.adjust("1 second")
      yield* Effect.yieldNow
    }
    return yield* Effect.die("the call did not finish")
  })

const gaps = (seen: ReadonlyArray<Seen>) => {
  const times = seen.filter((s) => s.method === "tools/call" || s.method === "tasks/get").map((s) => s.at)
  return times.slice(1).map((t, i) => t - times[i]!)
}

describe("tasks against a scripted server (TestClock)", () => {
  for (const protocol of ["2026-07-28", "2025-11-25"] as const) {
    it.effect(`${protocol}: tasks/get waits for pollIntervalMs on the Clock, and for a changed interval`, () =>
      Effect.gen(function*() {
        const server = scripted({ pollIntervalMs: 60_000, laterIntervalMs: 600_000, polls: 3 })
        const client = yield* connect(server.handler, { protocol })
        const call = yield* Effect.forkChild(client.callTool({ name: "slow" }), { startImmediately: true })
        const result = yield* driveUntilDone(call)
        expect(result.content).toEqual([{ type: "text", text: "slow done" }])
        // Never sooner than asked: a minute after the call, then ten minutes (the interval the first poll set).
        const [first, second, third] = gaps(server.seen)
        expect(first).toBeGreaterThanOrEqual(60_000)
        expect(second).toBeGreaterThanOrEqual(600_000)
        expect(third).toBeGreaterThanOrEqual(600_000)
        expect(gaps(server.seen)).toHaveLength(3)
        // The same task id on every poll; the extension declared in the era's own way.
        expect(server.seen.filter((s) => s.method === "tasks/get").map((s) => s.params.taskId)).toEqual([
          "task-1",
          "task-1",
          "task-1"
        ])
        if (protocol === "2026-07-28") {
          const call = server.seen.find((s) => s.method === "tools/call")!
          const meta = call.params._meta as Record<string, any>
          expect(meta["io.modelcontextprotocol/clientCapabilities"].extensions).toEqual({ [TASKS]: {} })
          const get = server.seen.find((s) => s.method === "tasks/get")!
          expect((get.params._meta as Record<string, any>)["io.modelcontextprotocol/clientCapabilities"].extensions)
            .toEqual({ [TASKS]: {} })
        } else {
          const init = server.seen.find((s) => s.method === "initialize")!
          expect(init.params.capabilities).toEqual({ extensions: { [TASKS]: {} } })
        }
      }))

    it.effect(`${protocol}: a task in answer to prompts/get is an invalid answer`, () =>
      Effect.gen(function*() {
        const server = scripted({ pollIntervalMs: 1_000, polls: 1 })
        const client = yield* connect(server.handler, { protocol })
        const error = yield* Effect.flip(client.getPrompt({ name: "any" }))
        expect(error).toBeInstanceOf(McpProtocolError)
        expect(error.reason).toMatchObject({ _tag: "InvalidPayload", method: "prompts/get", kind: "result" })
        expect(error.message).toContain(`a task (resultType "task") is not a valid answer to prompts/get`)
        expect(server.seen.map((s) => s.method)).not.toContain("tasks/get")
      }))
  }

  it.effect("a task without its fields, or a tasks/get about another task, is an invalid answer (and the task is cancelled)", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const handler: Handler = (message) =>
        Effect.sync(() => {
          seen.push(message.method)
          if (!("id" in message)) return null
          const params = (message.params ?? {}) as Record<string, unknown>
          switch (message.method) {
            case "server/discover":
              return JsonRpc.success(message.id, { resultType: "complete", supportedVersions: ["2026-07-28"], capabilities: { tools: {} } })
            case "tools/call":
              return JsonRpc.success(
                message.id,
                params.name === "bare"
                  ? { resultType: "task", status: "working" }
                  : { resultType: "task", taskId: "mine", status: "working", createdAt: CREATED_AT, lastUpdatedAt: CREATED_AT, ttlMs: null, pollIntervalMs: 0 }
              )
            case "tasks/get":
              return JsonRpc.success(message.id, {
                resultType: "complete",
                taskId: "someone-else",
                status: "working",
                createdAt: CREATED_AT,
                lastUpdatedAt: CREATED_AT,
                ttlMs: null
              })
            default:
              return JsonRpc.success(message.id, { resultType: "complete" })
          }
        })
      const client = yield* connect(handler, { protocol: "2026-07-28" })
      const bare = yield* Effect.flip(client.callTool({ name: "bare" }))
      expect(bare.reason).toMatchObject({ _tag: "InvalidPayload", method: "tools/call", kind: "result" })
      const other = yield* Effect.flip(client.callTool({ name: "other" }))
      expect(other.reason).toMatchObject({ _tag: "InvalidPayload", method: "tasks/get" })
      expect(other.message).toContain("asked for task mine, the answer is about task someone-else")
      expect(seen.filter((m) => m.startsWith("tasks/"))).toEqual(["tasks/get", "tasks/cancel"])
    }))

  it.effect("a client with tasks: false refuses a task it did not ask for, and polls nothing", () =>
    Effect.gen(function*() {
      const server = scripted({ pollIntervalMs: 1_000, polls: 1 })
      const client = yield* connect(server.handler, { protocol: "2026-07-28", tasks: false })
      const error = yield* Effect.flip(client.callTool({ name: "slow" }))
      expect(error.reason).toMatchObject({ _tag: "InvalidPayload", method: "tools/call" })
      const meta = server.seen.find((s) => s.method === "tools/call")!.params._meta as Record<string, any>
      expect(meta["io.modelcontextprotocol/clientCapabilities"]).toEqual({})
      expect(server.seen.map((s) => s.method)).not.toContain("tasks/get")
    }))
})
