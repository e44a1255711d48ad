/** Effect's own MCP client (`effect/ai` McpClient) over its stdio transport. It has no ping. */
import * as NodeChildProcessSpawner from "@effect/platform-node/NodeChildProcessSpawner"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
// Subpath imports, here and in the other Effect clients: the `effect` barrel would load every module
// and make the cold start measure the benchmark's imports instead of the client's.
import * as McpClient from "effect/ai/McpClient"
import * as McpProtocol from "effect/ai/McpProtocol"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as ChildProcess from "effect/process/ChildProcess"
import type { BenchClient } from "./types.ts"
import { driveEffect, holdEffect } from "./effect-drive.ts"

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const layer = McpClient.layerStdio({
    name: "bench-effect-ai",
    version: "1.0.0",
    command: ChildProcess.make(command, [...args]),
    protocol: McpProtocol.v2025_11_25
  }).pipe(
    // The same narrow platform layer as our stdio clients get (what `NodeSpawner.layer` composes).
    Layer.provide(NodeChildProcessSpawner.layer),
    Layer.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer))
  )
  const runtime = ManagedRuntime.make(layer)
  const client = await runtime.runPromise(McpClient.McpClient)
  const [tool] = await runtime.runPromise(client.listTools())
  const call = client.callTool({ tool: tool!, arguments: { text: "hi" } })
  return {
    callTool: () => runtime.runPromise(call),
    ping: () => Promise.reject(new Error("effect/ai McpClient has no ping")),
    drive: (op, total, concurrency) =>
      op === "ping"
        ? Promise.resolve({ rps: Number.NaN, p50: Number.NaN, p99: Number.NaN })
        : runtime.runPromise(driveEffect(call, total, concurrency)),
    holdAsFibers: (count) => runtime.runPromise(holdEffect(call, count)),
    close: () => runtime.dispose()
  }
}
