/**
 * What our stdio server (transport + McpServer) costs per request when
 * requests come one at a time, without a second process: stdin and stdout
 * are Node streams in this process (`NodeStream.fromReadable` and
 * `NodeSink.fromWritable`, as `NodeStdio` makes them), a request is pushed
 * into stdin when the previous reply came out of stdout, and the figure is
 * this process's CPU time per request. The client side is a few lines of
 * plain Node, so nearly all of the figure is the server's path from a stdin
 * chunk to the stdout write: what a lone round trip pays besides waking the
 * process. Builds to compare are `dist` directories (optionally `dist:api`,
 * see `bench/servers/echo-apis.ts`), measured in alternating rounds:
 *
 *   npx node bench/profile/stdio-server-c1.ts [requests=20000] [rounds=7] [method=tools/call] dist…
 *
 * e.g. `… 20000 7 tools/call /work/before/dist ./dist`, or `ping` as method.
 */
import * as NodeSink from "@effect/platform-node/NodeSink"
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PlatformError from "effect/PlatformError"
import * as Schema from "effect/Schema"
import * as Sink from "effect/Sink"
import * as Stdio from "effect/Stdio"
import { resolve } from "node:path"
import { PassThrough, Writable } from "node:stream"
import { pathToFileURL } from "node:url"
import { type Api, echoServer } from "../servers/echo-apis.ts"

const [requestsText = "20000", roundsText = "7", method = "tools/call", ...dists] = process.argv.slice(2)
const requests = Number(requestsText)
const rounds = Number(roundsText)
const builds = dists.length > 0 ? dists : ["./dist"]

const CallParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})
const ECHO_RESULT = { content: [{ type: "text", text: "ok" }] }
const PARAMS = method === "tools/call" ? { name: "echo", arguments: { text: "hi" } } : undefined
const line = (id: number, m: string, params?: unknown) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: m, ...(params === undefined ? {} : { params }) }) + "\n"

const failed = (method: string) => (cause: unknown) =>
  PlatformError.systemError({ module: "Stdio", method, _tag: "Unknown", cause })

const load = async (build: string) => {
  const [dist = build, api] = build.split(":") as [string, Api | undefined]
  const base = pathToFileURL(resolve(dist) + "/").href
  const McpServer = await import(base + "server/McpServer.js")
  const Tool = await import(base + "server/Tool.js")
  const StdioServerTransport = await import(base + "server/StdioServerTransport.js")
  const stdin = new PassThrough()
  let onLine: (() => void) | undefined
  const stdout = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) onLine?.()
      callback()
    }
  })
  const stdio = Stdio.make({
    args: Effect.succeed([]),
    stdin: NodeStream.fromReadable({ evaluate: () => stdin, onError: failed("stdin"), closeOnDone: false }),
    stdout: () => NodeSink.fromWritable({ evaluate: () => stdout, onError: failed("stdout"), endOnDone: false }),
    stderr: () => Sink.drain
  })
  const server = api === undefined
    ? McpServer.make({ serverInfo: { name: "c1", version: "1" } }).pipe(
      McpServer.method("tools/call", { params: CallParams }, () => Effect.succeed(ECHO_RESULT))
    )
    : await echoServer(api, "c1", ECHO_RESULT, { McpServer, Tool })
  const serve: Effect.Effect<unknown, unknown, Stdio.Stdio> = Effect.scoped(Effect.flatMap(
    McpServer.toHandler(server),
    ({ handler }: any) => StdioServerTransport.run(handler)
  ))
  Effect.runFork(Effect.provide(serve, Layer.succeed(Stdio.Stdio, stdio))).addObserver((exit) => {
    console.error(`${build}: the server ended: ${exit._tag === "Failure" ? String(exit.cause) : "stdin ended"}`)
    process.exit(1)
  })
  let nextId = 1
  /** `n` requests, each written once the previous reply came out; resolves after the last reply. */
  const oneByOne = (n: number) =>
    new Promise<void>((done) => {
      let left = n
      onLine = () => {
        if (--left === 0) {
          onLine = undefined
          return done()
        }
        stdin.write(line(nextId++, method, PARAMS))
      }
      stdin.write(line(nextId++, method, PARAMS))
    })
  const init = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "c", version: "1" } }
  await new Promise<void>((done) => {
    onLine = done
    stdin.write(line(0, "initialize", init))
  })
  stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n")
  await oneByOne(Math.min(requests, 20_000))
  return {
    name: build,
    measure: async (n: number) => {
      const t0 = process.cpuUsage()
      await oneByOne(n)
      const t = process.cpuUsage(t0)
      return (t.user + t.system) / n
    }
  }
}

const loaded: Array<Awaited<ReturnType<typeof load>>> = []
for (const build of builds) loaded.push(await load(build))
const results = new Map<string, Array<number>>(loaded.map((b) => [b.name, []]))
for (let r = 0; r < rounds; r++) {
  for (const b of loaded) results.get(b.name)!.push(await b.measure(requests))
}
for (const [name, xs] of results) {
  const sorted = [...xs].sort((a, b) => a - b)
  console.log(
    `${name}: median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)} µs/request (min ${sorted[0]!.toFixed(2)}, max ${
      sorted.at(-1)!.toFixed(2)
    }; ${method}, one at a time)`
  )
}
process.exit(0)
