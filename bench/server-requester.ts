/**
 * The raw requester of the stdio server benchmark, in a fresh process:
 * `node bench/server-requester.ts <server> <op[,op]> <concurrency[,concurrency]> <total[,total]> [warm-up]`.
 * Plain Node (`clients/raw-core.ts`): spawns the server, does the MCP
 * handshake, warms every operation up at c32 (five warm-ups' worth), then
 * drives each cell after its own warm-up. Prints a JSON line
 * { op, concurrency, rps, p50, p99, serverCpuUs } per cell; `serverCpuUs` is
 * the server process's CPU time per request (from /proc).
 * BENCH_SERVER_NODE_ARGS adds Node flags to the server (profiling).
 */
import { processCpuUs } from "./child.ts"
import { connect, INITIALIZE_PARAMS, TOOL_PARAMS } from "./clients/raw-core.ts"
import { serverFile, servers } from "./servers/index.ts"
import { drive } from "./stats.ts"

const [serverName = "raw", opsText = "callTool", concurrencyText = "1", totalText = "5000", warmText = "2000"] = process
  .argv.slice(2)
const totals = totalText.split(",").map(Number)
const warmUp = Number(warmText)

// BENCH_SERVER_NODE_ARGS: extra Node flags for the server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter((a) => a.length > 0)
const connection = connect(process.execPath, [...nodeArgs, serverFile(servers, serverName)])
let errors = 0
const request = (method: string, params?: unknown) =>
  new Promise<unknown>((done) =>
    connection.send(method, params, (result) => {
      // An error response has no result.
      if (result === undefined) errors++
      done(result)
    })
  )
await request("initialize", INITIALIZE_PARAMS)
connection.notify("notifications/initialized")
const first = JSON.stringify(await request("tools/call", TOOL_PARAMS))
if (!first.includes('"ok"')) throw new Error(`${serverName}: unexpected tools/call result ${first}`)

const calls = { callTool: () => request("tools/call", TOOL_PARAMS), ping: () => request("ping") }
// A long-running server has its hot code compiled: without this the first cell (c1) mostly measures
// V8 compiling the server (about a third of its CPU there ran on V8's compiler threads).
for (const op of opsText.split(",")) {
  await drive(op === "ping" ? calls.ping : calls.callTool, warmUp * 5, 32)
}
for (const op of opsText.split(",")) {
  for (const [i, concurrency] of concurrencyText.split(",").map(Number).entries()) {
    const total = totals[Math.min(i, totals.length - 1)]!
    const call = op === "ping" ? calls.ping : calls.callTool
    await drive(call, Math.min(warmUp, total), concurrency)
    const cpu0 = await processCpuUs(connection.pid)
    const measured = await drive(call, total, concurrency)
    const serverCpuUs = (await processCpuUs(connection.pid) - cpu0) / total
    process.stdout.write(JSON.stringify({ op, concurrency, ...measured, serverCpuUs }) + "\n")
  }
}
await connection.close()
if (errors > 0) throw new Error(`${serverName}: ${errors} error responses`)
process.exit(0)
