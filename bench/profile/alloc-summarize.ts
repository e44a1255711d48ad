/**
 * Summarizes a sampling heap profile (alloc-prof.ts): bytes allocated per
 * function and per file, divided by `per` (the requests it covered) for
 * bytes per request.
 *
 *   npx node bench/profile/alloc-summarize.ts <file.heapprofile> [per=1] [top=40]
 */
import { readFileSync } from "node:fs"

interface Node {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly selfSize: number
  readonly children: ReadonlyArray<Node>
}

const [file, perText = "1", topText = "40"] = process.argv.slice(2)
if (file === undefined) throw new Error("usage: alloc-summarize.ts <file.heapprofile> [per] [top]")
const head = (JSON.parse(readFileSync(file, "utf8")) as { head: Node }).head
const short = (url: string) => url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*?\/(src|bench)\//, "$1/")
const byFunction = new Map<string, number>()
const byFile = new Map<string, number>()
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v)
const walk = (n: Node) => {
  const f = n.callFrame
  add(byFunction, `${f.functionName || "(anon)"} ${short(f.url)}:${f.lineNumber + 1}`, n.selfSize)
  add(byFile, short(f.url) || f.functionName, n.selfSize)
  for (const c of n.children) walk(c)
}
walk(head)
const per = Number(perText)
const print = (m: Map<string, number>, top: number) => {
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${(v / per).toFixed(0).padStart(7)} B  ${k}`)
  }
}
console.log(`total ${([...byFunction.values()].reduce((a, b) => a + b, 0) / per).toFixed(0)} B`)
console.log("-- by function")
print(byFunction, Number(topText))
console.log("-- by file")
print(byFile, 25)
