/**
 * A report of `npm run bench` as the tables BENCHMARKS.md shows: one table per
 * workload with implementations side by side (each figure with its ratio
 * against the peer of the same run, above 1× = better than the peer), the
 * sweep's tables by era, concurrency and progress, the targets, and the
 * fleet's (bench/report-fleet.ts).
 * BENCHMARKS.md's tables are this module's output for the report committed
 * beside it (bench/todays-run.md); a test holds them to it.
 */
import { fleetTables } from "./report-fleet.ts"
import { advantage, formatFigure, type Metric, ROWS_HEADER, TARGETS_HEADER } from "./workload.ts"

interface Cell {
  readonly workload: string
  readonly variant: string
  readonly impl: string
  readonly metric: Metric
  readonly median: number
}

/** A table as printed: the line that names it, then its Markdown rows. */
export interface Table {
  readonly title: string
  readonly rows: ReadonlyArray<string>
}

const tableRows = (text: string, header: string): Array<Array<string>> => {
  const lines = text.split("\n")
  const start = lines.indexOf(header)
  if (start < 0) return []
  const rows: Array<Array<string>> = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("| ")) break
    rows.push(line.split("|").slice(1, -1).map((s) => s.trim()))
  }
  return rows
}

/** A row of the report's table of figures (`ROWS_HEADER`), each cell as printed. */
export interface ReportRow {
  readonly workload: string
  readonly variant: string
  readonly impl: string
  readonly metric: string
  readonly median: string
  readonly min: string
  readonly max: string
  readonly p50: string
  readonly p99: string
  readonly vsPeer: string
}

const reportRowsOf = (report: string): Array<ReportRow> =>
  tableRows(report, ROWS_HEADER).map((cells) => {
    const [workload = "", variant = "", impl = "", metric = "", median = "", min = "", max = "", p50 = "", p99 = "", vsPeer = ""] =
      cells
    return { workload, variant, impl, metric, median, min, max, p50, p99, vsPeer }
  })

const cellsOf = (rows: ReadonlyArray<ReportRow>): Array<Cell> =>
  rows.map((row) => ({
    workload: row.workload,
    variant: row.variant,
    impl: row.impl,
    metric: row.metric as Metric,
    median: Number(row.median.replace(/,/g, ""))
  }))

const distinct = <A>(xs: ReadonlyArray<A>) => [...new Set(xs)]

interface Pivot {
  readonly title: string
  readonly workloads: ReadonlyArray<string>
  /** "impl": one line per implementation, a column per variant; "variant": the other way round. */
  readonly lines: "impl" | "variant"
  readonly metric: Metric
  /** Each figure's ratios against these, in the same run; a lone peer's ratio is not named. */
  readonly peers?: ReadonlyArray<string>
  readonly impls?: ReadonlyArray<string>
  readonly variants?: ReadonlyArray<string>
  /** The header's first cell; default the metric and its peers. */
  readonly corner?: string
}

const stdioVariants = ["tools/call c1", "tools/call c32", "ping c1", "ping c32"]
const pivots: ReadonlyArray<Pivot> = [
  ...(["req/s", "CPU µs/req"] as const).map((metric): Pivot => ({
    title: "Stateless era, three clients",
    workloads: ["stateless http"],
    lines: "variant",
    metric,
    peers: ["sdk2", "effect-ai"]
  })),
  ...(["req/s", "CPU µs/req"] as const).map((metric): Pivot => ({
    title: "One-shot call",
    workloads: ["one-shot"],
    lines: "variant",
    metric,
    peers: ["hand-written fetch"]
  })),
  ...(["req/s", "CPU µs/req", "MiB", "ms"] as const).map((metric): Pivot => ({
    title: "Stateless era, servers",
    workloads: ["stateless server"],
    lines: "impl",
    metric,
    peers: ["sdk2", "effect-ai"]
  })),
  {
    title: "Stateless era, servers",
    workloads: ["stateless server"],
    lines: "impl",
    metric: "KiB/req",
    peers: ["sdk2", "effect-ai"],
    variants: ["in flight heap (500)"]
  },
  ...(["req/s", "CPU µs/req"] as const).map((metric): Pivot => ({
    title: "stdio client, transport",
    workloads: ["stdio client"],
    lines: "impl",
    metric,
    peers: ["sdk"],
    impls: ["raw", "ours", "sdk-transport", "sdk"],
    variants: stdioVariants
  })),
  ...(["req/s", "CPU µs/req"] as const).map((metric): Pivot => ({
    title: "McpClient",
    workloads: ["stdio client"],
    lines: "impl",
    metric,
    peers: ["sdk"],
    impls: ["ours-mcp", "sdk", "effect-ai"],
    variants: stdioVariants
  })),
  { title: "stdio server", workloads: ["stdio server"], lines: "impl", metric: "req/s", peers: ["sdk"] },
  { title: "stdio server", workloads: ["stdio server"], lines: "impl", metric: "CPU µs/req", peers: ["sdk"] },
  { title: "Streamable HTTP", workloads: ["http json", "http sse"], lines: "impl", metric: "req/s", peers: ["sdk→sdk"] },
  {
    title: "Streamable HTTP, client and server together",
    workloads: ["http json", "http sse"],
    lines: "impl",
    metric: "CPU µs/req",
    peers: ["sdk→sdk"]
  },
  {
    title: "Streamable HTTP, the server's own CPU",
    workloads: ["http json"],
    lines: "impl",
    metric: "server CPU µs/req",
    peers: ["sdk→sdk"],
    impls: ["ours→ours-tool", "ours→ours-typed", "sdk→sdk"]
  },
  ...(["req/s", "CPU µs/req"] as const).map((metric): Pivot => ({
    title: "Schema-first definitions",
    workloads: ["stdio server"],
    lines: "impl",
    metric,
    peers: ["ours-typed"],
    impls: ["ours", "ours-typed", "ours-tool", "sdk"],
    variants: ["tools/call c1", "tools/call c32"]
  })),
  { title: "Large messages", workloads: ["large 1 MiB", "large 10 MiB"], lines: "variant", metric: "ms", peers: ["sdk"] },
  { title: "Large messages", workloads: ["large 1 MiB", "large 10 MiB"], lines: "variant", metric: "MiB", peers: ["sdk"] },
  { title: "In flight", workloads: ["in flight"], lines: "variant", metric: "KiB/req", peers: ["sdk"] },
  { title: "In flight", workloads: ["in flight"], lines: "variant", metric: "ms", peers: ["sdk"] },
  { title: "Cold start", workloads: ["cold start"], lines: "variant", metric: "ms", peers: ["sdk"] },
  { title: "Quick start", workloads: ["quick start"], lines: "variant", metric: "ms", peers: ["sdk"] },
  { title: "Quick start", workloads: ["quick start"], lines: "variant", metric: "MiB", peers: ["sdk"] },
  { title: "Bridge", workloads: ["bridge"], lines: "variant", metric: "req/s" },
  { title: "Bridge", workloads: ["bridge"], lines: "variant", metric: "ms" },
  ...(["ms", "server CPU µs/req", "MiB"] as const).map((metric): Pivot => ({
    title: "Tasks",
    workloads: ["tasks"],
    lines: "variant",
    metric,
    peers: ["sdk2"]
  }))
]

