/**
 * Prints a report of `npm run bench` as BENCHMARKS.md's tables
 * (bench/report-format.ts), each after the line that names it.
 *   npx node bench/report-tables.ts report.md > tables.md
 */
import { readFileSync } from "node:fs"
import { reportTables } from "./report-format.ts"

const [file] = process.argv.slice(2)
if (file === undefined) {
  console.error("usage: npx node bench/report-tables.ts report.md")
  process.exit(2)
}
console.log(reportTables(readFileSync(file, "utf8")).map((t) => [`${t.title}:`, "", ...t.rows].join("\n")).join("\n\n"))
