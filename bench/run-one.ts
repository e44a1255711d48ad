/**
 * Measurements in a fresh process:
 * `node bench/run-one.ts <client> <op[,op]> <concurrency[,concurrency]> <total> [warm-up]`.
 * Prints a JSON line { op, concurrency, rps, p50, p99, cpuUs, coldMs } per
 * cell (every op at every concurrency, in that order). `total` may be a list
 * matching the concurrencies (e.g. `5000,20000`).
 *
 * - `cpuUs`: CPU time of this (client) process per request during the
 *   measured run; unlike req/s, barely moved by other load on the machine.
 * - `coldMs`: from this process's start to the first `tools/call` result:
 *   Node start-up, loading the client's modules, spawning the server, the
 *   handshake and one call.
 */
import { loaderFor } from "./clients/index.ts"
import { drive } from "./stats.ts"

const [clientName = "raw", opsText = "callTool", concurrencyText = "1", totalText = "5000", warmText = "2000"] = process
  .argv.slice(2)
const ops = opsText.split(",")
const concurrencies = concurrencyText.split(",").map(Number)
const totals = totalText.split(",").map(Number)
const warmUp = Number(warmText)

const load = loaderFor(clientName)
const responder = new URL("./raw-responder.ts", import.meta.url).pathname
const client = await (await load()).make(process.execPath, [responder])
await client.callTool()
const coldMs = performance.now()

for (const op of ops) {
  for (const [i, concurrency] of concurrencies.entries()) {
    const total = totals[Math.min(i, totals.length - 1)]!
    const operation = op === "ping" ? "ping" : "callTool"
    const run = (n: number) =>
      client.drive !== undefined ? client.drive(operation, n, concurrency) : drive(client[operation], n, concurrency)
    await run(Math.min(warmUp, total)) // warm-up: JIT and buffers
    const cpu0 = process.cpuUsage()
    const measured = await run(total)
    const cpu = process.cpuUsage(cpu0)
    process.stdout.write(
      JSON.stringify({ op, concurrency, ...measured, cpuUs: (cpu.user + cpu.system) / total, coldMs }) + "\n"
    )
  }
}
await client.close()
process.exit(0)
