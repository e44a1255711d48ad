/**
 * Where a stdio server's CPU per request goes by thread, cell after cell:
 * the main thread (the JavaScript that serves) and V8's helper threads
 * (`node`: compilation and GC in the background), from /proc/<pid>/task.
 * The first cells after start-up pay for V8 compiling the server's code,
 * the later ones show the steady state:
 *
 *   npx node bench/profile/stdio-server-threads.ts <server> <op,op,…> [total=3000] [warm-up=2000]
 *
 * e.g. `… ours callTool,callTool,ping 5000 3000` (one at a time, c1; BENCH_BUILD=dist loads dist/).
 * Prints one line per cell: op, req/s, and µs per request by thread.
 */
import { readFileSync, readdirSync } from "node:fs"
import { connect, INITIALIZE_PARAMS, TOOL_PARAMS } from "../clients/raw-core.ts"
import { serverFile, servers } from "../servers/index.ts"
import { drive } from "../stats.ts"

const [serverName = "ours", opsText = "callTool,ping", total = "3000", warm = "2000"] = process.argv.slice(2)
const connection = connect(process.execPath, [serverFile(servers, serverName)])
const request = (method: string, params?: unknown) => new Promise<unknown>((done) => connection.send(method, params, done))
/** CPU µs so far by thread: the main thread by itself, the others summed by name. */
const threads = () => {
  const out: Record<string, number> = {}
  for (const t of readdirSync(`/proc/${connection.pid}/task`)) {
    const s = readFileSync(`/proc/${connection.pid}/task/${t}/stat`, "utf8")
    const name = s.slice(s.indexOf("(") + 1, s.lastIndexOf(")"))
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ")
    const key = t === String(connection.pid) ? "main" : name
    // utime + stime, in clock ticks of 10 ms.
    out[key] = (out[key] ?? 0) + (Number(f[11]) + Number(f[12])) * 10_000
  }
  return out
}
await request("initialize", INITIALIZE_PARAMS)
connection.notify("notifications/initialized")
await request("tools/call", TOOL_PARAMS)
for (const op of opsText.split(",")) {
  const call = op === "ping" ? () => request("ping") : () => request("tools/call", TOOL_PARAMS)
  await drive(call, Number(warm), 1)
  const a = threads()
  const m = await drive(call, Number(total), 1)
  const b = threads()
  const per: Record<string, string> = {}
  for (const k of Object.keys(b)) per[k] = ((b[k]! - (a[k] ?? 0)) / Number(total)).toFixed(1)
  console.log(op, Math.round(m.rps), JSON.stringify(per))
}
await connection.close()
process.exit(0)
