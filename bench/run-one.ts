/**
 * One measurement in a fresh process: `node bench/run-one.ts <client> <op> <concurrency> <total>`.
 * Prints a JSON line { rps, p50, p99, cpuUs, coldMs }. The orchestrator runs many of these.
 *
 * - `cpuUs`: CPU time of this (client) process per request during the
 *   measured run; unlike req/s, barely moved by other load on the machine.
 * - `coldMs`: from this process's start to the first `tools/call` result:
 *   Node start-up, loading the client's modules, spawning the server, the
 *   handshake and one call.
 */
import { resolve } from "node:path"
import type { BenchClient } from "./clients/types.ts"
import { drive } from "./stats.ts"

const [clientName = "raw", op = "callTool", concurrencyText = "1", totalText = "5000"] = process.argv.slice(2)
const concurrency = Number(concurrencyText)
const total = Number(totalText)

type Loader = () => Promise<{ make: (command: string, args: ReadonlyArray<string>) => Promise<BenchClient> }>
const loaders: Record<string, Loader> = {
  raw: () => import("./clients/raw.ts"),
  ours: () => import("./clients/ours.ts"),
  "ours-mcp": () => import("./clients/ours-mcp.ts"),
  sdk: () => import("./clients/sdk.ts"),
  "sdk-transport": () => import("./clients/sdk-transport.ts"),
  "effect-ai": () => import("./clients/effect-ai.ts"),
  // Ladder steps between `raw` and `ours`, for "where time goes".
  "raw-passthrough": () => import("./clients/raw-passthrough.ts"),
  "raw-fiber": () => import("./clients/raw-fiber.ts")
}

// A path to a module with the same `make` compares another build (e.g. `../before/bench/clients/ours.ts`).
const load: Loader | undefined = loaders[clientName] ??
  (clientName.endsWith(".ts") ? () => import(resolve(clientName)) : undefined)
if (load === undefined) throw new Error(`unknown client ${clientName} (known: ${Object.keys(loaders).join(", ")})`)
const responder = new URL("./raw-responder.ts", import.meta.url).pathname
const client = await (await load()).make(process.execPath, [responder])
await client.callTool()
const coldMs = performance.now()

const operation = op === "ping" ? "ping" : "callTool"
const run = (n: number) =>
  client.drive !== undefined ? client.drive(operation, n, concurrency) : drive(client[operation], n, concurrency)
await run(Math.min(2000, total)) // warm-up: JIT and buffers
const cpu0 = process.cpuUsage()
const measured = await run(total)
const cpu = process.cpuUsage(cpu0)
await client.close()
process.stdout.write(JSON.stringify({ ...measured, cpuUs: (cpu.user + cpu.system) / total, coldMs }) + "\n")
process.exit(0)