/** The sweep's tables, per transport: calls a second with ratios against raw and the SDK, then CPU per call. */
const sweeps: ReadonlyArray<Pivot> = [
  ["sweep stdio", "req/s", "stdio, req/s (× raw; × sdk)"],
  ["sweep stdio", "CPU µs/req", "stdio, client CPU µs per call"],
  ["sweep http", "req/s", "HTTP, req/s (× raw; × sdk)"],
  ["sweep http", "CPU µs/req", "HTTP, CPU µs per call (client; for `ours→ours` both sides)"]
].map(([workload, metric, title]): Pivot => ({
  title: title!,
  workloads: [workload!],
  lines: "variant",
  metric: metric as Metric,
  peers: metric === "req/s" ? ["raw", "sdk"] : [],
  corner: "variant"
}))

/** Every table of a report, in BENCHMARKS.md's order: the targets, the sweep, then one per workload. */
export const reportTables = (report: string): Array<Table> => {
  const reportRows = reportRowsOf(report)
  const cells = cellsOf(reportRows)
  const find = (workload: string, variant: string, impl: string, metric: Metric) =>
    cells.find((c) => c.workload === workload && c.variant === variant && c.impl === impl && c.metric === metric)

  /** A figure with its ratio against each peer measured beside it; a lone peer's ratio is not named. */
  const figure = (workload: string, variant: string, impl: string, metric: Metric, peers: ReadonlyArray<string>) => {
    const cell = find(workload, variant, impl, metric)
    if (cell === undefined) return ""
    const ratios = peers.filter((peer) => peer !== impl).flatMap((peer) => {
      const other = find(workload, variant, peer, metric)
      if (other === undefined) return []
      const ratio = `${advantage(metric, cell.median, other.median).toFixed(2)}×`
      return [peers.length === 1 ? ratio : `${ratio} ${peer}`]
    })
    return ratios.length === 0 ? formatFigure(cell.median) : `${formatFigure(cell.median)} (${ratios.join("; ")})`
  }

  const pivot = (p: Pivot): Table | undefined => {
    const mine = cells.filter((c) => p.workloads.includes(c.workload) && c.metric === p.metric)
    if (mine.length === 0) return undefined
    const multi = p.workloads.length > 1
    const variants = p.variants ?? distinct(mine.map((c) => multi ? `${c.workload}: ${c.variant}` : c.variant))
    const impls = p.impls ?? distinct(mine.map((c) => c.impl))
    const peers = p.peers ?? []
    const split = (v: string): [string, string] => {
      if (!multi) return [p.workloads[0]!, v]
      const i = v.indexOf(": ")
      return [v.slice(0, i), v.slice(i + 2)]
    }
    const at = (v: string, impl: string) => {
      const [workload, variant] = split(v)
      return figure(workload, variant, impl, p.metric, peers)
    }
    const [lines, columns] = p.lines === "impl" ? [impls, variants] : [variants, impls]
    const corner = p.corner ?? `${p.metric}${peers.length === 0 ? "" : ` (vs ${peers.join("; ")})`}`
    const rows = [`| ${corner} | ${columns.join(" | ")} |`, `|---|${columns.map(() => "---:").join("|")}|`]
    for (const line of lines) {
      const values = columns.map((column) => p.lines === "impl" ? at(column, line) : at(line, column))
      if (values.every((v) => v === "")) continue
      rows.push(`| ${line} | ${values.join(" | ")} |`)
    }
    return { title: p.title, rows }
  }

  const status: Record<string, string> = { "✅": "yes", "❌": "**no**", "❓": "not measured" }
  const targets = tableRows(report, TARGETS_HEADER).map((columns) =>
    `| ${columns.slice(0, -1).join(" | ")} | ${status[columns.at(-1)!] ?? columns.at(-1)} |`
  )
  const all: Array<Table | undefined> = [
    targets.length === 0 ? undefined : { title: "Targets", rows: [TARGETS_HEADER, "|---|---|---|---|---|---:|---:|---|", ...targets] },
    ...sweeps.map(pivot),
    ...pivots.map(pivot),
    ...fleetTables(reportRows)
  ]
  return all.filter((t): t is Table => t !== undefined)
}
