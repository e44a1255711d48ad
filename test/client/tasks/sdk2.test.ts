/**
 * McpClient against the official SDK v2 server running tools as tasks (the
 * `io.modelcontextprotocol/tasks` extension; test/fixtures/peers/sdk2-task-server.ts),
 * over stdio (a real child process) and Streamable HTTP (a real loopback
 * server). The fixture writes what it received to an events file, which is
 * how these tests see the wire: the declaration, each `tasks/*` request, and
 * over HTTP the `Mcp-Name` header each one carried.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Layer, Scope, Stream } from "effect"
import * as Fs from "node:fs"
import type * as ClientTransport from "../../../src/client/ClientTransport.ts"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../../src/client/StreamableHttpClientTransport.ts"
import { McpServerError, McpTransportError } from "../../../src/McpErrorGroup.ts"
import { peerPath, startHttp } from "../../fixtures/peers/launch.ts"
import { tempFiles } from "../../fixtures/temp-files.ts"

const Env = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)
const FIXTURE = "sdk2-task-server.ts"

interface Event {
  readonly method: string
  readonly taskId?: string
  readonly tool?: string
  readonly declared?: boolean
  readonly wire?: "http"
  readonly mcpName?: string | null
  readonly inputResponses?: Record<string, unknown>
  readonly at: number
}

const tempFile = tempFiles("task-events-")
const eventsFile = () => tempFile("events.jsonl")
const readEvents = (file: string): Array<Event> =>
  Fs.existsSync(file)
    ? Fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Event)
    : []

const textOf = (result: { readonly content: ReadonlyArray<unknown> }) =>
  result.content.map((c) => (c as { text?: string }).text ?? "").join("")

/** A transport whose answered requests are observed: `onAnswer` sees each one's method and params once answered. */
const observed = <E, R>(
  transport: Effect.Effect<ClientTransport.ClientTransportShape, E, R>,
  onAnswer: (method: string, params: unknown) => void
) =>
  Effect.map(transport, (t): ClientTransport.ClientTransportShape => {
    const request: ClientTransport.ClientTransportShape["request"] = (method, params, options) =>
      Effect.tap(t.request(method, params, options), () => Effect.sync(() => onAnswer(method, params)))
    return new Proxy(t, { get: (target, key) => key === "request" ? request : Reflect.get(target, key, target) })
  })

type Kind = "stdio" | "http"

/** The fixture's transport: a child per client over stdio, one loopback server for the whole test over HTTP. */
const serverFor = (kind: Kind, events: string) =>
  kind === "stdio"
    ? Effect.succeed(() =>
      StdioClientTransport.make({
        command: process.execPath,
        args: [peerPath(FIXTURE), "--stdio", "--events", events],
        shutdown: { gracePeriod: "1 second", killAfter: "1 second" },
        stderr: { log: false }
      })
    )
    : Effect.map(startHttp(FIXTURE, ["--events", events]), (peer) => () => StreamableHttpClientTransport.make({ url: peer.url }))

/** Connects in the stateless era; `asked` collects the messages of the elicitations the client answered. */
const connect = (
  transport: Effect.Effect<ClientTransport.ClientTransportShape, unknown, any>,
  options: McpClient.McpClientOptions = {},
  asked: Array<string> = []
) =>
  McpClient.connect(transport, {
    protocol: "2026-07-28",
    requestTimeout: "30 seconds",
    handlers: {
      elicit: (params) =>
        Effect.sync(() => {
          asked.push(params.message)
          return { action: "accept" as const, content: { name: "Ada" } }
        })
    },
    ...options
  })

