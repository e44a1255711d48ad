/**
 * Summarizes a heap snapshot by node type and name: count and self size,
 * biggest first. `npx node bench/profile/heap-summary.ts <file> [per=10000] [top=30]`
 * prints bytes per request when divided by `per`.
 */
import { readFileSync } from "node:fs"

const [file = "/tmp/in-flight.heapsnapshot", perText = "10000", topText = "30"] = process.argv.slice(2)
const snap = JSON.parse(readFileSync(file, "utf8"))
const fields: Array<string> = snap.snapshot.meta.node_fields
const types: Array<string> = snap.snapshot.meta.node_types[0]
const width = fields.length
const [iType, iName, iSize] = ["type", "name", "self_size"].map((f) => fields.indexOf(f))
const groups = new Map<string, { count: number; size: number }>()
const nodes: Array<number> = snap.nodes
for (let i = 0; i < nodes.length; i += width) {
  const type = types[nodes[i + iType]!]!
  const rawName: string = snap.strings[nodes[i + iName]!]
  const name = type === "string" || type === "concatenated string" || type === "sliced string" ? "" : rawName.slice(0, 60)
  const key = `${type} ${name}`
  const g = groups.get(key) ?? { count: 0, size: 0 }
  g.count++
  g.size += nodes[i + iSize]!
  groups.set(key, g)
}
const per = Number(perText)
for (const [key, g] of [...groups].sort((a, b) => b[1].size - a[1].size).slice(0, Number(topText))) {
  console.log(`${(g.size / per).toFixed(1).padStart(8)} B/req ${String(g.count).padStart(8)}  ${key}`)
}
