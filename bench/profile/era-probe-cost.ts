/**
 * What the era probe costs a client of a handshake-era server: the wall time
 * of `McpClient.connect` with `protocol: "auto"` (a `server/discover` probe,
 * refused, then `initialize`) against the same connect pinned to
 * `"2025-11-25"` (`initialize` only), against the official SDK 1.x server
 * (bench/http/server-sdk.ts), over stdio (a fresh child per connect, so the
 * spawn is in both figures) and Streamable HTTP (one server; each connect
 * opens a session, closed after the measurement). Runs are interleaved and
 * alternate which variant goes first; one warm-up of each is not counted.
 *
 *   npx node bench/profile/era-probe-cost.ts [runs=20] [stdio,http]
 *
 * Prints one JSON line per transport and variant: median, p25, p75 in ms,
 * and the median difference auto − pinned.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import type * as ClientTransport from "../../src/client/ClientTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"

const [runsText = "20", which = "stdio,http"] = process.argv.slice(2)
const runs = Number(runsText)
const server = fileURLToPath(new URL("../http/server-sdk.ts", import.meta.url))
const Env = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)

type Protocol = "auto" | "2025-11-25"
type Transport = Effect.Effect<ClientTransport.ClientTransportShape, unknown, Scope.Scope | Layer.Success<typeof Env>>

/** One connect, timed from the call to the client value; the scope closes afterwards, untimed. */
const connectOnce = (transport: Transport, protocol: Protocol) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const t0 = performance.now()
    const client = yield* McpClient.connect(transport, { protocol }).pipe(Scope.provide(scope))
    const ms = performance.now() - t0
    if (client.era !== "legacy") throw new Error(`expected the handshake era, got ${client.era}`)
    yield* Scope.close(scope, Exit.void)
    return ms
  }).pipe(Effect.provide(Env))

/** Starts the SDK's HTTP server as a child and returns its URL; the child is stopped at exit. */
const startHttpServer = () =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [server, "--transport", "http"], { stdio: ["ignore", "pipe", "inherit"] })
    process.on("exit", () => child.kill("SIGTERM"))
    child.stdout.setEncoding("utf8")
    let out = ""
    child.stdout.on("data", (chunk: string) => {
      out += chunk
      const m = /listening (\S+)/.exec(out)
      if (m !== null) resolve(m[1]!)
    })
    child.on("exit", (code) => reject(new Error(`server-sdk.ts exited ${code}`)))
  })

const q = (xs: ReadonlyArray<number>, p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!
const round = (n: number) => +n.toFixed(2)

const measure = async (name: string, transport: Transport) => {
  const times: Record<Protocol, Array<number>> = { auto: [], "2025-11-25": [] }
  const once = (protocol: Protocol) => Effect.runPromise(connectOnce(transport, protocol))
  await once("auto")
  await once("2025-11-25")
  for (let r = 0; r < runs; r++) {
    const order: ReadonlyArray<Protocol> = r % 2 === 0 ? ["auto", "2025-11-25"] : ["2025-11-25", "auto"]
    for (const protocol of order) times[protocol].push(await once(protocol))
  }
  for (const protocol of ["auto", "2025-11-25"] as const) {
    const xs = times[protocol]
    console.log(JSON.stringify({
      transport: name,
      protocol,
      runs,
      medianMs: round(q(xs, 0.5)),
      p25Ms: round(q(xs, 0.25)),
      p75Ms: round(q(xs, 0.75))
    }))
  }
  console.log(JSON.stringify({
    transport: name,
    probeCostMs: round(q(times.auto, 0.5) - q(times["2025-11-25"], 0.5))
  }))
}

const transports = which.split(",")
if (transports.includes("stdio")) {
  await measure(
    "stdio",
    StdioClientTransport.make({ command: process.execPath, args: [server, "--transport", "stdio"], stderr: { log: false } })
  )
}
if (transports.includes("http")) {
  const url = await startHttpServer()
  await measure("http", StreamableHttpClientTransport.make({ url }))
}
process.exit(0)
