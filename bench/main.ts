/**
 * `npm run bench`: runs the workloads in `bench/workloads/` one after the
 * other and prints one Markdown report on stdout: the machine, the command,
 * one table of every row, and the targets checked as ratios between rows of
 * the same run.
 *
 * Environment:
 * - BENCH_WORKLOADS: comma-separated file names without `.ts` (default: all)
 * - BENCH_RUNS: runs per cell, the median is over them (default 5)
 * - BENCH_SMOKE=1: tiny sizes; checks the harness, not the speed
 * - BENCH_JSON=path: also writes the rows, targets and durations as JSON
 * - BENCH_BUILD: where every process loads this project's modules from
 *   (`bench/our-modules.ts`): `dist` by default here, the built JavaScript
 *   that users run (`npm run bench` builds it first); `src` for the sources
 * Each workload documents its own extra variables.
 */
import { execFileSync } from "node:child_process"
import { readdirSync, writeFileSync } from "node:fs"
import { cpus, loadavg, totalmem } from "node:os"
import { basename } from "node:path"
import {
  advantage,
  comparable,
  formatFigure,
  type Metric,
  type Row,
  ROWS_HEADER,
  type Target,
  TARGETS_HEADER,
  type Workload
} from "./workload.ts"

/** The commit measured, marked when the work tree differs from it; absent outside a git checkout. */
const commit = (() => {
  const git = (...args: Array<string>) => execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
  try {
    return `${git("rev-parse", "--short", "HEAD")}${git("status", "--porcelain", "--untracked-files=no") === "" ? "" : " with uncommitted changes"}`
  } catch {
    return undefined
  }
})()

// Set before any workload starts a process: they inherit it.
const buildDefaulted = process.env.BENCH_BUILD === undefined
process.env.BENCH_BUILD ??= "dist"

const directory = new URL("./workloads/", import.meta.url)
/** The order of the issue's list; files not named here run after these, alphabetically. */
const ORDER = ["stdio-client", "stdio-server", "http", "large", "in-flight", "cold-start", "quick-start", "bridge"]

const available = readdirSync(directory)
  .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"))
  .map((file) => basename(file, ".ts"))
  .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
function rank(name: string): number {
  const i = ORDER.indexOf(name)
  return i === -1 ? ORDER.length : i
}

const requested = process.env.BENCH_WORKLOADS?.split(",").map((s) => s.trim()).filter((s) => s.length > 0)
const unknown = (requested ?? []).filter((name) => !available.includes(name))
if (unknown.length > 0) {
  console.error(`unknown workload(s): ${unknown.join(", ")} (available: ${available.join(", ")})`)
  process.exit(2)
}
const selected = requested === undefined || requested.length === 0 ? available : available.filter((name) => requested.includes(name))
const smoke = process.env.BENCH_SMOKE === "1"
const runs = Number(process.env.BENCH_RUNS ?? (smoke ? 1 : 5))

interface Ran {
  readonly file: string
  readonly workload: Workload | undefined
  readonly rows: ReadonlyArray<Row>
  readonly seconds: number
  readonly error?: string
}

