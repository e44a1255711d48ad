/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): self time by
 * function and by file group, as % of the non-idle samples.
 *
 *   npx node bench/http/profile-top.ts <file.cpuprofile> [top=30]
 */
import { readFileSync } from "node:fs"

interface Node {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<Node>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
  readonly startTime: number
  readonly endTime: number
}

const [file, topText = "30"] = process.argv.slice(2)
const profile = JSON.parse(readFileSync(file!, "utf8")) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const self = new Map<number, number>()
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))

const group = (url: string): string => {
  if (url === "") return "(native/V8)"
  const m = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\/(?:src|dist\/esm|dist\/cjs|dist|lib)?\/?(.*)$/)
  if (m !== null) return `${m[1]}/${m[2]!.split("/").slice(0, m[1]!.startsWith("effect") ? 2 : 1).join("/")}`
  if (url.startsWith("node:")) return url
  const local = url.match(/\/work\/main\/(.*)$/)
  return local !== null ? local[1]! : url
}

/** Coarse layers, to say where time goes at a glance. */
const category = (functionName: string, url: string): string => {
  if (functionName === "(garbage collector)") return "GC"
  if (functionName === "(program)" || url === "") return "V8 / native (JSON, writev, …)"
  if (url.startsWith("node:internal/modules") || url.includes("/modules/esm") || functionName === "compileSourceTextModule") return "module loading"
  if (url.includes("/src/") && url.includes("/work/main/") && !url.includes("node_modules")) return "this project (src/)"
  if (url.includes("/work/main/bench/")) return "benchmark driver"
  if (url.includes("node_modules/effect/") && url.includes("/http/")) return "effect/http"
  if (url.includes("node_modules/effect/")) return "Effect runtime and data types"
  if (url.includes("@effect/platform-node")) return "@effect/platform-node"
  if (url.includes("undici") || url.startsWith("wasm://")) return "undici"
  if (url.includes("@modelcontextprotocol/sdk") || url.includes("node_modules/zod")) return "official SDK + zod"
  if (url.startsWith("node:")) return "Node core (http, net, streams, events, crypto)"
  return "other"
}
const categories = new Map<string, number>()

const fnTotals = new Map<string, number>()
const groupTotals = new Map<string, number>()
let total = 0
let idle = 0
for (const [id, us] of self) {
  const { callFrame: f } = byId.get(id)!
  if (f.functionName === "(idle)") {
    idle += us
    continue
  }
  total += us
  const name = `${f.functionName || "(anonymous)"} ${group(f.url)}:${f.lineNumber + 1}`
  fnTotals.set(name, (fnTotals.get(name) ?? 0) + us)
  const g = f.functionName === "(garbage collector)" ? "(GC)" : f.functionName === "(program)" ? "(program)" : group(f.url)
  groupTotals.set(g, (groupTotals.get(g) ?? 0) + us)
  const c = category(f.functionName, f.url)
  categories.set(c, (categories.get(c) ?? 0) + us)
}
// Inclusive time: every function on a sample's stack gets the sample once.
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
const label = (n: Node) => `${n.callFrame.functionName || "(anonymous)"} ${group(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`
const inclusive = new Map<string, number>()
for (const [id, us] of self) {
  if (byId.get(id)!.callFrame.functionName === "(idle)") continue
  const seen = new Set<string>()
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const name = label(byId.get(at)!)
    if (seen.has(name)) continue
    seen.add(name)
    inclusive.set(name, (inclusive.get(name) ?? 0) + us)
  }
}

const pct = (us: number) => `${((us / total) * 100).toFixed(1).padStart(5)}%`
console.log(`profile: ${((profile.endTime - profile.startTime) / 1e6).toFixed(2)} s, non-idle ${(total / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s`)
console.log("\nself time by layer:")
for (const [c, us] of [...categories].sort((a, b) => b[1] - a[1])) console.log(`${pct(us)}  ${c}`)
console.log("\nself time by file:")
for (const [g, us] of [...groupTotals].sort((a, b) => b[1] - a[1]).slice(0, Number(topText))) console.log(`${pct(us)}  ${g}`)
console.log("\nself time by function:")
for (const [name, us] of [...fnTotals].sort((a, b) => b[1] - a[1]).slice(0, Number(topText))) console.log(`${pct(us)}  ${name}`)

const filter = process.argv[4]
console.log(`\ninclusive time by function${filter === undefined ? "" : ` (matching ${filter})`}:`)
for (const [name, us] of [...inclusive].filter(([n]) => filter === undefined || n.includes(filter)).sort((a, b) => b[1] - a[1]).slice(0, Number(topText))) console.log(`${pct(us)}  ${name}`)
