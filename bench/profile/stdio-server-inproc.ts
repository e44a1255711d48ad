/**
 * What our stdio server (transport + McpServer) costs per request without a
 * second process: stdin is fed `burst` framed `tools/call` lines at a time and
 * the next burst goes in once every reply of the previous one came out. The
 * figure is this process's CPU time per request, steadier than the
 * cross-process bench on a shared machine. Builds to compare are given as
 * `dist` directories and measured in alternating rounds:
 *
 *   npx node bench/profile/stdio-server-inproc.ts [burst=32] [requests=100000] [rounds=5] [dist…]
 *
 * (default: ./dist; e.g. `… 32 100000 5 /tmp/base/dist ./dist` for before → after).
 * A build given as `dist:api` serves the `echo` tool defined the `api` way
 * (`generic`, `typed` or `tool`, see `bench/servers/echo-apis.ts`), e.g.
 * `… 32 100000 5 ./dist:typed ./dist:tool`.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as Sink from "effect/Sink"
import * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { type Api, echoServer } from "../servers/echo-apis.ts"

const [burstText = "32", requestsText = "100000", roundsText = "5", ...dists] = process.argv.slice(2)
const burst = Number(burstText)
const requests = Number(requestsText)
const rounds = Number(roundsText)
const builds = dists.length > 0 ? dists : ["./dist"]

const CallParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})
const ECHO_RESULT = { content: [{ type: "text", text: "ok" }] }
const encoder = new TextEncoder()
const line = (id: number, method: string, params?: unknown) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) }) + "\n"

interface Build {
  readonly name: string
  readonly measure: (n: number) => Promise<number>
}

const load = async (build: string): Promise<Build> => {
  const [dist = build, api] = build.split(":") as [string, Api | undefined]
  const base = pathToFileURL(resolve(dist) + "/").href
  const McpServer = await import(base + "server/McpServer.js")
  const Tool = await import(base + "server/Tool.js")
  const StdioServerTransport = await import(base + "server/StdioServerTransport.js")
  const input = Effect.runSync(Queue.unbounded<Uint8Array>())
  let seen = 0
  let want = 0
  let done: Deferred.Deferred<void> | undefined
  const countLines = (chunk: string | Uint8Array) => {
    if (typeof chunk === "string") {
      for (let i = chunk.indexOf("\n"); i !== -1; i = chunk.indexOf("\n", i + 1)) seen++
    } else {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) seen++
    }
    if (done !== undefined && seen >= want) Deferred.doneUnsafe(done, Effect.void)
  }
  const stdio = Stdio.make({
    args: Effect.succeed([]),
    stdin: Stream.fromQueue(input),
    stdout: () => Sink.forEach((chunk: string | Uint8Array) => Effect.sync(() => countLines(chunk))),
    stderr: () => Sink.drain
  })
  const server = api === undefined
    ? McpServer.make({ serverInfo: { name: "inproc", version: "1" } }).pipe(
      McpServer.method("tools/call", { params: CallParams }, () => Effect.succeed(ECHO_RESULT))
    )
    : await echoServer(api, "inproc", ECHO_RESULT, { McpServer, Tool })
  const exchange = (text: string, lines: number) =>
    Effect.suspend(() => {
      want = seen + lines
      done = Deferred.makeUnsafe<void>()
      Queue.offerUnsafe(input, encoder.encode(text))
      return Deferred.await(done)
    })
  let nextId = 1
  const bursts = (n: number) =>
    Effect.gen(function*() {
      for (let sent = 0; sent < n; sent += burst) {
        let text = ""
        for (let i = 0; i < burst; i++) text += line(nextId++, "tools/call", { name: "echo", arguments: { text: "hi" } })
        yield* exchange(text, burst)
      }
    })
  // The server lives in its own fiber for the rest of the process.
  const serve: Effect.Effect<unknown, unknown, Stdio.Stdio> = Effect.scoped(Effect.flatMap(
    McpServer.toHandler(server),
    ({ handler }: any) => StdioServerTransport.run(handler)
  ))
  Effect.runFork(Effect.provide(serve, Layer.succeed(Stdio.Stdio, stdio))).addObserver((exit) => {
    // The server serves for the rest of the process: ending is a failure of the probe.
    console.error(`${build}: the server ended: ${exit._tag === "Failure" ? String(exit.cause) : "stdin ended"}`)
    process.exit(1)
  })
  await Effect.runPromise(
    Effect.gen(function*() {
      const init = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "c", version: "1" } }
      yield* exchange(line(0, "initialize", init), 1)
      Queue.offerUnsafe(input, encoder.encode(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n"))
      yield* bursts(Math.min(requests, 20_000))
    })
  )
  return {
    name: build,
    measure: async (n) => {
      const t0 = process.cpuUsage()
      await Effect.runPromise(bursts(n))
      const t = process.cpuUsage(t0)
      return (t.user + t.system) / n
    }
  }
}

const loaded: Array<Build> = []
for (const dist of builds) loaded.push(await load(dist))
const results = new Map<string, Array<number>>(loaded.map((b) => [b.name, []]))
for (let r = 0; r < rounds; r++) {
  for (const b of loaded) results.get(b.name)!.push(await b.measure(requests))
}
for (const [name, xs] of results) {
  const sorted = [...xs].sort((a, b) => a - b)
  console.log(`${name}: median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)} µs/request (min ${sorted[0]!.toFixed(2)}, max ${sorted.at(-1)!.toFixed(2)}; burst ${burst})`)
}
process.exit(0)
