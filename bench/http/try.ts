/**
 * Runs one of this directory's workloads on its own and prints its rows (a
 * stand-in for `bench/main.ts` while measuring these two workloads):
 *
 *   npx node bench/http/try.ts http|large [runs=3] [smoke]
 */
import { loadavg } from "node:os"
import type { Workload } from "../workload.ts"

const [which = "http", runsText = "3", smokeText] = process.argv.slice(2)
const module = which === "large"
  ? await import("../workloads/large.ts")
  : await import("../workloads/http.ts")
const started = Date.now()
const before = loadavg()
const { rows, details } = await module.measure({ runs: Number(runsText), smoke: smokeText === "smoke" })
const minutes = (Date.now() - started) / 60_000
const fmt = (n: number | undefined, d = 0) =>
  n === undefined || !Number.isFinite(n) ? "" : n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d })
console.log(`load ${before.map((x) => x.toFixed(2)).join("/")} → ${loadavg().map((x) => x.toFixed(2)).join("/")}, ${fmt(minutes, 1)} min`)
console.log("| workload | variant | impl | metric | median | min | max | p50 ms | p99 ms | runs |")
console.log("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
for (const r of rows) {
  const d = r.metric === "req/s" || r.metric === "CPU µs/req" ? 0 : 1
  console.log(`| ${r.workload} | ${r.variant} | ${r.impl} | ${r.metric} | ${fmt(r.median, d)} | ${fmt(r.min, d)} | ${fmt(r.max, d)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${r.runs} |`)
}
if (which !== "large") {
  console.log("\nclient CPU µs per request (median over runs):")
  for (const d of details as ReadonlyArray<{ mode: string; op: string; concurrency: number; pair: string; results: ReadonlyArray<{ cpuUs: number }> }>) {
    const xs = d.results.map((x) => x.cpuUs).sort((a, b) => a - b)
    console.log(`  ${d.mode} ${d.op} c${d.concurrency} ${d.pair}: ${fmt(xs[Math.floor((xs.length - 1) / 2)], 0)}`)
  }
}
const targets = (module.workload as Workload).targets
console.log("\ntargets:")
for (const t of targets) {
  const match = (impl: string) =>
    rows.filter((r) =>
      r.workload === t.workload && r.impl === impl &&
      new RegExp(`^${t.variant.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`).test(r.variant) &&
      (t.metric === undefined || r.metric === t.metric)
    )
  for (const ours of match(t.ours)) {
    const peer = match(t.peer).find((p) => p.variant === ours.variant && p.metric === ours.metric)
    if (peer === undefined) continue
    const ratio = ours.metric === "req/s" ? ours.median / peer.median : peer.median / ours.median
    console.log(`  ${t.workload} ${ours.variant}: ${t.ours} vs ${t.peer} = ${ratio.toFixed(2)}× (need ≥ ${t.atLeast}) ${ratio >= t.atLeast ? "met" : "NOT met"}`)
  }
}
