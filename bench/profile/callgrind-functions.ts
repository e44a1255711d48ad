/**
 * Per request, what one function of a callgrind count costs: its calls and its own instructions,
 * for the functions whose name matches a pattern (V8's builtins, such as
 * `Builtins_KeyedLoadIC_Megamorphic`, are named; JIT-compiled JavaScript is not). Reads the file
 * `http-server-era-drive.ts` keeps with `SHOW_VALGRIND=1`.
 *
 *   npx node bench/profile/callgrind-functions.ts <callgrind.out> <requests> [pattern=^Builtins_]
 */
import { readFileSync } from "node:fs"

const [file, requestsText, pattern = "^Builtins_"] = process.argv.slice(2)
if (file === undefined || requestsText === undefined) {
  throw new Error("usage: callgrind-functions.ts <callgrind.out> <requests> [pattern]")
}
const requests = Number(requestsText)
const matches = new RegExp(pattern)

// callgrind names a function once, `fn=(id) name`, and by `(id)` after that.
const names = new Map<string, string>()
const nameOf = (spec: string): string => {
  const m = /^\((\d+)\)(?: (.*))?$/.exec(spec)
  if (m === null) return spec
  if (m[2] !== undefined) names.set(m[1]!, m[2])
  return names.get(m[1]!) ?? spec
}

const self = new Map<string, number>()
const calls = new Map<string, number>()
let current = ""
let callee: string | undefined
let afterCalls = false
for (const line of readFileSync(file, "utf8").split("\n")) {
  if (line.startsWith("fn=")) {
    current = nameOf(line.slice(3))
    afterCalls = false
  } else if (line.startsWith("cfn=")) {
    callee = nameOf(line.slice(4))
  } else if (line.startsWith("calls=")) {
    if (callee !== undefined) calls.set(callee, (calls.get(callee) ?? 0) + Number(line.slice(6).split(" ")[0]))
    // The cost line after `calls=` is the call's inclusive cost, not the caller's own.
    afterCalls = true
  } else if (/^[+\-*\d]/.test(line)) {
    if (afterCalls) {
      afterCalls = false
      continue
    }
    const cost = Number(line.trim().split(/\s+/)[1] ?? 0)
    if (Number.isFinite(cost)) self.set(current, (self.get(current) ?? 0) + cost)
  }
}

const rows = [...new Set([...self.keys(), ...calls.keys()])]
  .filter((name) => matches.test(name))
  .map((name) => ({ name, calls: (calls.get(name) ?? 0) / requests, instructions: (self.get(name) ?? 0) / requests }))
  .sort((a, b) => b.instructions - a.instructions)
console.log("| function | calls per request | own instructions per request |")
console.log("|---|---:|---:|")
for (const row of rows.slice(0, 40)) {
  console.log(`| \`${row.name.replace(/ \[.*$/, "").slice(0, 80)}\` | ${row.calls.toFixed(1)} | ${Math.round(row.instructions).toLocaleString("en-US")} |`)
}
