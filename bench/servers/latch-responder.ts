/**
 * The raw server of the in-flight workload (plain Node, NDJSON): answers the
 * handshake, `tools/list` and `ping` at once and holds every `tools/call`
 * until `--hold N` of them have arrived. Then:
 * - with `--signal <unix socket path>`: writes `arrived` to that socket and
 *   answers all held calls when `release` comes back, so the client can
 *   sample its own memory at the peak (everything sent, nothing answered);
 * - without: samples its own memory (as `held` does in `tools.ts`) and
 *   answers all held calls with it.
 * `tools/call` of `mem` is answered at once with a memory sample.
 */
import { connect } from "node:net"
import { ECHO_RESULT, holdCount, memoryResult, sampleMemory } from "./tools.ts"

const INIT_RESULT = {
  protocolVersion: "2025-11-25",
  capabilities: { tools: {} },
  serverInfo: { name: "latch-responder", version: "1.0.0" }
}
const hold = holdCount()
const signalAt = process.argv.indexOf("--signal")
const signalPath = signalAt === -1 ? undefined : process.argv[signalAt + 1]

const reply = (id: unknown, result: unknown) => JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n"
let held: Array<unknown> = []

const releaseAll = (result: unknown) => {
  const ids = held
  held = []
  // Large writes in pieces: one string of 10 000 replies is fine, but keep each write moderate.
  for (let i = 0; i < ids.length; i += 1000) process.stdout.write(ids.slice(i, i + 1000).map((id) => reply(id, result)).join(""))
}

const onAllArrived = () => {
  if (signalPath === undefined) {
    releaseAll(memoryResult(sampleMemory()))
    return
  }
  const socket = connect(signalPath, () => socket.write("arrived\n"))
  socket.setEncoding("utf8")
  socket.on("data", (text: string) => {
    if (text.includes("release")) {
      releaseAll(ECHO_RESULT)
      socket.end()
    }
  })
}

let pending = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk: string) => {
  pending += chunk
  let out = ""
  let start = 0
  let nl: number
  while ((nl = pending.indexOf("\n", start)) !== -1) {
    const line = pending.slice(start, nl)
    start = nl + 1
    if (line.length === 0) continue
    const msg = JSON.parse(line) as { id?: unknown; method?: string; params?: { name?: string } }
    if (msg.id === undefined || msg.method === undefined) continue
    if (msg.method === "tools/call") {
      if (msg.params?.name === "mem") {
        out += reply(msg.id, memoryResult(sampleMemory()))
        continue
      }
      held.push(msg.id)
      if (held.length === hold) onAllArrived()
      continue
    }
    out += reply(
      msg.id,
      msg.method === "initialize"
        ? INIT_RESULT
        : msg.method === "tools/list"
        ? { tools: [{ name: "echo", inputSchema: { type: "object" } }] }
        : {}
    )
  }
  pending = pending.slice(start)
  if (out.length > 0) process.stdout.write(out)
})
process.stdin.on("end", () => process.exit(0))
