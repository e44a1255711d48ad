/**
 * stdio client benchmark: every client against the same raw responder,
 * `tools/call` and `ping`, at concurrency 1 and 32. Each figure is the median
 * of several runs, each run in a fresh process, runs of different clients
 * interleaved so that drift on the machine hits all of them alike.
 *
 *   npm run bench                 full run (BENCH_RUNS=5)
 *   BENCH_RUNS=1 BENCH_TOTAL=500 npm run bench    smoke run
 */
import { execFileSync } from "node:child_process"
import { cpus } from "node:os"
import type { RunResult } from "./stats.ts"

const runs = Number(process.env.BENCH_RUNS ?? 5)
const totalFor = (c: number) => Number(process.env.BENCH_TOTAL ?? (c === 1 ? 5_000 : 20_000))
const clients = (process.env.BENCH_CLIENTS ?? "raw,ours,sdk,effect-ai").split(",")
const ops = ["callTool", "ping"]
const concurrencies = [1, 32]
const runner = new URL("./run-one.ts", import.meta.url).pathname

type Key = string
const results = new Map<Key, Array<RunResult>>()
const key = (client: string, op: string, c: number) => `${client}|${op}|${c}`

for (let r = 0; r < runs; r++) {
  for (const op of ops) {
    for (const c of concurrencies) {
      for (const client of clients) {
        const out = execFileSync(process.execPath, [runner, client, op, String(c), String(totalFor(c))], {
          encoding: "utf8",
          stdio: ["ignore", "pipe", "inherit"]
        })
        const result = JSON.parse(out.trim().split("\n").pop()!) as RunResult
        const k = key(client, op, c)
        results.set(k, [...(results.get(k) ?? []), result])
      }
    }
  }
}

const med = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!
const fmt = (n: number, d = 0) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d })

const lines: Array<string> = []
lines.push(`stdio client benchmark — ${runs} run(s) each, node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? "?"})`)
lines.push("")
lines.push("| op | conc. | client | req/s median | min | max | p50 ms | p99 ms | vs raw | vs sdk |")
lines.push("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
for (const op of ops) {
  for (const c of concurrencies) {
    const rawMed = med((results.get(key("raw", op, c)) ?? []).map((x) => x.rps))
    const sdkMed = med((results.get(key("sdk", op, c)) ?? []).map((x) => x.rps))
    for (const client of clients) {
      const rs = results.get(key(client, op, c)) ?? []
      const rps = rs.map((x) => x.rps)
      const m = med(rps)
      lines.push(
        `| ${op} | ${c} | ${client} | ${fmt(m)} | ${fmt(Math.min(...rps))} | ${fmt(Math.max(...rps))} | ${
          fmt(med(rs.map((x) => x.p50)), 3)
        } | ${fmt(med(rs.map((x) => x.p99)), 3)} | ${fmt(m / rawMed, 2)}× | ${fmt(m / sdkMed, 2)}× |`
      )
    }
  }
}
console.log(lines.join("\n"))
