/**
 * Clients that come and go without DELETE: the official SDK client
 * connects (initialize, initialized, its GET stream), pings and closes, N
 * times in a row, against a bench server with the default limits
 * (maxSessions 1000). Counts the connects refused with 503, times the loop
 * and reads the server's VmRSS / VmHWM from /proc at the end.
 *
 *   npx node bench/profile/session-churn.ts [server=bench/http/server-ours.ts] [runs=1500]
 *
 * The server script may be another checkout's (it loads the modules next to it).
 */
import { resolve } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { memoryLine, startListening } from "./listening-server.ts"

const [script = "bench/http/server-ours.ts", runsArg = "1500"] = process.argv.slice(2)
const runs = Number(runsArg)
const { process: server, pid, url } = await startListening(resolve(script), ["--transport", "http"])
const memory = () => memoryLine(pid)

let refused = 0
let otherFailures = 0
let firstRefused: number | undefined
const started = performance.now()
for (let i = 0; i < runs; i++) {
  const client = new Client({ name: "churn", version: "1.0.0" })
  const transport = new StreamableHTTPClientTransport(new URL(url))
  try {
    await client.connect(transport)
    await client.ping()
  } catch (error) {
    if (/503|too many sessions/.test(String(error))) {
      refused++
      firstRefused ??= i + 1
    } else {
      otherFailures++
    }
  }
  // The SDK's ordinary close: no DELETE.
  await client.close()
}
const seconds = ((performance.now() - started) / 1000).toFixed(2)
console.log(
  `${script}: ${runs} connect/close runs in ${seconds} s; 503: ${refused}` +
    (firstRefused === undefined ? "" : ` (from run ${firstRefused})`) +
    `; other failures: ${otherFailures}; server ${memory()}`
)
server.kill("SIGTERM")
process.exit(0)
