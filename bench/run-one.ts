/**
 * One measurement in a fresh process: `node bench/run-one.ts <client> <op> <concurrency> <total>`.
 * Prints a JSON line { rps, p50, p99 }. The orchestrator runs many of these.
 */
import { drive } from "./stats.ts"
import type { BenchClient } from "./clients/types.ts"

const [clientName = "raw", op = "callTool", concurrencyText = "1", totalText = "5000"] = process.argv.slice(2)
const concurrency = Number(concurrencyText)
const total = Number(totalText)

const responder = new URL("./raw-responder.ts", import.meta.url).pathname
const loaders: Record<string, () => Promise<{ make: (command: string, args: ReadonlyArray<string>) => Promise<BenchClient> }>> = {
  raw: () => import("./clients/raw.ts"),
  sdk: () => import("./clients/sdk.ts"),
  ours: () => import("./clients/ours.ts"),
  "effect-ai": () => import("./clients/effect-ai.ts")
}

const load = loaders[clientName]
if (load === undefined) throw new Error(`unknown client ${clientName}`)
const client = await (await load()).make(process.execPath, [responder])
const operation = op === "ping" ? "ping" : "callTool"
const run = (n: number) =>
  client.drive !== undefined ? client.drive(operation, n, concurrency) : drive(client[operation], n, concurrency)
await run(Math.min(2000, total)) // warm-up: JIT and buffers
const result = await run(total)
await client.close()
process.stdout.write(JSON.stringify(result) + "\n")
process.exit(0)
