/**
 * Drives one era of this project's stateless-workload server
 * (bench/stateless-server/server-ours.ts) with `tools/call` over loopback, for
 * a CPU profile of the server alone: the server runs under `--cpu-prof` and
 * writes its profile when it is stopped at the end.
 *
 *   npx node bench/profile/http-server-era-drive.ts [stateless|session|bare|toolkit|effect-min|effect-checked|node-http] [requests=30000] [concurrency=32] [profileDir=/tmp/era-prof]
 *
 * With `gc` in place of the profile directory the server runs under
 * `--trace-gc-nvp` instead, and the driver adds what the measured requests
 * cost the young generation: scavenges, and the bytes that survived them and
 * were promoted to the old generation (per scavenge and per request).
 *
 * With `instr` in place of the profile directory the server runs under
 * valgrind's callgrind, counting instructions only while the measured
 * requests run (after the warm-up, `callgrind_control -i on`): instructions
 * per request do not move with what else the machine runs, where CPU time
 * does by 10–20 % on a shared machine. Repeated runs of one build still
 * spread by about 0.4 % (the compiler and the collector work on the measured
 * thread under `--single-threaded`): take medians for smaller changes.
 * Everything runs about 50 times slower; a few thousand requests are enough.
 *
 * `SERVER_FLAGS` replaces the server's Node flags (the profile directory's then names
 * nothing), e.g. `SERVER_FLAGS="--import=./bench/profile/alloc-prof.ts"` for where
 * the server allocates (see alloc-prof.ts), or `--trace-gc-nvp
 * --min-semi-space-size=16 --max-semi-space-size=16` with `gc` for scavenges
 * that count bytes allocated (a young generation of one size throughout).
 *
 * `SERVER_ROOT=/other/checkout` profiles another checkout's server; era
 * `effect-min` profiles bench/http/server-effect-min.ts (one effect/http
 * route doing the same JSON work, no MCP) for comparison, `effect-checked`
 * bench/http/server-effect-checked.ts (that route doing the protocol's checks
 * too), `node-http` bench/stateless-server/server-minimal.ts (bare
 * `node:http`), and era `bare` the transport with a bare handler
 * (bench/stateless-server/server-bare.ts) taking stateless requests, era
 * `toolkit` `McpServer` serving `echo` from an `effect/ai` `Toolkit`
 * (bench/stateless-server/server-toolkit.ts). Every
 * era but `session` gets the same request, byte for byte: the stateless
 * era's headers and `_meta`. `REQUEST_SHAPE=session` sends any server a
 * session's requests instead (an `initialize` first, then no `_meta`), to
 * tell what the stateless era's bigger messages cost a bare server.
 */
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { createInterface } from "node:readline"
import { count, totalIn, valgrindArgs } from "./callgrind.ts"
import { mcpPoster, openSession } from "./mcp-post.ts"

const [era = "stateless", totalText = "30000", concText = "32", dir = "/tmp/era-prof"] = process.argv.slice(2)
const total = Number(totalText), concurrency = Number(concText)
const root = process.env.SERVER_ROOT ?? resolve(new URL(".", import.meta.url).pathname, "../..")
const traceGc = dir === "gc"
const instr = dir === "instr"
const flags = process.env.SERVER_FLAGS !== undefined
  ? process.env.SERVER_FLAGS.split(" ")
  : dir === "none" || instr
  ? []
  : traceGc
  ? ["--trace-gc-nvp"]
  : ["--cpu-prof", `--cpu-prof-dir=${dir}`]
