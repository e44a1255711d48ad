/**
 * Profiling aid for the in-flight workload: the `ours` bench client with its
 * write queue capacity taken from IN_FLIGHT_CAPACITY (default: the transport's).
 * Run: npx node --expose-gc bench/in-flight-client.ts bench/profile/in-flight-ours.ts 10000
 * For a heap snapshot at the peak, set SNAPSHOT_PATH (bench/in-flight-client.ts writes it).
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { ClientTransport } from "../../src/client/ClientTransport.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import type { BenchClient } from "../clients/types.ts"

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const capacity = process.env.IN_FLIGHT_CAPACITY
  const runtime = ManagedRuntime.make(
    StdioClientTransport.layer({
      command,
      args,
      ...(capacity !== undefined ? { writeQueueCapacity: Number(capacity) } : {})
    }).pipe(Layer.provide(NodeServices.layer))
  )
  const transport = await runtime.runPromise(ClientTransport)
  await runtime.runPromise(
    transport.request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "bench-ours-profile", version: "1.0.0" }
    }).pipe(Effect.andThen(transport.notify("notifications/initialized")))
  )
  const callTool = transport.request("tools/call", { name: "echo", arguments: { text: "hi" } })
  return {
    callTool: () => runtime.runPromise(callTool),
    ping: () => runtime.runPromise(transport.request("ping")),
    drive: () => Promise.reject(new Error("not used")),
    close: () => runtime.dispose()
  }
}
