/**
 * A stdio benchmark server's resident memory once it has warmed up: spawns
 * it, does the handshake and 2,000 `tools/call`s, then reads VmRSS and
 * VmHWM from /proc. What a server costs before any large message:
 *
 *   BENCH_BUILD=dist npx node bench/profile/idle-rss.ts bench/servers/ours-mcp.ts bench/servers/sdk.ts
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { connect, INITIALIZE_PARAMS, TOOL_PARAMS } from "../clients/raw-core.ts"

for (const file of process.argv.slice(2)) {
  const connection = connect(process.execPath, [resolve(file)])
  const request = (method: string, params?: unknown) => new Promise((done) => connection.send(method, params, done))
  await request("initialize", INITIALIZE_PARAMS)
  connection.notify("notifications/initialized")
  for (let i = 0; i < 2000; i++) await request("tools/call", TOOL_PARAMS)
  const status = readFileSync(`/proc/${connection.pid}/status`, "utf8")
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1])
  console.log(`${file}: RSS ${(kib("VmRSS") / 1024).toFixed(1)} MiB, peak ${(kib("VmHWM") / 1024).toFixed(1)} MiB`)
  await connection.close()
}
process.exit(0)
