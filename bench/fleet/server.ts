/**
 * One instance of the fleet workload: `McpServer` (both eras) on
 * `HttpServerTransport`, on a free loopback port, with its shared state
 * either in memory (the default of a single process) or in Redis
 * (`RedisFleet.layer`: bus, event log, and whatever else the fleet layer
 * provides, e.g. a session registry). Configured by one JSON argument
 * (`Config`); prints `listening <url>` once it listens, and answers the
 * driver's `cpu` and `memory` commands over IPC (../stateless-server/control.ts).
 *
 *   node bench/fleet/server.ts '{"store":"redis","redis":"redis://127.0.0.1:6379","maxStreams":4}'
 *
 * Tools:
 * - `wait {ms}`: waits `ms` (an I/O-bound call: the instance's slots bind it, not its CPU)
 * - `progress {n, gapMs}`: sends `n` progress notifications on the request's
 *   stream, `gapMs` apart, each with the monotonic clock (`process.hrtime`,
 *   shared by every process on the machine) in its `message`; then answers
 * - `publish {seq}`: `notifyAll` of `notifications/resources/updated` made on
 *   this instance, its URI carrying `seq` and the monotonic clock
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { RequestContext } from "../../src/server/RequestContext.ts"
import { loadHttpServerTransport, loadMcpServer, loadRedisFleet } from "../our-modules.ts"
import { announce, installControl } from "../stateless-server/control.ts"
import { type Config, monotonicMs, PREFIX, REQUEST_STATE_KEY } from "./protocol.ts"

const config = JSON.parse(process.argv[2] ?? "{}") as Config
const McpServer = await loadMcpServer()
const HttpServerTransport = await loadHttpServerTransport()
installControl()

const TOOLS = ["wait", "progress", "publish"].map((name) => ({ name, inputSchema: { type: "object" } }))
const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] })

let handle: { readonly notifyAll: (method: string, params?: unknown) => Effect.Effect<void> } | undefined

// One generator function for every call (docs/design.md, "Per-request code and the old generation").
const callTool = Effect.fnUntraced(function*(params: unknown, ctx: RequestContext) {
  const p = params as { name: string; arguments?: Record<string, unknown> }
  const args = p.arguments ?? {}
  switch (p.name) {
    case "wait": {
      const ms = Number(args.ms ?? 0)
      if (ms > 0) yield* Effect.sleep(ms)
      return text(`waited ${ms}`)
    }
    case "progress": {
      const n = Number(args.n ?? 1)
      const gapMs = Number(args.gapMs ?? 0)
      for (let i = 1; i <= n; i++) {
        yield* ctx.progress(i, { total: n, message: String(monotonicMs()) })
        if (gapMs > 0 && i < n) yield* Effect.sleep(gapMs)
      }
      return text(`sent ${n}`)
    }
    case "publish":
      yield* handle!.notifyAll("notifications/resources/updated", {
        uri: `bench://${String(args.seq)}/${monotonicMs()}`
      })
      return text(`published on ${config.name ?? "?"}`)
    default:
      return { ...text(`unknown tool ${p.name}`), isError: true }
  }
})

const definition = McpServer.make({
  serverInfo: { name: "bench-fleet", version: "1.0.0" },
  capabilities: { tools: {}, resources: { subscribe: true } },
  stateless: true,
  requestStateKeys: [REQUEST_STATE_KEY]
}).pipe(
  McpServer.method("tools/list", {}, () => Effect.succeed({ tools: TOOLS, ttlMs: 0, cacheScope: "private" })),
  McpServer.method("resources/list", {}, () => Effect.succeed({ resources: [], ttlMs: 0, cacheScope: "private" })),
  McpServer.method("resources/subscribe", {}, () => Effect.succeed({})),
  McpServer.method("tools/call", {}, callTool)
)

const http = McpServer.layerHttp(definition, {
  port: 0,
  ...(config.maxStreams === undefined ? {} : { maxStreams: config.maxStreams }),
  ...(config.maxSessions === undefined ? {} : { maxSessions: config.maxSessions }),
  // Sessions made by the memory measurement idle for as long as it takes.
  sessionIdleTimeout: "1 hour"
})
const shared = config.store === "redis"
  ? Layer.unwrap(Effect.map(Effect.promise(loadRedisFleet), (RedisFleet) =>
    RedisFleet.layer({ url: config.redis ?? "redis://127.0.0.1:6379", prefix: config.prefix ?? PREFIX })))
  : Layer.empty
const Instance = http.pipe(Layer.provide(shared))

Effect.gen(function*() {
  const context = yield* Layer.build(Instance)
  handle = Context.get(context, McpServer.Handle)
  const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
  announce(url)
  return yield* Effect.never
}).pipe(Effect.scoped, NodeRuntime.runMain)
