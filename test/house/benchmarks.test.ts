/**
 * BENCHMARKS.md shows the tables of the report it is written from: every
 * table bench/report-format.ts makes of bench/todays-run.md appears in it row
 * for row, so a figure copied by hand or left from an older run shows up here.
 */
import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { reportTables } from "../../bench/report-format.ts"

const read = (path: string) => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), "utf8")

describe("BENCHMARKS.md", () => {
  const page = read("BENCHMARKS.md")
  const report = read("bench/todays-run.md")
  const tables = reportTables(report)

  it("is written from a report with a targets table, the sweep and every workload's tables, the fleet's too", () => {
    expect(tables.map((t) => t.title)).toEqual(expect.arrayContaining([
      "Targets",
      "stdio, req/s (× raw; × sdk)",
      "stdio, client CPU µs per call",
      "HTTP, req/s (× raw; × sdk)",
      "stdio client, transport",
      "Streamable HTTP",
      "Bridge",
      "Fleet throughput",
      "Fleet store cost",
      "Fleet resumption"
    ]))
  })

  it("names the commit the report measured", () => {
    const commit = /^- commit: (\S+)$/m.exec(report)?.[1]
    expect(commit, "the report's commit line").toBeDefined()
    expect(page).toContain(`commit \`${commit}\``)
  })

  it("counts the report's targets met as the report does", () => {
    const statuses = tables.find((t) => t.title === "Targets")!.rows.slice(2).map((row) => row.split("|").at(-2)!.trim())
    const met = statuses.filter((status) => status === "yes").length
    expect(page).toContain(`${met} of its ${statuses.length} targets are met`)
  })

  it.each(tables.map((t, i) => [`${t.title} (${i})`, t] as const))(
    "shows %s as the report has it",
    (_, table) => {
      expect(page).toContain(table.rows.join("\n"))
    }
  )
})
