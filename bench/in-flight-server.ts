/**
 * Server side of the in-flight workload, in a fresh process:
 * `node bench/in-flight-server.ts <server> <N>`. The raw requester starts
 * the server with `--expose-gc --hold N`, asks for its baseline memory
 * (`mem`), then sends N `held` calls at once. The server samples its memory
 * (after a full GC) when the Nth has arrived, while all N are being handled,
 * and answers every call with that sample. Prints one JSON line { heapKiB,
 * rssKiB (per request), totalMs (first call → all answered), fulfilled, rejected }.
 */
import { connect, INITIALIZE_PARAMS } from "./clients/raw-core.ts"
import { holdingServers, serverFile } from "./servers/index.ts"
import type { MemorySample } from "./servers/tools.ts"

const [serverName = "raw", countText = "10000"] = process.argv.slice(2)
const count = Number(countText)

const connection = connect(process.execPath, [
  "--expose-gc",
  serverFile(holdingServers, serverName),
  "--hold",
  String(count)
])
const request = (method: string, params?: unknown) =>
  new Promise<unknown>((resolve) => connection.send(method, params, resolve))
const sampleOf = (result: unknown): MemorySample | undefined => {
  const text = (result as { content?: Array<{ text?: string }> } | undefined)?.content?.[0]?.text
  return text === undefined ? undefined : JSON.parse(text) as MemorySample
}

await request("initialize", INITIALIZE_PARAMS)
connection.notify("notifications/initialized")
const base = sampleOf(await request("tools/call", { name: "mem", arguments: {} }))
if (base === undefined) throw new Error(`${serverName}: no memory sample from mem`)

let fulfilled = 0
let rejected = 0
let peak: MemorySample | undefined
const t0 = performance.now()
const calls: Array<Promise<void>> = new Array(count)
for (let i = 0; i < count; i++) {
  calls[i] = request("tools/call", { name: "held", arguments: {} }).then((result) => {
    const sample = sampleOf(result)
    if (sample === undefined) rejected++
    else {
      fulfilled++
      peak ??= sample
    }
  })
}
await Promise.all(calls)
const totalMs = performance.now() - t0
await connection.close()
process.stdout.write(
  JSON.stringify({
    heapKiB: peak === undefined ? Number.NaN : (peak.heapUsed - base.heapUsed) / count / 1024,
    rssKiB: peak === undefined ? Number.NaN : (peak.rss - base.rss) / count / 1024,
    totalMs,
    fulfilled,
    rejected
  }) + "\n"
)
process.exit(0)
