/**
 * The fleet workload's rows of a report as BENCHMARKS.md's three fleet
 * tables: throughput of one instance against three, what the Redis store
 * adds to one instance, and the resumption after a crash. Figures are the
 * report's, as it prints them.
 */
import type { ReportRow, Table } from "./report-format.ts"

const WAIT = /^stateless tools\/call wait (\d+) ms, \d+ slots per instance$/
const STORE_KINDS = [/^stateless tools\/call wait \d+ ms c\d+$/, /^session tools\/call wait \d+ ms c\d+$/, /^session progress event /]
const RESUME = ["resume after SIGKILL of the stream's instance", "notifications lost across the kill", "notifications received twice across the kill"]

/** The fleet's tables of a report's rows. */
export const fleetTables = (rows: ReadonlyArray<ReportRow>): Array<Table> => {
  const fleet = rows.filter((r) => r.workload === "fleet")
  const find = (variant: string, impl: string, metric: (m: string) => boolean) =>
    fleet.find((r) => r.variant === variant && r.impl === impl && metric(r.metric))
  const tables: Array<Table> = []

  const throughput = [...new Set(fleet.map((r) => r.variant).filter((v) => WAIT.test(v)))].flatMap((variant) => {
    const one = find(variant, "1 instance", (m) => m === "req/s")
    const three = find(variant, "3 instances", (m) => m === "req/s")
    const cpu1 = find(variant, "1 instance", (m) => m.startsWith("server CPU"))
    const cpu3 = find(variant, "3 instances", (m) => m.startsWith("server CPU"))
    if (one === undefined || three === undefined) return []
    const ratio = /^([\d.]+×)/.exec(three.vsPeer)?.[1] ?? ""
    return [
      `| ${WAIT.exec(variant)![1]} ms | ${one.median} (${one.min}–${one.max}) | ${three.median} (${three.min}–${three.max}) | **${ratio}** | ${one.p50} / ${one.p99} | ${three.p50} / ${three.p99} | ${cpu1?.median ?? ""} / ${cpu3?.median ?? ""} |`
    ]
  })
  if (throughput.length > 0) {
    tables.push({
      title: "Fleet throughput",
      rows: [
        "| tool waits | 1 instance, req/s | 3 instances, req/s | 3 ÷ 1 | p50 / p99 ms, 1 instance | p50 / p99 ms, 3 instances | server CPU µs/call, 1 / 3 |",
        "| --- | ---: | ---: | ---: | --- | --- | --- |",
        ...throughput
      ]
    })
  }

  const store = STORE_KINDS.flatMap((kind) => {
    const variant = fleet.find((r) => kind.test(r.variant) && r.impl === "memory")?.variant
    if (variant === undefined) return []
    const at = (impl: string, metric: (m: string) => boolean) => find(variant, impl, metric)?.median ?? ""
    const ms = (m: string) => m === "ms"
    const cpu = (m: string) => m.startsWith("server CPU")
    return [`| ${variant} | ${at("memory", ms)} → ${at("redis", ms)} | ${at("memory", cpu)} → ${at("redis", cpu)} |`]
  })
  if (store.length > 0) {
    tables.push({
      title: "Fleet store cost",
      rows: ["| per request or event | p50 ms, memory → Redis | server CPU µs, memory → Redis |", "| --- | --- | --- |", ...store]
    })
  }

  const resume = RESUME.flatMap((variant) => {
    const row = fleet.find((r) => r.variant === variant)
    if (row === undefined) return []
    const shown = (figure: string) => row.metric === "count" ? String(Math.round(Number(figure))) : `${figure} ${row.metric}`
    return [`| ${variant} | ${shown(row.median)} | ${shown(row.min)} | ${shown(row.max)} |`]
  })
  if (resume.length > 0) {
    tables.push({
      title: "Fleet resumption",
      rows: ["| across the runs | median | min | max |", "| --- | ---: | ---: | ---: |", ...resume]
    })
  }
  return tables
}
