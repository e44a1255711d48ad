/**
 * What `McpServer` alone costs per `tools/call`, with no transport: the
 * handler of `McpServer.toHandler` is called in one fiber, one request after
 * the other, and the figure is this process's CPU time per call. Each build
 * is `dist:api`, the `echo` tool defined the `api` way (`generic`, `typed`,
 * `tool`; see `bench/servers/echo-apis.ts`), measured in alternating rounds:
 *
 *   npx node bench/profile/tool-call-inproc.ts [calls=20000] [rounds=9] dist:api…
 *
 * e.g. `… 20000 15 ./dist:typed ./dist:tool /tmp/base/dist:tool` (a copy of
 * an older `dist/` needs a `node_modules` link beside it).
 */
import * as Effect from "effect/Effect"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { type Api, echoServer } from "../servers/echo-apis.ts"

const [callsText = "20000", roundsText = "9", ...builds] = process.argv.slice(2)
const calls = Number(callsText)
const rounds = Number(roundsText)

// A stdio-like context: the echo tool never notifies nor asks the client.
const context: any = { sessionId: undefined, requestId: undefined, notify: () => Effect.void, request: () => Effect.die("unused") }
const INIT = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "probe", version: "1" } }

/** Loads a build, initializes its server, warms it up; then measures `calls` calls per use. */
const load = async (build: string): Promise<() => Promise<number>> => {
  const [dist, api] = build.split(":") as [string, Api]
  const base = pathToFileURL(resolve(dist) + "/").href
  const McpServer = await import(base + "server/McpServer.js")
  const Tool = await import(base + "server/Tool.js")
  const server = await echoServer(api, "probe", { content: [{ type: "text", text: "ok" }] }, { McpServer, Tool })
  type Handle = { readonly handler: (message: unknown, context: unknown) => Effect.Effect<any> }
  const { handler } = await Effect.runPromise(Effect.scoped(McpServer.toHandler(server)) as Effect.Effect<Handle>)
  await Effect.runPromise(handler({ jsonrpc: "2.0", id: 0, method: "initialize", params: INIT }, { ...context, requestId: 0 }))
  await Effect.runPromise(handler({ jsonrpc: "2.0", method: "notifications/initialized" }, context))
  let id = 1
  const batch = Effect.gen(function*() {
    for (let i = 0; i < calls; i++) {
      const requestId = id++
      const message = { jsonrpc: "2.0", id: requestId, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } }
      const reply = yield* handler(message, { ...context, requestId })
      if (reply.result === undefined) throw new Error(`${build}: ${JSON.stringify(reply)}`)
    }
  })
  await Effect.runPromise(batch)
  return async () => {
    const t0 = process.cpuUsage()
    await Effect.runPromise(batch)
    const t = process.cpuUsage(t0)
    return (t.user + t.system) / calls
  }
}

const measured: Array<{ build: string; measure: () => Promise<number>; samples: Array<number> }> = []
for (const build of builds) measured.push({ build, measure: await load(build), samples: [] })
// Alternating rounds: drift on a shared machine hits every build alike.
for (let r = 0; r < rounds; r++) {
  for (const m of measured) m.samples.push(await m.measure())
}
for (const { build, samples } of measured) {
  const sorted = [...samples].sort((a, b) => a - b)
  console.log(`${build}: median ${sorted[sorted.length >> 1]!.toFixed(2)} µs/call (min ${sorted[0]!.toFixed(2)}, ${rounds} rounds of ${calls})`)
}
process.exit(0)
