/**
 * This project's `McpManager` with one stdio server: each call goes by its
 * name across servers (`bench__echo`) through the manager's routing and
 * readiness check to `McpClient`. Against `ours-mcp` it shows what the
 * manager adds per call. Not in the client list: run it by path, e.g.
 * `npx node bench/profile/ab.ts 5 callTool 32 20000 ours-mcp bench/clients/ours-manager.ts`.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { driveEffect } from "./effect-drive.ts"
import { loadNodeSpawner, loadStdioClientTransport } from "../our-modules.ts"
import type { BenchClient } from "./types.ts"

// Loaded the way our-modules.ts loads the others (src/, or dist/ with BENCH_BUILD=dist).
const fromDist = process.env.BENCH_BUILD === "dist"
const McpManager: typeof import("../../src/client/McpManager.ts") = await import(
  new URL(fromDist ? "../../dist/client/McpManager.js" : "../../src/client/McpManager.ts", import.meta.url).href
)
const StdioClientTransport = await loadStdioClientTransport()
const NodeSpawner = await loadNodeSpawner()

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const runtime = ManagedRuntime.make(
    McpManager.layer({
      config: { mcpServers: { bench: { command, args: [...args] } } },
      transport: (_, config) =>
        McpManager.Config.isStdio(config)
          ? StdioClientTransport.make({ command: config.command, args: config.args })
          : Effect.die("stdio only"),
      client: { clientInfo: { name: "bench-ours-manager", version: "1.0.0" } }
    }).pipe(Layer.provide(NodeSpawner.layer))
  )
  const manager = await runtime.runPromise(McpManager.McpManager)
  const callTool = manager.callTool("bench__echo", { text: "hi" })
  const ping = Effect.flatMap(manager.client("bench"), (client) => client.ping())
  return {
    callTool: () => runtime.runPromise(callTool),
    ping: () => runtime.runPromise(ping),
    drive: (op, total, concurrency) => runtime.runPromise(driveEffect(op === "ping" ? ping : callTool, total, concurrency)),
    close: () => runtime.dispose()
  }
}
