/**
 * Same-run comparison of stdio clients by CPU time per request (less
 * sensitive to machine load than req/s) and req/s, runs interleaved:
 *
 *   npx node bench/profile/ab.ts <runs> <op> <concurrency> <total> <client> [client...]
 *
 * A client is a name known to bench/clients/index.ts or the path of a module
 * with the same `make` (e.g. a build of another commit under /tmp/before).
 * Prints the median (min–max) of each figure and each client's ratio to the first.
 */
import { execFileSync } from "node:child_process"

const [runsText = "3", op = "callTool", concurrency = "32", total = "20000", ...clients] = process.argv.slice(2)
const runs = Number(runsText)
const runOne = new URL("../run-one.ts", import.meta.url).pathname
const results = new Map<string, Array<{ rps: number; cpuUs: number; coldMs: number }>>()
for (let r = 0; r < runs; r++) {
  for (const client of clients) {
    const out = execFileSync(process.execPath, [runOne, client, op, concurrency, total], { encoding: "utf8" })
    const line = JSON.parse(out.trim().split("\n").at(-1)!)
    results.set(client, [...(results.get(client) ?? []), line])
  }
}
const median = (xs: Array<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}
const fmt = (xs: Array<number>, digits: number) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`
const base = results.get(clients[0]!)!
console.log(`${op} c${concurrency} x${total}, ${runs} runs, load ${(await import("node:os")).loadavg().map((l) => l.toFixed(2)).join(" ")}`)
for (const client of clients) {
  const rows = results.get(client)!
  const cpu = rows.map((x) => x.cpuUs)
  const rps = rows.map((x) => x.rps)
  console.log(
    `${client.padEnd(40)} cpu µs/req ${fmt(cpu, 1).padEnd(22)} ${(median(base.map((x) => x.cpuUs)) / median(cpu)).toFixed(2)}x` +
      `   req/s ${fmt(rps, 0).padEnd(26)} ${(median(rps) / median(base.map((x) => x.rps))).toFixed(2)}x` +
      `   cold ms ${median(rows.map((x) => x.coldMs)).toFixed(0)}`
  )
}
