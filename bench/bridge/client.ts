/**
 * One measurement run of workload 7 in a fresh process:
 *
 *   node bench/bridge/client.ts <direct|bridge> <concurrencies> <totals> <warm-up>
 *
 * `direct`: our McpClient over stdio to the raw responder. `bridge`: the same
 * client over Streamable HTTP to `bench/bridge/server.ts` (a process of its
 * own), which forwards to its own raw responder. `tools/call` with a small
 * result; prints one JSON line per concurrency: { impl, concurrency, rps, p50, p99 }.
 */
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import type { ClientTransport } from "../../src/client/ClientTransport.ts"
import { driveEffect } from "../clients/effect-drive.ts"
import {
  loadMcpClient,
  loadNodeSpawner,
  loadStdioClientTransport,
  loadStreamableHttpClientTransport
} from "../our-modules.ts"

const McpClient = await loadMcpClient()
const StdioClientTransport = await loadStdioClientTransport()
const StreamableHttpClientTransport = await loadStreamableHttpClientTransport()
const NodeSpawner = await loadNodeSpawner()

const [impl = "direct", concurrencyText = "1,32", totalText = "2000,8000", warmUpText = "300"] = process.argv.slice(2)
const concurrencies = concurrencyText.split(",").map(Number)
const totals = totalText.split(",").map(Number)
const warmUp = Number(warmUpText)
const responder = new URL("../raw-responder.ts", import.meta.url).pathname
const bridgeServer = new URL("./server.ts", import.meta.url).pathname

/** Starts the bridge process and reads the URL it prints. */
const startBridge = () =>
  new Promise<{ url: string; stop: () => Promise<void> }>((resolve, reject) => {
    const child = spawn(process.execPath, [bridgeServer], { stdio: ["ignore", "pipe", "inherit"] })
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    child.once("error", reject)
    child.once("exit", (code) => reject(new Error(`bridge server exited with ${code} before listening`)))
    createInterface({ input: child.stdout }).once("line", (line) => {
      const { url } = JSON.parse(line) as { url: string }
      resolve({
        url,
        stop: () => {
          child.kill("SIGTERM")
          return exited
        }
      })
    })
  })

const bridge = impl === "bridge" ? await startBridge() : undefined
const transport: Layer.Layer<ClientTransport, unknown> = bridge === undefined
  ? StdioClientTransport.layer({ command: process.execPath, args: [responder] }).pipe(Layer.provide(NodeSpawner.layer))
  : StreamableHttpClientTransport.layer({ url: bridge.url }).pipe(Layer.provide(NodeHttpClient.layerUndici))
const runtime = ManagedRuntime.make(
  McpClient.layer({ clientInfo: { name: "bench-bridge", version: "1.0.0" }, requestTimeout: Duration.minutes(2) }).pipe(
    Layer.provide(transport)
  )
)
const client = await runtime.runPromise(McpClient.McpClient)
const call = client.callTool({ name: "echo", arguments: { text: "hi" } })
for (let i = 0; i < concurrencies.length; i++) {
  const concurrency = concurrencies[i]!
  await runtime.runPromise(driveEffect(call, warmUp, concurrency))
  const result = await runtime.runPromise(driveEffect(call, totals[i] ?? totals[0]!, concurrency))
  process.stdout.write(JSON.stringify({ impl, concurrency, ...result }) + "\n")
}
await runtime.dispose()
await bridge?.stop()
process.exit(0)
