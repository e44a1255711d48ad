/**
 * Turns a report of `npm run bench` into the compact tables of BENCHMARKS.md:
 * one table per workload, implementations side by side, each figure with its
 * ratio against the peer of the same run (above 1× = better than the peer).
 *   npx node bench/report-tables.ts report.md > tables.md
 */
import { readFileSync } from "node:fs"
import { higherIsBetter, type Metric } from "./workload.ts"

interface Cell {
  readonly workload: string
  readonly variant: string
  readonly impl: string
  readonly metric: Metric
  readonly median: number
}

const [file] = process.argv.slice(2)
if (file === undefined) {
  console.error("usage: npx node bench/report-tables.ts report.md")
  process.exit(2)
}
const cells: Array<Cell> = readFileSync(file, "utf8").split("\n")
  .filter((line) => line.startsWith("| ") && !line.startsWith("| workload") && !line.startsWith("|---"))
  .map((line) => line.split("|").slice(1, -1).map((s) => s.trim()))
  .filter((columns) => columns.length === 10)
  .map(([workload, variant, impl, metric, median]) => ({
    workload: workload!,
    variant: variant!,
    impl: impl!,
    metric: metric as Metric,
    median: Number(median!.replace(/,/g, ""))
  }))

const find = (workload: string, variant: string, impl: string, metric: Metric) =>
  cells.find((c) => c.workload === workload && c.variant === variant && c.impl === impl && c.metric === metric)

const number = (n: number): string => {
  const digits = Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : 2
  return n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })
}

/** A figure with its ratio against `peer` (same workload, variant and metric), unless it is the peer. */
const figure = (workload: string, variant: string, impl: string, metric: Metric, peer: string | undefined): string => {
  const cell = find(workload, variant, impl, metric)
  if (cell === undefined) return ""
  const other = peer === undefined || peer === impl ? undefined : find(workload, variant, peer, metric)
  if (other === undefined) return number(cell.median)
  const ratio = higherIsBetter(metric) ? cell.median / other.median : other.median / cell.median
  return `${number(cell.median)} (${ratio.toFixed(2)}×)`
}

interface Pivot {
  readonly title: string
  readonly workloads: ReadonlyArray<string>
  /** "impl": one line per implementation, a column per variant; "variant": the other way round. */
  readonly lines: "impl" | "variant"
  readonly metric: Metric
  readonly peer?: string
  readonly impls?: ReadonlyArray<string>
  readonly variants?: ReadonlyArray<string>
}

const distinct = <A>(xs: ReadonlyArray<A>) => [...new Set(xs)]

const pivot = (p: Pivot): string => {
  const mine = cells.filter((c) => p.workloads.includes(c.workload) && c.metric === p.metric)
  if (mine.length === 0) return ""
  const multi = p.workloads.length > 1
  const variants = p.variants ??
    distinct(mine.map((c) => multi ? `${c.workload}: ${c.variant}` : c.variant))
  const impls = p.impls ?? distinct(mine.map((c) => c.impl))
  const split = (v: string): [string, string] => {
    if (!multi) return [p.workloads[0]!, v]
    const i = v.indexOf(": ")
    return [v.slice(0, i), v.slice(i + 2)]
  }
  const at = (v: string, impl: string) => {
    const [workload, variant] = split(v)
    return figure(workload, variant, impl, p.metric, p.peer)
  }
  const [rows, columns] = p.lines === "impl" ? [impls, variants] : [variants, impls]
  const out = [`${p.title}:`, ""]
  const corner = `${p.metric}${p.peer === undefined ? "" : ` (vs ${p.peer})`}`
  out.push(`| ${corner} | ${columns.join(" | ")} |`, `|---|${columns.map(() => "---:").join("|")}|`)
  for (const row of rows) {
    const values = columns.map((column) => p.lines === "impl" ? at(column, row) : at(row, column))
    if (values.every((v) => v === "")) continue
    out.push(`| ${row} | ${values.join(" | ")} |`)
  }
  return out.join("\n")
}

const stdioVariants = ["tools/call c1", "tools/call c32", "ping c1", "ping c32"]
const tables: Array<Pivot> = [
  {
    title: "stdio client, transport",
    workloads: ["stdio client"],
    lines: "impl",
    metric: "req/s",
    peer: "sdk",
    impls: ["raw", "ours", "sdk-transport", "sdk"],
    variants: stdioVariants
  },
  {
    title: "stdio client, transport",
    workloads: ["stdio client"],
    lines: "impl",
    metric: "CPU µs/req",
    peer: "sdk",
    impls: ["raw", "ours", "sdk-transport", "sdk"],
    variants: stdioVariants
  },
  {
    title: "McpClient",
    workloads: ["stdio client"],
    lines: "impl",
    metric: "req/s",
    peer: "sdk",
    impls: ["ours-mcp", "sdk", "effect-ai"],
    variants: stdioVariants
  },
  {
    title: "McpClient",
    workloads: ["stdio client"],
    lines: "impl",
    metric: "CPU µs/req",
    peer: "sdk",
    impls: ["ours-mcp", "sdk", "effect-ai"],
    variants: stdioVariants
  },
  { title: "stdio server", workloads: ["stdio server"], lines: "impl", metric: "req/s", peer: "sdk" },
  { title: "stdio server", workloads: ["stdio server"], lines: "impl", metric: "CPU µs/req", peer: "sdk" },
  { title: "Streamable HTTP", workloads: ["http json", "http sse"], lines: "impl", metric: "req/s", peer: "sdk→sdk" },
  {
    title: "Streamable HTTP, client and server together",
    workloads: ["http json", "http sse"],
    lines: "impl",
    metric: "CPU µs/req",
    peer: "sdk→sdk"
  },
  { title: "Large messages", workloads: ["large 1 MiB", "large 10 MiB"], lines: "variant", metric: "ms", peer: "sdk" },
  { title: "Large messages", workloads: ["large 1 MiB", "large 10 MiB"], lines: "variant", metric: "MiB", peer: "sdk" },
  { title: "In flight", workloads: ["in flight"], lines: "variant", metric: "KiB/req", peer: "sdk" },
  { title: "In flight", workloads: ["in flight"], lines: "variant", metric: "ms", peer: "sdk" },
  { title: "Cold start", workloads: ["cold start"], lines: "variant", metric: "ms", peer: "sdk" },
  { title: "Quick start", workloads: ["quick start"], lines: "variant", metric: "ms", peer: "sdk" },
  { title: "Quick start", workloads: ["quick start"], lines: "variant", metric: "MiB", peer: "sdk" },
  { title: "Bridge", workloads: ["bridge"], lines: "variant", metric: "req/s" },
  { title: "Bridge", workloads: ["bridge"], lines: "variant", metric: "ms" }
]
console.log(tables.map(pivot).filter((t) => t !== "").join("\n\n"))