const loadBefore = loadavg()
const started = performance.now()
const ran: Array<Ran> = []
for (const file of selected) {
  const t0 = performance.now()
  let workload: Workload | undefined
  try {
    workload = ((await import(new URL(`${file}.ts`, directory).href)) as { workload: Workload }).workload
    console.error(`bench: ${file} …`)
    const rows = await workload.run({ runs, smoke })
    ran.push({ file, workload, rows, seconds: (performance.now() - t0) / 1000 })
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    console.error(`bench: ${file} failed: ${message}`)
    ran.push({ file, workload, rows: [], seconds: (performance.now() - t0) / 1000, error: message })
  }
  console.error(`bench: ${file} done in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
}
const loadAfter = loadavg()
const totalSeconds = (performance.now() - started) / 1000

// ---------------------------------------------------------------------------
// Ratios

/** `*` stands for any text, anywhere in the pattern ("tools/call *", "* c32", "*"). */
const variantMatches = (pattern: string, variant: string) =>
  pattern.includes("*")
    ? new RegExp(`^${pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`)
      .test(variant)
    : pattern === variant

const rowsOf = (r: Ran) => r.rows
const allRows = ran.flatMap(rowsOf)
const find = (workload: string, variant: string, impl: string, metric: Metric) =>
  allRows.find((row) => row.workload === workload && row.variant === variant && row.impl === impl && row.metric === metric)

/**
 * The peers a row is compared with: those its workload's targets name for that variant and the
 * workload's own `peers`, else `sdk`.
 */
const peersOf = (r: Ran, row: Row): Array<string> => {
  if (!comparable(row.metric)) return []
  const named = (r.workload?.targets ?? [])
    .filter((t) => t.workload === row.workload && variantMatches(t.variant, row.variant))
    .filter((t) => t.metric === undefined || t.metric === row.metric)
    .map((t) => t.peer)
    .concat(r.workload?.peers ?? [])
  return [...new Set(named.length > 0 ? named : ["sdk"])].filter((peer) => peer !== row.impl)
}

interface Checked {
  readonly target: Target
  readonly variant: string
  readonly metric: Metric | undefined
  readonly ratio: number | undefined
  readonly met: boolean | undefined
}

const checkTarget = (target: Target): Array<Checked> => {
  const mine = allRows.filter((row) =>
    row.workload === target.workload && row.impl === target.ours && variantMatches(target.variant, row.variant) &&
    (target.metric === undefined || row.metric === target.metric)
  )
  if (mine.length === 0) return [{ target, variant: target.variant, metric: target.metric, ratio: undefined, met: undefined }]
  return mine.map((row) => {
    const peer = find(row.workload, row.variant, target.peer, row.metric)
    const ratio = peer === undefined ? undefined : advantage(row.metric, row.median, peer.median)
    return { target, variant: row.variant, metric: row.metric, ratio, met: ratio === undefined ? undefined : ratio >= target.atLeast }
  })
}

// ---------------------------------------------------------------------------
// Formatting

const load = (l: ReadonlyArray<number>) => l.map((x) => x.toFixed(2)).join(" / ")
const shownEnv = Object.keys(process.env).filter((name) =>
  name.startsWith("BENCH_") && name !== "BENCH_JSON" && !(name === "BENCH_BUILD" && buildDefaulted)
).sort()
const command = [...shownEnv.map((name) => `${name}=${process.env[name]}`), "npm run bench"].join(" ")

const lines: Array<string> = []
lines.push("## Benchmark report")
lines.push("")
lines.push(`- command: \`${command}\` (${runs} run(s) per cell${smoke ? ", smoke sizes: not a measurement" : ""})`)
if (commit !== undefined) lines.push(`- commit: ${commit}`)
lines.push(
  `- machine: ${cpus().length} cores, ${cpus()[0]?.model.trim() ?? "unknown CPU"}, ${
    Math.round(totalmem() / 2 ** 30)
  } GiB RAM, Node ${process.version}, ${process.platform} ${process.arch}`
)
lines.push(
  `- load average (1 / 5 / 15 min): ${load(loadBefore)} before, ${load(loadAfter)} after; ${
    formatFigure(totalSeconds / 60, 1)
  } min in all (${ran.map((r) => `${r.file} ${formatFigure(r.seconds, 0)} s`).join(", ")})`
)
lines.push(`- our modules loaded from \`${process.env.BENCH_BUILD === "dist" ? "dist/" : "src/"}\` by every process`)
lines.push("- ratios are oriented so that above 1× means better than the peer: faster, or less time or memory")
lines.push("")
lines.push(ROWS_HEADER)
lines.push("|---|---|---|---|---:|---:|---:|---:|---:|---|")
for (const r of ran) {
  for (const row of r.rows) {
    const ratios = peersOf(r, row).flatMap((peer) => {
      const other = find(row.workload, row.variant, peer, row.metric)
      const ratio = other === undefined ? Number.NaN : advantage(row.metric, row.median, other.median)
      return Number.isFinite(ratio) ? [`${formatFigure(ratio, 2)}× ${peer}`] : []
    })
    lines.push(
      `| ${row.workload} | ${row.variant} | ${row.impl} | ${row.metric} | ${formatFigure(row.median)} | ${formatFigure(row.min)} | ${
        formatFigure(row.max)
      } | ${row.p50 === undefined ? "" : formatFigure(row.p50, 3)} | ${row.p99 === undefined ? "" : formatFigure(row.p99, 3)} | ${
        ratios.join(", ")
      } |`
    )
  }
}
const failed = ran.filter((r) => r.error !== undefined)
if (failed.length > 0) {
  lines.push("")
  for (const r of failed) lines.push(`- **${r.file} failed**: ${r.error!.split("\n")[0]}`)
}

const checked = ran.flatMap((r) => (r.workload?.targets ?? []).flatMap(checkTarget))
lines.push("")
lines.push("### Targets")
lines.push("")
lines.push(TARGETS_HEADER)
lines.push("|---|---|---|---|---|---:|---:|---|")
for (const c of checked) {
  lines.push(
    `| ${c.target.workload} | ${c.variant} | ${c.target.ours} | ${c.target.peer} | ${c.metric ?? "any"} | ≥ ${
      formatFigure(c.target.atLeast, 2)
    }× | ${c.ratio === undefined ? "not measured" : `${formatFigure(c.ratio, 2)}×`} | ${
      c.met === undefined ? "❓" : c.met ? "✅" : "❌"
    } |`
  )
}
console.log(lines.join("\n"))

if (process.env.BENCH_JSON !== undefined) {
  writeFileSync(
    process.env.BENCH_JSON,
    JSON.stringify(
      {
        command,
        runs,
        smoke,
        seconds: totalSeconds,
        workloads: ran.map((r) => ({
          file: r.file,
          name: r.workload?.name,
          seconds: r.seconds,
          error: r.error,
          rows: r.rows,
          targets: r.workload?.targets ?? []
        })),
        targets: checked
      },
      null,
      2
    )
  )
}
process.exit(failed.length > 0 ? 1 : 0)
