/**
 * `McpClient.callTool`'s own cost per call, without any I/O: the client over
 * a transport that answers at once (`Effect.succeed`), with `progress`
 * notifications handed to the client's listener before each result, against
 * the same transport called bare. Rounds alternate; prints the median ns/call
 * of each (CPU time, so that other processes' load counts less), their
 * difference (the layer's cost), and the client's fastest round.
 *
 *   npx node bench/profile/call-layer-sync.ts [progress=0] [calls=200000] [rounds=7] [srcDir=src] [withProgressCallback=0]
 */
import { resolve } from "node:path"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"

const progress = Number(process.argv[2] ?? 0)
const calls = Number(process.argv[3] ?? 200_000)
const rounds = Number(process.argv[4] ?? 7)
const srcDir = resolve(process.argv[5] ?? new URL("../../src", import.meta.url).pathname)
const withCallback = process.argv[6] === "1"

const McpClient = await import(`${srcDir}/client/McpClient.ts`)
const ClientTransport = await import(`${srcDir}/client/ClientTransport.ts`)
const NotificationListener = await import(`${srcDir}/client/internal/NotificationListener.ts`)

const INIT = { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "sync", version: "1.0.0" } }
const TOOL_TEXT = JSON.stringify({ content: [{ type: "text", text: "ok" }] })

let listener: ((n: unknown) => void) | undefined
const noDeadline = () => {}

const program = Effect.scoped(Effect.gen(function*() {
  const state = yield* SubscriptionRef.make(ClientTransport.ConnectionState.Ready())
  const transport: any = {
    kind: "stdio",
    request: (method: string, params: any, options: any) =>
      Effect.sync(() => {
        if (method === "initialize") return INIT
        if (method === "tools/call") {
          options?.onDeadline?.(noDeadline)
          const token = params?._meta?.progressToken
          if (token !== undefined && listener !== undefined) {
            for (let i = 1; i <= progress; i++) {
              listener({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress: i, total: progress } })
            }
          }
          return JSON.parse(TOOL_TEXT)
        }
        return {}
      }),
    notify: () => Effect.void,
    notifications: Stream.empty,
    subscribeNotifications: Effect.succeed(Stream.empty),
    setRequestHandler: () => Effect.void,
    state,
    diagnostics: Stream.empty,
    stderr: Stream.empty,
    setProtocolVersion: () => Effect.void,
    awaitClosed: Effect.never,
    pendingCount: Effect.succeed(0),
    [NotificationListener.key]: (l: (n: unknown) => void) =>
      Effect.acquireRelease(Effect.sync(() => void (listener = l)), () => Effect.sync(() => void (listener = undefined)))
  }
  const client: any = yield* McpClient.fromTransport(transport, { protocol: "2025-11-25" })
  const params = { name: "echo", arguments: { text: "hi" } }
  let seen = 0
  const onProgress = () => Effect.sync(() => void seen++)
  let token = 0
  const bare: Effect.Effect<unknown, unknown> = Effect.suspend(() =>
    transport.request("tools/call", { ...params, _meta: { progressToken: `t${++token}` } })
  )
  const mcp: Effect.Effect<unknown, unknown> = withCallback ? client.callTool(params, { onProgress }) : client.callTool(params)
  const loop = (call: Effect.Effect<unknown, unknown>) =>
    Effect.suspend(() => {
      let i = 0
      return Effect.whileLoop({ while: () => i++ < calls, body: () => call, step: () => {} })
    })
  const time = (call: Effect.Effect<unknown, unknown>) =>
    Effect.suspend(() => {
      const cpu0 = process.cpuUsage()
      return Effect.map(loop(call), () => {
        const cpu = process.cpuUsage(cpu0)
        return ((cpu.user + cpu.system) * 1000) / calls
      })
    })
  yield* loop(bare)
  yield* loop(mcp)
  const b: Array<number> = []
  const m: Array<number> = []
  for (let r = 0; r < rounds; r++) {
    b.push(yield* time(bare))
    m.push(yield* time(mcp))
  }
  const median = (xs: Array<number>) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!
  return {
    bareNs: median(b),
    mcpNs: median(m),
    layerNs: median(m) - median(b),
    // The fastest round: under other processes' load, the least disturbed one.
    mcpMinNs: Math.min(...m),
    seenPerCall: seen / (calls * (rounds + 1))
  }
}))

const result: Record<string, number> = await Effect.runPromise(program as unknown as Effect.Effect<Record<string, number>, unknown>)
console.log(JSON.stringify({ progress, withCallback, srcDir, ...Object.fromEntries(Object.entries(result).map(([k, v]) => [k, Math.round(v * 100) / 100])) }))
