/**
 * One cold start, in a fresh process: `node bench/cold-start-client.ts <client>`.
 * Loads the client's modules, opens it against the raw responder (spawn +
 * handshake), makes one `tools/call`, then closes it and waits until the
 * server process is gone. Prints one JSON line, times in ms:
 * { bootMs (process start → this script runs, by Node's clock), importMs,
 *   openMs (open → first result), firstResultAt (epoch ms, for the parent's
 *   spawn → first result), closeMs (close() resolved), teardownMs (close → server gone) }.
 */
import { loaderFor } from "./clients/index.ts"

const bootMs = performance.now()
const [clientName = "raw"] = process.argv.slice(2)
const load = loaderFor(clientName)

const t0 = performance.now()
const module = await load()
const t1 = performance.now()
const client = await module.make(process.execPath, [new URL("./raw-responder.ts", import.meta.url).pathname, "--pid"])
const result = await client.callTool()
const t2 = performance.now()
const firstResultAt = performance.timeOrigin + t2

const pid = Number(/pid:(\d+)/.exec(JSON.stringify(result))?.[1])
if (!Number.isInteger(pid)) throw new Error(`${clientName}: no pid in the tool result ${JSON.stringify(result)}`)
const alive = () => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
const t3 = performance.now()
await client.close()
const t4 = performance.now()
// Bounded poll: the exit is observed by the event loop, so yield to it between checks.
while (alive() && performance.now() - t3 < 10_000) await new Promise((resolve) => setTimeout(resolve, 1))
const t5 = performance.now()
if (alive()) throw new Error(`${clientName}: server process ${pid} still alive 10 s after close`)
process.stdout.write(
  JSON.stringify({ bootMs, importMs: t1 - t0, openMs: t2 - t1, firstResultAt, closeMs: t4 - t3, teardownMs: t5 - t3 }) +
    "\n"
)
process.exit(0)