const young = { measuring: false, scavenges: 0, promoted: 0, survived: 0 }
const scripts: Record<string, ReadonlyArray<string>> = {
  "effect-min": ["bench/http/server-effect-min.ts", "--mode", "json"],
  "effect-checked": ["bench/http/server-effect-checked.ts"],
  "node-http": ["bench/stateless-server/server-minimal.ts"],
  bare: ["bench/stateless-server/server-bare.ts"],
  toolkit: ["bench/stateless-server/server-toolkit.ts"]
}
const [scriptPath, ...scriptArgs] = scripts[era] ?? ["bench/stateless-server/server-ours.ts"]
const script = [resolve(root, scriptPath), ...scriptArgs]
const callgrindOut = `/tmp/era-drive-callgrind.${process.pid}.out`
const child = instr
  ? spawn("valgrind", valgrindArgs(callgrindOut, [...flags, ...script]), { stdio: ["ignore", "pipe", "pipe"] })
  : spawn(process.execPath, [...flags, ...script], { stdio: ["ignore", "pipe", "inherit"] })
// A driver that fails (a refused request) does not leave its server running.
process.once("exit", () => child.kill("SIGKILL"))
// valgrind's own lines on stderr are read only when asked for.
const showValgrind = process.env.SHOW_VALGRIND === "1"
if (instr && showValgrind) child.stderr!.pipe(process.stderr)
else child.stderr?.resume()
const url = await new Promise<string>((ok) =>
  createInterface({ input: child.stdout! }).on("line", (line) => {
    // A GC trace line may share the line the URL is printed on.
    const at = line.indexOf("listening ")
    if (at >= 0) ok(line.slice(at + "listening ".length).trim())
    const scavenge = traceGc && young.measuring ? / gc=s .*? promoted=(\d+) new_space_survived=(\d+)/.exec(line) : null
    if (scavenge !== null) {
      young.scavenges++
      young.promoted += Number(scavenge[1])
      young.survived += Number(scavenge[2])
    }
  })
)
const STATELESS = "2026-07-28"
const meta = {
  "io.modelcontextprotocol/protocolVersion": STATELESS,
  "io.modelcontextprotocol/clientInfo": { name: "era-drive", version: "1.0.0" },
  "io.modelcontextprotocol/clientCapabilities": {}
}
const { close, post } = mcpPoster(url, concurrency)
let headers: Record<string, string>
// The requests' shape: a session's (no `_meta`, a session header) or the stateless era's, whatever the server.
const sessionShaped = (process.env.REQUEST_SHAPE ?? (era === "session" ? "session" : "stateless")) === "session"
if (sessionShaped) {
  headers = await openSession(post, "era-drive")
} else {
  headers = { "mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "echo" }
}
let nextId = 0
const call = async () => {
  const id = ++nextId
  const params = sessionShaped
    ? { name: "echo", arguments: { text: "hi" } }
    : { name: "echo", arguments: { text: "hi" }, _meta: meta }
  const res = await post({ jsonrpc: "2.0", id, method: "tools/call", params }, headers)
  if (res.status !== 200 || !res.text.includes("\"result\"")) throw new Error(`${res.status} ${res.text}`)
}
const drive = async (n: number) => {
  let left = n
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (left-- > 0) await call()
  }))
}
const TICK_US = 10_000
const cpuOf = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  return (Number(fields[11]) + Number(fields[12])) * TICK_US
}
await drive(Math.min(total, 5000))
if (instr) await count(child.pid!, true, showValgrind)
const c0 = cpuOf(child.pid!)
young.measuring = true
await drive(total)
young.measuring = false
if (instr) await count(child.pid!, false, showValgrind)
const gc = traceGc
  ? {
    scavenges: young.scavenges,
    survivedKiBPerScavenge: Math.round(young.survived / young.scavenges / 1024),
    promotedKiBPerScavenge: Math.round(young.promoted / young.scavenges / 1024),
    promotedBytesPerReq: Math.round(young.promoted / total)
  }
  : {}
const cpuUs = +((cpuOf(child.pid!) - c0) / total).toFixed(1)
await close()
child.kill("SIGINT")
await new Promise((ok) => child.once("exit", ok))
let counted = {}
if (instr) {
  // callgrind writes its count when the server exits.
  const instructions = totalIn(callgrindOut, showValgrind)
  counted = { instructionsPerReq: instructions === undefined ? undefined : Math.round(instructions / total) }
}
console.log(JSON.stringify({ era, total, concurrency, serverCpuUsPerReq: cpuUs, ...gc, ...counted }))
