/**
 * The stdio sweep's cells for a few clients in both protocol eras, runs
 * interleaved (every client and era once per run, in turn) so that machine
 * load falls on all of them:
 *
 *   BENCH_BUILD=dist npx node bench/profile/progress-eras.ts <runs> <cells> <total> [client...]
 *
 * - cells: `p<progress>c<concurrency>` joined by commas, e.g. `p20c4,p20c8,p0c8`
 * - total: calls measured per cell (a p>0 cell makes total / (1 + p/10), as the sweep does),
 *   after a warm-up of a quarter of that; default clients `raw ours`
 * - a client is a sweep client (`raw`, `ours`, `sdk2`: bench/sweep/run-client.ts) or
 *   `<client>@<dir>` to run that client from another checkout (e.g. a copy of an earlier
 *   commit's `bench/`, `dist/` and `package.json` under /tmp/before, `node_modules` linked)
 * - BENCH_ERAS: the eras, default `2025-11-25,2026-07-28`
 *
 * Prints, per era and cell, each client's median (min–max) client CPU µs per call and
 * calls/s, and its ratio to the first client (calls/s ours/raw; CPU raw/ours).
 */
import { execFileSync } from "node:child_process"
import { loadavg } from "node:os"

const [runsText = "5", cellsText = "p20c4,p0c8", totalText = "4000", ...clientArgs] = process.argv.slice(2)
const runs = Number(runsText)
const total = Number(totalText)
const clients = clientArgs.length > 0 ? clientArgs : ["raw", "ours"]
const eras = (process.env.BENCH_ERAS ?? "2025-11-25,2026-07-28").split(",")
const here = new URL("../../", import.meta.url).pathname

const cells = cellsText.split(",").map((text) => {
  const match = /^p(\d+)c(\d+)$/.exec(text)
  if (match === null) throw new Error(`a cell is p<progress>c<concurrency>, not ${text}`)
  return { progress: Number(match[1]), concurrency: Number(match[2]) }
})
const progressCounts = [...new Set(cells.map((c) => c.progress))]
const groups = progressCounts.map((progress) => {
  const calls = Math.max(50, Math.round(total / (1 + progress / 10)))
  return {
    progress,
    concurrencies: cells.filter((c) => c.progress === progress).map((c) => c.concurrency),
    total: calls,
    warmup: Math.max(20, Math.round(calls / 4))
  }
})

interface Cell {
  readonly progress: number
  readonly concurrency: number
  readonly rps: number
  readonly cpuUs: number
  readonly progressPerCall: number
}

const results = new Map<string, Array<Cell>>()
const key = (client: string, era: string, progress: number, concurrency: number) =>
  `${client}|${era}|p${progress}c${concurrency}`

for (let r = 0; r < runs; r++) {
  for (const era of eras) {
    for (const spec of clients) {
      const [client, root = here] = spec.split("@")
      const job = { client, transport: "stdio", protocol: era, groups }
      const out = execFileSync(process.execPath, [`${root}/bench/sweep/run-client.ts`, JSON.stringify(job)], {
        encoding: "utf8"
      })
      for (const line of out.trim().split("\n")) {
        const cell = JSON.parse(line) as Cell
        const k = key(spec, era, cell.progress, cell.concurrency)
        results.set(k, [...(results.get(k) ?? []), cell])
      }
    }
  }
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const fmt = (xs: ReadonlyArray<number>, digits: number) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`

console.log(`${runs} runs, ${total} calls per p0 cell, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`)
for (const era of eras) {
  for (const { progress, concurrency } of cells) {
    console.log(`${era} p${progress} c${concurrency}`)
    const base = results.get(key(clients[0]!, era, progress, concurrency))!
    for (const spec of clients) {
      const rows = results.get(key(spec, era, progress, concurrency))!
      const cpu = rows.map((x) => x.cpuUs)
      const rps = rows.map((x) => x.rps)
      const seen = median(rows.map((x) => x.progressPerCall))
      console.log(
        `  ${spec.padEnd(24)} cpu µs/call ${fmt(cpu, 1).padEnd(20)} ${(median(base.map((x) => x.cpuUs)) / median(cpu)).toFixed(2)}x` +
          `   calls/s ${fmt(rps, 0).padEnd(24)} ${(median(rps) / median(base.map((x) => x.rps))).toFixed(2)}x` +
          (progress > 0 ? `   progress/call ${seen}` : "")
      )
    }
  }
}
