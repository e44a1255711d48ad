/**
 * The least a held call can cost through each way of turning an Effect into
 * a Promise: the raw requester's call (no transport, no protocol, one
 * `Effect.callback` per request) run per call through RUN_WAY:
 *
 * - `effect` (default): `Effect.runPromise`;
 * - `managed`: `ManagedRuntime.runPromise` of an empty layer, as the `ours` and
 *   `ours-mcp` bench clients run each call;
 * - `promise`: no fiber at all, the raw requester's own promise.
 *
 * What a client held this way costs above the `managed` figure is its own.
 *
 *   RUN_WAY=managed npx node --expose-gc bench/in-flight-client.ts bench/profile/in-flight-fiber-floor.ts 10000
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { connect, INITIALIZE_PARAMS, TOOL_PARAMS } from "../clients/raw-core.ts"
import type { BenchClient } from "../clients/types.ts"

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const connection = connect(command, args)
  const request = (method: string, params?: unknown) =>
    Effect.callback<unknown>((resume) => connection.send(method, params, (result) => resume(Exit.succeed(result))))
  const viaPromise = (method: string, params?: unknown) =>
    new Promise<unknown>((resolve) => connection.send(method, params, resolve))
  await viaPromise("initialize", INITIALIZE_PARAMS)
  connection.notify("notifications/initialized")
  const callTool = request("tools/call", TOOL_PARAMS)
  const ping = request("ping")
  const runtime = ManagedRuntime.make(Layer.empty)
  await runtime.runPromise(Effect.void)
  const way = process.env.RUN_WAY ?? "effect"
  const run: (effect: Effect.Effect<unknown>, method: string, params?: unknown) => Promise<unknown> =
    way === "effect"
      ? (effect) => Effect.runPromise(effect)
      : way === "managed"
      ? (effect) => runtime.runPromise(effect)
      : way === "promise"
      ? (_, method, params) => viaPromise(method, params)
      : (() => {
        throw new Error(`unknown RUN_WAY ${way} (effect, managed, promise)`)
      })()
  return {
    callTool: () => run(callTool, "tools/call", TOOL_PARAMS),
    ping: () => run(ping, "ping"),
    close: async () => {
      await runtime.dispose()
      await connection.close()
    }
  }
}
