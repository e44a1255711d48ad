/**
 * Before/after CPU per call of the cells of bench/profile/progress-client.ts,
 * runs interleaved (before, after, before, …) so that machine load falls on both:
 *
 *   npx node bench/profile/progress-ab.ts <runs> <before-src> <client:op:progress:concurrency:total> [cell...]
 *
 * `before-src` is a copy of another commit's `src/` (with `node_modules` and
 * `package.json` beside it); "after" is this tree. Prints the median (min–max)
 * of each side and after/before.
 */
import { execFileSync } from "node:child_process"

const [runsText = "5", beforeSrc, ...cells] = process.argv.slice(2)
if (beforeSrc === undefined || cells.length === 0) throw new Error("usage: progress-ab.ts <runs> <before-src> <cell>...")
const runs = Number(runsText)
const driver = new URL("./progress-client.ts", import.meta.url).pathname
const sides = { before: beforeSrc, after: undefined } as const

const runOne = (cell: string, src: string | undefined): number => {
  const [client, op, progress, concurrency, total] = cell.split(":")
  const env = { ...process.env }
  if (src === undefined) delete env.SRC_ROOT
  else env.SRC_ROOT = src
  const out = execFileSync(process.execPath, [driver, client!, op!, progress!, concurrency!, total!], { encoding: "utf8", env })
  return JSON.parse(out.trim().split("\n").at(-1)!).cpuUs
}
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const fmt = (xs: Array<number>) =>
  `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)})`

for (const cell of cells) {
  const results = { before: [] as Array<number>, after: [] as Array<number> }
  for (let r = 0; r < runs; r++) {
    for (const side of ["before", "after"] as const) results[side].push(runOne(cell, sides[side]))
  }
  console.log(
    `${cell.padEnd(28)} cpu µs/call before ${fmt(results.before).padEnd(24)} after ${fmt(results.after).padEnd(24)}` +
      ` after/before ${(median(results.after) / median(results.before)).toFixed(2)}`
  )
}
console.log(`load ${(await import("node:os")).loadavg().map((l) => l.toFixed(2)).join(" ")}`)