for (const kind of ["stdio", "http"] as const) {
  describe.concurrent(`tasks over ${kind} (SDK v2 server)`, () => {
    it.live("callTool declares the extension and follows a task to its result", () =>
      Effect.gen(function*() {
        const events = eventsFile()
        const make = yield* serverFor(kind, events)
        const client = yield* connect(make())
        expect(client.clientCapabilities).toMatchObject({ extensions: { "io.modelcontextprotocol/tasks": {} } })
        const result = yield* client.callTool({ name: "report", arguments: { polls: 3, pollMs: 20 } })
        expect(textOf(result)).toBe("report ready")
        const seen = readEvents(events).filter((e) => e.wire === undefined)
        expect(seen[0]).toMatchObject({ method: "tools/call", tool: "report", declared: true })
        const taskId = seen[1]!.taskId!
        expect(seen.slice(1).map((e) => [e.method, e.taskId])).toEqual([
          ["tasks/get", taskId],
          ["tasks/get", taskId],
          ["tasks/get", taskId]
        ])
      }).pipe(Effect.scoped, Effect.provide(Env)), 60_000)

    it.live("polls no faster than the server's pollIntervalMs", () =>
      Effect.gen(function*() {
        const events = eventsFile()
        const make = yield* serverFor(kind, events)
        const client = yield* connect(make())
        yield* client.callTool({ name: "report", arguments: { polls: 3, pollMs: 250 } })
        // The client waits pollIntervalMs after each answer before it asks again, so the server sees them at least that far apart.
        const at = readEvents(events).filter((e) => e.wire === undefined).map((e) => e.at)
        expect(at).toHaveLength(4)
        for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(250)
      }).pipe(Effect.scoped, Effect.provide(Env)), 60_000)

    it.live("answers input_required with the elicitation handler, once, and sends tasks/update", () =>
      Effect.gen(function*() {
        const events = eventsFile()
        const make = yield* serverFor(kind, events)
        const asked: Array<string> = []
        const client = yield* connect(make(), {}, asked)
        const result = yield* client.callTool({ name: "ask" })
        expect(textOf(result)).toBe("Hello, Ada!")
        // The fixture lists the request on every poll until the answer lands: it is answered once.
        expect(asked).toEqual(["Please enter your name."])
        const updates = readEvents(events).filter((e) => e.method === "tasks/update" && e.wire === undefined)
        expect(updates).toHaveLength(1)
        expect(updates[0]!.inputResponses).toEqual({ name: { action: "accept", content: { name: "Ada" } } })
      }).pipe(Effect.scoped, Effect.provide(Env)), 60_000)

    it.live("a failed task fails the call with its JSON-RPC error; a cancelled one with TaskCancelled", () =>
      Effect.gen(function*() {
        const make = yield* serverFor(kind, eventsFile())
        const client = yield* connect(make())
        const failed = yield* Effect.flip(client.callTool({ name: "broken" }))
        expect(failed).toBeInstanceOf(McpServerError)
        expect(failed.reason).toMatchObject({ _tag: "RpcError", code: -32603, rpcMessage: "rate limit exceeded" })
        const cancelled = yield* Effect.flip(client.callTool({ name: "given_up" }))
        expect(cancelled).toBeInstanceOf(McpServerError)
        expect(cancelled.reason).toMatchObject({ _tag: "TaskCancelled", statusMessage: "operator cancelled" })
        expect(cancelled.message).toContain("was cancelled: operator cancelled")
      }).pipe(Effect.scoped, Effect.provide(Env)), 60_000)

    it.live("maxTotalTimeout sends tasks/cancel and fails with RequestTimeout", () =>
      Effect.gen(function*() {
        const events = eventsFile()
        const make = yield* serverFor(kind, events)
        const client = yield* connect(make())
        const error = yield* Effect.flip(
          client.callTool({ name: "endless", arguments: { pollMs: 20 } }, { maxTotalTimeout: "1 second" })
        )
        expect(error).toBeInstanceOf(McpTransportError)
        expect(error.reason).toMatchObject({ _tag: "RequestTimeout", phase: "Maximum total time exceeded" })
        const seen = readEvents(events).filter((e) => e.wire === undefined)
        const taskId = seen.find((e) => e.method === "tasks/get")!.taskId
        expect(seen.filter((e) => e.method === "tasks/cancel").map((e) => e.taskId)).toEqual([taskId])
        // Nothing is polled once the cancel went out.
        expect(seen.at(-1)?.method).toBe("tasks/cancel")
      }).pipe(Effect.scoped, Effect.provide(Env)), 60_000)

    it.live("interrupting callTool sends tasks/cancel, then stops", () =>
      Effect.gen(function*() {
        const events = eventsFile()
        const make = yield* serverFor(kind, events)
        // Interrupted while it waits for the next poll, with nothing in flight.
        const polled = yield* Deferred.make<string>()
        const client = yield* connect(
          observed(make() as Effect.Effect<ClientTransport.ClientTransportShape, unknown, any>, (method, params) =>
            method === "tasks/get" && Deferred.doneUnsafe(polled, Exit.succeed((params as { taskId: string }).taskId)))
        )
        const call = yield* Effect.forkChild(client.callTool({ name: "endless", arguments: { pollMs: 20 } }), {
          startImmediately: true
        })
        const taskId = yield* Deferred.await(polled)
        yield* Fiber.interrupt(call)
        const exit = yield* Fiber.await(call)
        expect(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)).toBe(true)
        const seen = readEvents(events).filter((e) => e.wire === undefined)
        expect(seen.filter((e) => e.method === "tasks/cancel").map((e) => e.taskId)).toEqual([taskId])
        expect(seen.at(-1)?.method).toBe("tasks/cancel")
        // The server saw the cancel: the task is cancelled for anyone who asks.
        expect((yield* client.task(taskId).get).status).toBe("cancelled")
      }).pipe(Effect.scoped, Effect.provide(Env)), 60_000)

    it.live("callToolTask hands over the task; its states end with the terminal one", () =>
      Effect.gen(function*() {
        const make = yield* serverFor(kind, eventsFile())
        const client = yield* connect(make())
        const task = yield* client.callToolTask("report", { polls: 2, pollMs: 20 })
        if (task._tag !== "Task") return expect.unreachable("the server makes a task")
        expect(task.created?.status).toBe("working")
        const states = yield* Stream.runCollect(task.states)
        expect(states.map((s) => [s.status, s.statusMessage])).toEqual([
          ["working", undefined],
          ["working", "poll 1 of 2"],
          ["completed", "done"]
        ])
        expect(textOf(yield* task.result)).toBe("report ready")
        const plain = yield* client.callToolTask("echo", { text: "hi" })
        expect(plain).toEqual({ _tag: "Answered", result: expect.objectContaining({ content: [{ type: "text", text: "echo: hi" }] }) })
      }).pipe(Effect.scoped, Effect.provide(Env)), 60_000)

    it.live("client.task(id) follows a task another client started", () =>
      Effect.gen(function*() {
        const make = yield* serverFor(kind, eventsFile())
        if (kind === "stdio") {
          // Over stdio the task lives in the server process: a second client on the same connection stands in for a restart.
          const client = yield* connect(make())
          const task = yield* client.callToolTask("report", { polls: 2, pollMs: 20 })
          if (task._tag !== "Task") return expect.unreachable("the server makes a task")
          expect(textOf(yield* client.task(task.taskId).result)).toBe("report ready")
          return
        }
        const first = yield* Scope.make()
        const client = yield* connect(make()).pipe(Scope.provide(first))
        const task = yield* client.callToolTask("report", { polls: 2, pollMs: 20 })
        if (task._tag !== "Task") return expect.unreachable("the server makes a task")
        yield* Scope.close(first, Exit.void)
        const again = yield* connect(make())
        const handle = again.task(task.taskId)
        expect(handle.created).toBeUndefined()
        expect(textOf(yield* handle.result)).toBe("report ready")
      }).pipe(Effect.scoped, Effect.provide(Env)), 60_000)

    it.live("with tasks: false the extension is not declared and the server answers at once", () =>
      Effect.gen(function*() {
        const events = eventsFile()
        const make = yield* serverFor(kind, events)
        const client = yield* connect(make(), { tasks: false })
        expect(client.clientCapabilities).not.toHaveProperty("extensions")
        expect(textOf(yield* client.callTool({ name: "report", arguments: { polls: 2 } }))).toBe("report ready")
        expect(readEvents(events)).toEqual([expect.objectContaining({ method: "tools/call", declared: false })])
      }).pipe(Effect.scoped, Effect.provide(Env)), 60_000)

    if (kind === "http") {
      it.live("tasks/get, tasks/update and tasks/cancel carry Mcp-Name: <taskId>", () =>
        Effect.gen(function*() {
          const events = eventsFile()
          const make = yield* serverFor(kind, events)
          const client = yield* connect(make())
          yield* client.callTool({ name: "ask" })
          const task = yield* client.callToolTask("endless", { pollMs: 20 })
          if (task._tag !== "Task") return expect.unreachable("the server makes a task")
          yield* task.cancel
          const wire = readEvents(events).filter((e) => e.wire === "http")
          expect(new Set(wire.map((e) => e.method))).toEqual(new Set(["tasks/get", "tasks/update", "tasks/cancel"]))
          const handled = readEvents(events).filter((e) => e.wire === undefined && e.method.startsWith("tasks/"))
          expect(wire.map((e) => e.mcpName)).toEqual(handled.map((e) => e.taskId))
        }).pipe(Effect.scoped, Effect.provide(Env)), 60_000)
    }
  })
}
