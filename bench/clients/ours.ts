/** This project's stdio client transport, driven from inside Effect. */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { driveEffect, holdEffect } from "./effect-drive.ts"
import { loadClientTransport, loadNodeSpawner, loadStdioClientTransport } from "../our-modules.ts"
import type { BenchClient } from "./types.ts"

const { ClientTransport } = await loadClientTransport()
const StdioClientTransport = await loadStdioClientTransport()
const NodeSpawner = await loadNodeSpawner()

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const runtime = ManagedRuntime.make(
    StdioClientTransport.layer({ command, args }).pipe(Layer.provide(NodeSpawner.layer))
  )
  const transport = await runtime.runPromise(ClientTransport)
  await runtime.runPromise(
    transport.request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "bench-ours", version: "1.0.0" }
    }).pipe(Effect.andThen(transport.notify("notifications/initialized")))
  )
  const callTool = transport.request("tools/call", { name: "echo", arguments: { text: "hi" } })
  const ping = transport.request("ping")
  return {
    callTool: () => runtime.runPromise(callTool),
    ping: () => runtime.runPromise(ping),
    drive: (op, total, concurrency) => runtime.runPromise(driveEffect(op === "ping" ? ping : callTool, total, concurrency)),
    holdAsFibers: (count) => runtime.runPromise(holdEffect(callTool, count)),
    close: () => runtime.dispose()
  }
}
