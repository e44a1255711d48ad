/**
 * What a held `McpClient.callTool` costs when Promise code holds it, by how
 * the Effect is turned into a Promise (PROMISE_WAY):
 *
 * - `runPromise` (default): `ManagedRuntime.runPromise`, as the `ours-mcp` bench client does;
 * - `runPromiseWith`: `Effect.runPromiseWith(services)`, the runtime's services taken once;
 * - `observer`: one `new Promise` settled by an observer of a fiber forked with those services
 *   (`Effect.runForkWith` + `fiber.addObserver`), the failure squashed as `runPromise` does.
 *
 *   PROMISE_WAY=observer npx node --expose-gc bench/in-flight-client.ts bench/profile/in-flight-promise-ways.ts 10000
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { loadMcpClient, loadNodeSpawner, loadStdioClientTransport } from "../our-modules.ts"
import type { BenchClient } from "../clients/types.ts"

const McpClient = await loadMcpClient()
const StdioClientTransport = await loadStdioClientTransport()
const NodeSpawner = await loadNodeSpawner()

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const runtime = ManagedRuntime.make(
    McpClient.layer({ clientInfo: { name: "bench-promise-ways", version: "1.0.0" } }).pipe(
      Layer.provide(StdioClientTransport.layer({ command, args })),
      Layer.provide(NodeSpawner.layer)
    )
  )
  const client = await runtime.runPromise(McpClient.McpClient)
  const services = await runtime.context()
  const callTool = client.callTool({ name: "echo", arguments: { text: "hi" } })
  const way = process.env.PROMISE_WAY ?? "runPromise"
  const fork = Effect.runForkWith(services)
  const run: <A, E>(effect: Effect.Effect<A, E>) => Promise<A> = way === "runPromise"
    ? (effect) => runtime.runPromise(effect)
    : way === "runPromiseWith"
    ? Effect.runPromiseWith(services)
    : way === "observer"
    ? (effect) =>
      new Promise((resolve, reject) => {
        fork(effect).addObserver((exit) => exit._tag === "Success" ? resolve(exit.value) : reject(Cause.squash(exit.cause)))
      })
    : (() => {
      throw new Error(`unknown PROMISE_WAY ${way} (runPromise, runPromiseWith, observer)`)
    })()
  return {
    callTool: () => run(callTool),
    ping: () => run(client.ping()),
    close: () => runtime.dispose()
  }
}
