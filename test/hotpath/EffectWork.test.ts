/**
 * The Effect work of the hot paths, counted exactly (test/fixtures/EffectWork.ts):
 * the steps `effect`'s runtime evaluates, the fibers it starts and the tasks
 * queued on fibers' dispatchers (each a `setImmediate`) for one
 * `tools/call` on the HTTP server in each era and on the stdio server (its
 * stdin and stdout in memory, their own steps included), and for one
 * `McpClient.callTool` over stdio, with and without progress. Each path has a budget, the count
 * it has today: a change that adds work to every request or notification fails
 * here, while timing stays the benchmarks' business. A change that lowers a
 * count lowers its budget with it.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import { echoCallServer as server, STATELESS_META } from "../fixtures/echo-call-server.ts"
import * as EffectWork from "../fixtures/EffectWork.ts"
import * as StdioInMemory from "../fixtures/stdio-in-memory.ts"
import { openSession, post } from "../server/http/helpers.ts"

/**
 * Holds `work` to a budget of whole steps, fibers and dispatcher tasks per
 * call. Work the process does on a timer (a sweep, a keep-alive) can fall in
 * the measured window, more of it on a loaded machine: under one of each per
 * call is tolerated, one more per call is not.
 */
const withinBudget = (work: EffectWork.EffectWork, steps: number, fibers: number, tasks = 0) => {
  expect(work.steps).toBeLessThan(steps + 1)
  expect(work.fibers).toBeLessThan(fibers + 1)
  expect(work.tasks).toBeLessThan(tasks + 1)
}

const RUNS: EffectWork.Runs = { warm: 30, calls: 100 }

describe("Effect work on the hot paths", () => {
  it.live("HTTP server: a tools/call costs at most 17 steps, 1 fiber and no dispatcher task in either era (2026-07-28, 2025-11-25 session)", () =>
    Effect.gen(function*() {
      const counter = EffectWork.make()
      const handle = yield* McpServer.toHandler(server)
      const context = yield* Layer.build(
        HttpServerTransport.layer(handle.handler, { port: 0 }).pipe(Layer.provide(counter.layer))
      )
      const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
      let id = 0
      const call = (params: object, headers: Record<string, string>) => async () => {
        const res = await post(url, { jsonrpc: "2.0", id: ++id, method: "tools/call", params }, headers)
        expect(await res.json()).toMatchObject({ result: { content: [{ text: "echo: hi" }] } })
      }
      const stateless = yield* EffectWork.perRun(counter, call(
        { name: "echo", arguments: { text: "hi" }, _meta: STATELESS_META },
        { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "echo" }
      ), RUNS)
      const session = yield* Effect.promise(() => openSession(url))
      const inSession = yield* EffectWork.perRun(counter, call(
        { name: "echo", arguments: { text: "hi" } },
        { "mcp-protocol-version": "2025-11-25", "mcp-session-id": session }
      ), RUNS)
      withinBudget(stateless, 17, 1)
      withinBudget(inSession, 17, 1)
    }).pipe(Effect.scoped))

  it.live("stdio server: a tools/call costs at most 30 steps, 1 fiber and no dispatcher task (2025-11-25 session), its stdin and stdout in memory", () =>
    Effect.gen(function*() {
      const counter = EffectWork.make()
      const handle = yield* McpServer.toHandler(server)
      const stdio = yield* StdioInMemory.serve(handle.handler, undefined, counter.layer)
      const run = yield* Effect.context<never>()
      const exchange = (message: object) => Effect.runPromiseWith(run)(Effect.andThen(stdio.send(message), stdio.next))
      yield* Effect.promise(() =>
        exchange({
          jsonrpc: "2.0",
          id: 0,
          method: "initialize",
          params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "work", version: "1.0.0" } }
        })
      )
      yield* stdio.send({ jsonrpc: "2.0", method: "notifications/initialized" })
      let id = 0
      const call = yield* EffectWork.perRun(counter, async () => {
        const reply = await exchange({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } })
        expect(reply).toMatchObject({ result: { content: [{ text: "echo: hi" }] } })
      }, RUNS)
      withinBudget(call, 30, 1)
    }).pipe(Effect.scoped))

  it.live("stdio client: a callTool costs at most 26 steps, no fiber and no dispatcher task; 20 progress add none, or 8 steps beside onProgress's own", () => {
    const counter = EffectWork.make()
    const fixture = new URL("../fixtures/progress-stdio-server.ts", import.meta.url).pathname
    return Effect.gen(function*() {
      const client = yield* McpClient.connect(StdioClientTransport.make({ command: process.execPath, args: [fixture] }))
      const calls = (steps: number, onProgress?: () => Effect.Effect<void>) =>
        client.callTool({ name: "steps", arguments: { steps } }, onProgress === undefined ? undefined : { onProgress })
      const plain = yield* EffectWork.perEffect(counter, calls(0), RUNS)
      const progressed = yield* EffectWork.perEffect(counter, calls(20), RUNS)
      // The callback's own work is one step per notification (`Effect.void`).
      const withCallback = yield* EffectWork.perEffect(counter, calls(20, () => Effect.void), RUNS)
      withinBudget(plain, 26, 0)
      withinBudget(progressed, 26, 0)
      withinBudget({ ...withCallback, steps: withCallback.steps - 20 - 8 }, 26, 0)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer), Effect.provide(counter.layer))
  })
})
