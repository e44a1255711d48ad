/**
 * stdio client benchmark: every client against the same raw responder,
 * `tools/call` and `ping`, at concurrency 1 and 32. Each figure is the median
 * of several runs, each run in a fresh process, runs of different clients
 * interleaved so that drift on the machine hits all of them alike. Prints a
 * Markdown report (machine, command, table, cold start) on stdout.
 *
 *   npm run bench                                   full run (5 runs each)
 *   BENCH_RUNS=1 BENCH_TOTAL=300 npm run bench      smoke run (correctness of the harness only)
 *
 * Environment: BENCH_RUNS (5), BENCH_TOTAL (requests per run; 5 000 at
 * concurrency 1 and 20 000 at 32), BENCH_CLIENTS (comma-separated, default
 * below; also `raw-fiber`, `raw-passthrough`), BENCH_OPS (callTool,ping),
 * BENCH_CONCURRENCY (1,32).
 */
import { execFile } from "node:child_process"
import { cpus, loadavg } from "node:os"
import { promisify } from "node:util"
import type { Measurement } from "./stats.ts"

const list = (name: string, fallback: string) =>
  (process.env[name] ?? fallback).split(",").map((s) => s.trim()).filter((s) => s.length > 0)

const runs = Number(process.env.BENCH_RUNS ?? 5)
const totalFor = (c: number) => Number(process.env.BENCH_TOTAL ?? (c === 1 ? 5_000 : 20_000))
const clients = list("BENCH_CLIENTS", "raw,ours,ours-mcp,sdk,sdk-transport,effect-ai")
const ops = list("BENCH_OPS", "callTool,ping")
const concurrencies = list("BENCH_CONCURRENCY", "1,32").map(Number)
const runner = new URL("./run-one.ts", import.meta.url).pathname
const execFileAsync = promisify(execFile)

const key = (client: string, op: string, c: number) => `${client}|${op}|${c}`
const results = new Map<string, Array<Measurement>>()
const cold = new Map<string, Array<number>>()

const loadBefore = loadavg()
const started = Date.now()
for (let r = 0; r < runs; r++) {
  for (const op of ops) {
    for (const c of concurrencies) {
      for (const client of clients) {
        // One at a time: concurrent runs would measure each other.
        const { stdout } = await execFileAsync(process.execPath, [runner, client, op, String(c), String(totalFor(c))], {
          encoding: "utf8",
          maxBuffer: 1 << 20
        })
        const result = JSON.parse(stdout.trim().split("\n").pop()!) as Measurement
        const k = key(client, op, c)
        results.set(k, [...(results.get(k) ?? []), result])
        cold.set(client, [...(cold.get(client) ?? []), result.coldMs])
      }
    }
  }
}
const loadAfter = loadavg()
const minutes = (Date.now() - started) / 60_000

const sorted = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)
const med = (xs: ReadonlyArray<number>) => sorted(xs)[Math.floor((xs.length - 1) / 2)] ?? Number.NaN
const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "n/a"
const ratio = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${fmt(a / b, 2)}×` : "n/a")
const load = (l: ReadonlyArray<number>) => l.map((x) => x.toFixed(2)).join(" / ")
const envShown = ["BENCH_RUNS", "BENCH_TOTAL", "BENCH_CLIENTS", "BENCH_OPS", "BENCH_CONCURRENCY"]
  .filter((name) => process.env[name] !== undefined)
  .map((name) => `${name}=${process.env[name]}`)

const medianRps = (client: string, op: string, c: number) =>
  med((results.get(key(client, op, c)) ?? []).map((x) => x.rps))

const lines: Array<string> = []
lines.push(`## stdio client benchmark`)
lines.push("")
lines.push(`- command: \`${[...envShown, "npm run bench"].join(" ")}\` (${runs} run(s) of each cell, fresh process per run)`)
lines.push(`- machine: ${cpus().length} cores, ${cpus()[0]?.model.trim() ?? "unknown CPU"}, Node ${process.version}`)
lines.push(`- load average (1 / 5 / 15 min): ${load(loadBefore)} before, ${load(loadAfter)} after (${fmt(minutes, 1)} min)`)
lines.push(`- requests per run: ${concurrencies.map((c) => `${fmt(totalFor(c))} at concurrency ${c}`).join(", ")}, after a warm-up`)
lines.push("")
lines.push(
  "| op | conc. | client | req/s median | min | max | p50 ms | p99 ms | CPU µs/req | vs raw | vs sdk | vs effect-ai |"
)
lines.push("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for (const op of ops) {
  for (const c of concurrencies) {
    for (const client of clients) {
      // A client without the operation (effect-ai has no ping) reports NaN: n/a throughout.
      const rs = (results.get(key(client, op, c)) ?? []).filter((x) => Number.isFinite(x.rps))
      const rps = rs.map((x) => x.rps)
      const m = med(rps)
      lines.push(
        `| ${op} | ${c} | ${client} | ${fmt(m)} | ${fmt(rps.length > 0 ? Math.min(...rps) : Number.NaN)} | ${
          fmt(rps.length > 0 ? Math.max(...rps) : Number.NaN)
        } | ${fmt(med(rs.map((x) => x.p50)), 3)} | ${fmt(med(rs.map((x) => x.p99)), 3)} | ${
          fmt(med(rs.map((x) => x.cpuUs)), 1)
        } | ${ratio(m, medianRps("raw", op, c))} | ${ratio(m, medianRps("sdk", op, c))} | ${
          ratio(m, medianRps("effect-ai", op, c))
        } |`
      )
    }
  }
}
lines.push("")
lines.push("Cold start (process start → first `tools/call` result: Node start-up, imports, spawn, handshake, one call), over every run:")
lines.push("")
lines.push("| client | median ms | min | max |")
lines.push("|---|---:|---:|---:|")
for (const client of clients) {
  const ms = cold.get(client) ?? []
  lines.push(`| ${client} | ${fmt(med(ms))} | ${fmt(Math.min(...ms))} | ${fmt(Math.max(...ms))} |`)
}
console.log(lines.join("\n"))
