/**
 * A stdio server's resident memory under steady load: spawns each server,
 * does the handshake, then keeps `concurrency` `tools/call echo`s in flight
 * for `calls` calls and reads VmRSS from /proc after every tenth of them.
 * The last readings are the plateau: what the server holds while it works,
 * pages its heap grew into included (a heap snapshot says what is live; this
 * says what the process costs the machine).
 *
 *   npx node bench/profile/stdio-server-rss.ts 100000 32 bench/servers/ours-mcp.ts bench/servers/sdk2.ts
 *
 * Memory is not spoiled by a loaded machine the way req/s is; the order of
 * the servers does not matter (each runs alone).
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { connect, INITIALIZE_PARAMS, TOOL_PARAMS } from "../clients/raw-core.ts"

const [callsText = "100000", concurrencyText = "32", ...files] = process.argv.slice(2)
const calls = Number(callsText)
const concurrency = Number(concurrencyText)

const rssMiB = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024
}

for (const file of files) {
  const connection = connect(process.execPath, [resolve(file)])
  const request = (method: string, params?: unknown) => new Promise((done) => connection.send(method, params, done))
  await request("initialize", INITIALIZE_PARAMS)
  connection.notify("notifications/initialized")
  const readings: Array<number> = [rssMiB(connection.pid)]
  const step = Math.ceil(calls / 10)
  let started = 0
  let done = 0
  await new Promise<void>((finished) => {
    const next = (): void => {
      if (started >= calls) return
      started++
      void request("tools/call", TOOL_PARAMS).then(() => {
        done++
        if (done % step === 0) readings.push(rssMiB(connection.pid))
        if (done === calls) finished()
        else next()
      })
    }
    for (let i = 0; i < concurrency; i++) next()
  })
  const plateau = readings.slice(-3)
  console.log(
    `${file}: RSS MiB after handshake ${readings[0]!.toFixed(1)}, per tenth ${readings.slice(1).map((r) => r.toFixed(0)).join(" ")}; plateau (last 3) ${
      (plateau.reduce((a, b) => a + b, 0) / plateau.length).toFixed(1)
    }`
  )
  await connection.close()
}
process.exit(0)
