/**
 * What a live task keeps on a tasks-workload server: starts
 * `bench/tasks/server-<impl>.ts` (ours or sdk2) with `--heapsnapshot-signal`,
 * takes a heap snapshot after a warm-up and another once `n` tasks of
 * `held` wait, and prints the difference by node type and name, per task,
 * biggest first.
 *   npx node bench/profile/live-tasks.ts [impl=ours] [n=2000] [top=30]
 * The snapshots are left in a temporary directory (printed).
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { setTimeout as sleep } from "node:timers/promises"

const [impl = "ours", nText = "2000", topText = "30"] = process.argv.slice(2)
const n = Number(nText)
const dir = mkdtempSync(join(tmpdir(), "live-tasks-"))
const server = new URL(`../tasks/server-${impl}.ts`, import.meta.url).pathname
const child = spawn(process.execPath, ["--heapsnapshot-signal=SIGUSR2", server], { cwd: dir, stdio: ["ignore", "pipe", "inherit"] })
const url = await new Promise<string>((resolve) =>
  createInterface({ input: child.stdout! }).on("line", (l) => l.startsWith("listening ") && resolve(l.slice(10).trim()))
)

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } },
  "io.modelcontextprotocol/clientInfo": { name: "live-tasks", version: "1.0.0" }
}
let id = 0
const call = async (name: string, args: object) => {
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": name
  }
  const body = JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name, arguments: args, _meta: META } })
  const text = await (await fetch(url, { method: "POST", headers, body })).text()
  if (!text.includes('"resultType":"task"')) throw new Error(`not a task: ${text.slice(0, 200)}`)
}

/** Signals a snapshot and waits until its file stops growing. */
const snapshot = async (): Promise<string> => {
  const before = new Set(readdirSync(dir))
  child.kill("SIGUSR2")
  for (let last = -1;;) {
    await sleep(500)
    const file = readdirSync(dir).find((f) => f.endsWith(".heapsnapshot") && !before.has(f))
    if (file === undefined) continue
    const size = statSync(join(dir, file)).size
    if (size > 0 && size === last) return join(dir, file)
    last = size
  }
}

const summary = (file: string) => {
  const snap = JSON.parse(readFileSync(file, "utf8"))
  const fields: Array<string> = snap.snapshot.meta.node_fields
  const types: Array<string> = snap.snapshot.meta.node_types[0]
  const [iType, iName, iSize] = ["type", "name", "self_size"].map((f) => fields.indexOf(f))
  const groups = new Map<string, { count: number; size: number }>()
  for (let i = 0; i < snap.nodes.length; i += fields.length) {
    const type = types[snap.nodes[i + iType!]]!
    const name = type.includes("string") ? "" : String(snap.strings[snap.nodes[i + iName!]]).slice(0, 60)
    const g = groups.get(`${type} ${name}`) ?? { count: 0, size: 0 }
    g.count++
    g.size += snap.nodes[i + iSize!]
    groups.set(`${type} ${name}`, g)
  }
  return groups
}

try {
  for (let i = 0; i < 20; i++) await call("work", { ms: 0 })
  const idle = summary(await snapshot())
  for (let i = 0; i < n; i += 20) await Promise.all(Array.from({ length: Math.min(20, n - i) }, () => call("held", {})))
  const live = summary(await snapshot())
  const rows = [...live].map(([key, g]) => {
    const before = idle.get(key) ?? { count: 0, size: 0 }
    return { key, size: (g.size - before.size) / n, count: (g.count - before.count) / n }
  }).sort((a, b) => b.size - a.size)
  const total = rows.reduce((sum, r) => sum + r.size, 0)
  console.log(`${impl}: ${n} live tasks, ${Math.round(total)} B of heap per task (snapshots in ${dir})`)
  for (const r of rows.slice(0, Number(topText))) console.log(`${Math.round(r.size).toString().padStart(8)} B ${r.count.toFixed(2).padStart(7)}  ${r.key}`)
} finally {
  child.kill("SIGTERM")
}
