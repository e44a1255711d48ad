/**
 * Runnable example of the HTTP client transports: starts the reference
 * server (`@modelcontextprotocol/server-everything`) in its Streamable HTTP
 * mode and in its legacy SSE mode, and talks to each.
 *
 *   npx node scratchpad/http-client-example.ts
 */
import { NodeHttpClient, NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Effect, Layer, Stream } from "effect"
import { ChildProcess } from "effect/process"
import * as Net from "node:net"
import { fileURLToPath } from "node:url"
import type { ClientTransportShape } from "../src/client/ClientTransport.ts"
import * as FromConfig from "../src/client/FromConfig.ts"
import * as StreamableHttpClientTransport from "../src/client/StreamableHttpClientTransport.ts"

const EVERYTHING = fileURLToPath(
  new URL("../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url)
)

const freePort = Effect.callback<number>((resume) => {
  const probe = Net.createServer()
  probe.listen(0, "127.0.0.1", () => {
    const port = (probe.address() as Net.AddressInfo).port
    probe.close(() => resume(Effect.succeed(port)))
  })
})

/** Starts the reference server in `mode` and waits until it listens. */
const referenceServer = (mode: "streamableHttp" | "sse") =>
  Effect.gen(function*() {
    const port = yield* freePort
    const child = yield* ChildProcess.make(process.execPath, [EVERYTHING, mode], {
      env: { PORT: String(port) },
      extendEnv: true,
      forceKillAfter: "2 seconds"
    })
    yield* child.all.pipe(
      Stream.decodeText(),
      Stream.splitLines,
      Stream.takeUntil((line) => line.includes(`port ${port}`)),
      Stream.runDrain
    )
    return `http://127.0.0.1:${port}`
  })

const handshake = (transport: ClientTransportShape) =>
  Effect.gen(function*() {
    const init = (yield* transport.request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "http-client-example", version: "1.0.0" }
    })) as { protocolVersion: string }
    yield* transport.setProtocolVersion(init.protocolVersion)
    yield* transport.notify("notifications/initialized")
    return init.protocolVersion
  })

const streamable = Effect.gen(function*() {
  const origin = yield* referenceServer("streamableHttp")
  const transport = yield* StreamableHttpClientTransport.make({
    url: `${origin}/mcp`,
    listen: true, // open the GET stream once initialized
    headers: { "user-agent": "http-client-example" }
  })
  const version = yield* handshake(transport)
  yield* Console.log(`Streamable HTTP: protocol ${version}, session ${yield* transport.sessionId}`)
  const echoed = yield* transport.request("tools/call", { name: "echo", arguments: { message: "hi" } })
  yield* Console.log("echo →", JSON.stringify(echoed))
  // Closing the scope sends DELETE for the session.
}).pipe(Effect.scoped)

const legacy = Effect.gen(function*() {
  const origin = yield* referenceServer("sse")
  // `type: "sse"` probes: Streamable HTTP first, legacy HTTP+SSE when initialize is refused with a 4xx.
  const transport = yield* FromConfig.make({ type: "sse", url: `${origin}/sse` })
  const version = yield* handshake(transport)
  yield* Console.log(`type "sse": selected ${yield* transport.selected}, protocol ${version}`)
  const tools = (yield* transport.request("tools/list")) as { tools: ReadonlyArray<{ name: string }> }
  yield* Console.log("tools:", tools.tools.map((t) => t.name).join(", "))
}).pipe(Effect.scoped)

NodeRuntime.runMain(
  Effect.andThen(streamable, legacy).pipe(
    Effect.provide(Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici))
  )
)
