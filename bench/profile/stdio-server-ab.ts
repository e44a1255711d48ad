/**
 * Same-run comparison of stdio servers across checkouts, by the server
 * process's CPU time per request (from /proc; steadier than req/s on a
 * shared machine) with req/s and p50 beside it, rounds interleaved:
 *
 *   npx node bench/profile/stdio-server-ab.ts <runs> <server> <ops> <concurrencies> <totals> <checkout> [checkout...]
 *
 * e.g. `… 5 ours callTool,ping 1,32 3000,12000 /work/before .` compares the
 * `ours` server (bench/servers/index.ts) of an older checkout with this one.
 * Each checkout runs its own `bench/server-requester.ts` on its own `dist/`
 * (BENCH_BUILD=dist), so build both first. AB_WARM sets the warm-up (default 2000). Prints the median (min–max) of
 * each figure per cell and each checkout's ratio to the first.
 */
import { execFileSync } from "node:child_process"
import { resolve } from "node:path"

const [runsText = "5", server = "ours", ops = "callTool,ping", concurrencies = "1,32", totals = "3000,12000", ...trees] =
  process.argv.slice(2)
const runs = Number(runsText)
// Warm-up per cell (the c32 warm-up before all cells is five times this). A cell right after a
// much faster warm-up can still pay for compiling and GC work the warm-up left behind.
const warmUp = process.env.AB_WARM ?? "2000"
const checkouts = trees.length > 0 ? trees.map((t) => resolve(t)) : [resolve(".")]

interface Cell {
  readonly op: string
  readonly concurrency: number
  readonly rps: number
  readonly p50: number
  readonly serverCpuUs: number
}

const results = new Map<string, Array<Cell>>()
for (let r = 0; r < runs; r++) {
  for (const tree of checkouts) {
    const out = execFileSync(
      process.execPath,
      [`${tree}/bench/server-requester.ts`, server, ops, concurrencies, totals, warmUp],
      { encoding: "utf8", env: { ...process.env, BENCH_BUILD: "dist" } }
    )
    for (const line of out.trim().split("\n")) {
      const cell = JSON.parse(line) as Cell
      const key = `${cell.op} c${cell.concurrency}\t${tree}`
      results.set(key, [...(results.get(key) ?? []), cell])
    }
  }
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}
const fmt = (xs: ReadonlyArray<number>, digits: number) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`

console.log(`${server}, ${runs} runs, load ${(await import("node:os")).loadavg().map((l) => l.toFixed(2)).join(" ")}`)
const cells = [...new Set([...results.keys()].map((k) => k.split("\t")[0]!))]
for (const cell of cells) {
  const base = results.get(`${cell}\t${checkouts[0]}`)!
  for (const tree of checkouts) {
    const rows = results.get(`${cell}\t${tree}`)!
    const cpu = rows.map((x) => x.serverCpuUs)
    const rps = rows.map((x) => x.rps)
    console.log(
      `${cell.padEnd(14)} ${tree.padEnd(28)} cpu µs/req ${fmt(cpu, 1).padEnd(20)} ${
        (median(base.map((x) => x.serverCpuUs)) / median(cpu)).toFixed(2)
      }x   req/s ${fmt(rps, 0).padEnd(22)} ${(median(rps) / median(base.map((x) => x.rps))).toFixed(2)}x   p50 ms ${
        median(rows.map((x) => x.p50)).toFixed(3)
      }`
    )
  }
}
