/** This project's stdio client transport, driven from inside Effect. */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { runtimeClient } from "./effect-drive.ts"
import { loadClientTransport, loadNodeSpawner, loadStdioClientTransport } from "../our-modules.ts"
import type { BenchClient } from "./types.ts"

const { ClientTransport } = await loadClientTransport()
const StdioClientTransport = await loadStdioClientTransport()
const NodeSpawner = await loadNodeSpawner()

/** The transport in a runtime of its own, after the handshake; `name` is the client's in `initialize`. */
export const open = async (command: string, args: ReadonlyArray<string>, name: string) => {
  const runtime = ManagedRuntime.make(
    StdioClientTransport.layer({ command, args }).pipe(Layer.provide(NodeSpawner.layer))
  )
  const transport = await runtime.runPromise(ClientTransport)
  await runtime.runPromise(
    transport.request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name, version: "1.0.0" }
    }).pipe(Effect.andThen(transport.notify("notifications/initialized")))
  )
  return { runtime, transport }
}

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const { runtime, transport } = await open(command, args, "bench-ours")
  return runtimeClient(runtime, {
    callTool: transport.request("tools/call", { name: "echo", arguments: { text: "hi" } }),
    ping: transport.request("ping")
  })
}
