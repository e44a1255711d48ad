/**
 * Summarises a `.cpuprofile` (from `node --cpu-prof`): self time per function
 * and per file, and inclusive time of functions whose name matches a filter.
 *
 *   npx node bench/profile/summarize.ts <file.cpuprofile> [top=40] [inclusive-filter-regex]
 */
import { readFileSync } from "node:fs"

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: Array<number>
}
interface Profile {
  nodes: Array<Node>
  samples: Array<number>
  timeDeltas: Array<number>
  startTime: number
  endTime: number
}

const [file, topText = "40", filter] = process.argv.slice(2)
if (file === undefined) throw new Error("usage: summarize.ts <file.cpuprofile> [top] [filter]")
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

const selfUs = new Map<number, number>()
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))

const short = (url: string) => url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*\/main\//, "")
const label = (n: Node) => `${n.callFrame.functionName || "(anon)"} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`

const total = profile.endTime - profile.startTime
const idle = [...selfUs].filter(([id]) => byId.get(id)!.callFrame.functionName === "(idle)").reduce((a, [, t]) => a + t, 0)
console.log(`total ${(total / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms, busy ${((total - idle) / 1000).toFixed(0)} ms`)

const aggregate = (key: (n: Node) => string) => {
  const m = new Map<string, number>()
  for (const [id, t] of selfUs) {
    const k = key(byId.get(id)!)
    m.set(k, (m.get(k) ?? 0) + t)
  }
  return [...m].sort((a, b) => b[1] - a[1])
}
const top = Number(topText)
console.log("\n-- self time by function")
for (const [k, t] of aggregate(label).slice(0, top)) console.log(`${(t / 1000).toFixed(1).padStart(8)} ms  ${k}`)
console.log("\n-- self time by file")
for (const [k, t] of aggregate((n) => short(n.callFrame.url) || n.callFrame.functionName).slice(0, 25)) {
  console.log(`${(t / 1000).toFixed(1).padStart(8)} ms  ${k}`)
}

if (filter !== undefined) {
  // Inclusive time: each sample counted once for every distinct matching frame on its stack.
  const re = new RegExp(filter)
  const incl = new Map<string, number>()
  profile.samples.forEach((id, i) => {
    const seen = new Set<string>()
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!
      const l = label(n)
      if (re.test(l) && !seen.has(l)) {
        seen.add(l)
        incl.set(l, (incl.get(l) ?? 0) + (profile.timeDeltas[i] ?? 0))
      }
    }
  })
  console.log(`\n-- inclusive time, frames matching /${filter}/`)
  for (const [k, t] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${(t / 1000).toFixed(1).padStart(8)} ms  ${k}`)
  }
}
