/**
 * README's bridge example ("As a library") with repository paths: server-everything
 * (stdio) over Streamable HTTP. `node scratchpad/bridge-example.ts [port]`
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Layer } from "effect"
import * as Bridge from "../src/bridge/Bridge.ts"
import * as StdioClientTransport from "../src/client/StdioClientTransport.ts"

const upstream = StdioClientTransport.make({ command: "node_modules/.bin/mcp-server-everything", args: [] })

Bridge.layerHttp({ connect: upstream }, { port: Number(process.argv[2] ?? 8421) }).pipe(
  Layer.provide(NodeServices.layer),
  Layer.launch,
  NodeRuntime.runMain
)
