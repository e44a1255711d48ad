/**
 * Client side of the in-flight workload, in a fresh process started with
 * `--expose-gc`: `node --expose-gc bench/in-flight-client.ts <client> <N> [promises|fibers]`.
 * Starts N `tools/call`s at once against the latch responder, which holds
 * them until all N have arrived and then signals over a Unix socket. At that
 * peak (everything sent, nothing answered) this process samples its memory
 * after a full GC, then releases the replies and waits for every call to
 * settle. Prints one JSON line { heapKiB, rssKiB (per request), settleMs
 * (release → all settled), totalMs (first call → all settled), fulfilled, rejected }.
 * With SNAPSHOT_PATH set it also writes a heap snapshot there at the peak, for
 * bench/profile/heap-summary.ts (where the bytes per request go).
 *
 * How the calls are held: `promises` (default), one `callTool()` promise per
 * call, as a Promise application holds them (for an Effect client that is a
 * `runPromise`: a fiber and a promise per call); `fibers`, one Effect program
 * forking a fiber per call (`holdAsFibers`), as an Effect application holds
 * them. Clients without `holdAsFibers` hold promises either way.
 */
import { createServer, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { loaderFor } from "./clients/index.ts"
import { sampleMemory } from "./servers/tools.ts"

const [clientName = "raw", countText = "10000", hold = "promises"] = process.argv.slice(2)
const count = Number(countText)
const socketPath = join(tmpdir(), `bench-in-flight-${process.pid}.sock`)

let arrived: (socket: Socket) => void = () => {}
const allArrived = new Promise<Socket>((resolve) => arrived = resolve)
const signals = createServer((socket) => {
  socket.setEncoding("utf8")
  socket.on("data", (text: string) => {
    if (text.includes("arrived")) arrived(socket)
  })
})
await new Promise<void>((resolve) => signals.listen(socketPath, resolve))

const latch = new URL("./servers/latch-responder.ts", import.meta.url).pathname
const client = await (await loaderFor(clientName)()).make(process.execPath, [
  latch,
  "--hold",
  String(count),
  "--signal",
  socketPath
])

const base = sampleMemory()
let fulfilled = 0
let rejected = 0
const t0 = performance.now()
let settled: Promise<void>
if (hold === "fibers" && client.holdAsFibers !== undefined) {
  settled = client.holdAsFibers(count).then((outcome) => {
    fulfilled = outcome.fulfilled
    rejected = outcome.rejected
  })
} else {
  const calls: Array<Promise<void>> = new Array(count)
  for (let i = 0; i < count; i++) {
    calls[i] = client.callTool().then(() => void fulfilled++, () => void rejected++)
  }
  settled = Promise.all(calls).then(() => undefined)
}
// If calls fail before all have arrived (a timeout, a closed transport), there is no peak to sample.
const socket = await Promise.race([allArrived, settled.then(() => undefined)])
if (socket === undefined) throw new Error(`${clientName}: calls settled before all ${count} arrived (${rejected} failed)`)
const peak = sampleMemory()
if (process.env.SNAPSHOT_PATH) {
  const { writeHeapSnapshot } = await import("node:v8")
  process.stderr.write(`snapshot: ${writeHeapSnapshot(process.env.SNAPSHOT_PATH)}\n`)
}
const tRelease = performance.now()
socket.write("release\n")
await settled
const tDone = performance.now()
await client.close()
signals.close()
process.stdout.write(
  JSON.stringify({
    heapKiB: (peak.heapUsed - base.heapUsed) / count / 1024,
    rssKiB: (peak.rss - base.rss) / count / 1024,
    settleMs: tDone - tRelease,
    totalMs: tDone - t0,
    fulfilled,
    rejected
  }) + "\n"
)
process.exit(0)
