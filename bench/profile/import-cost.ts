/**
 * Wall time and CPU time (user + system, all threads) to import a module in a
 * fresh Node process (median of N), and the process's RSS once it has (median,
 * MiB). On a loaded machine the CPU time moves much less than the wall time:
 *   npx node bench/profile/import-cost.ts [runs=5] <specifier> [specifier...]
 * A specifier is a package subpath (`effect`, `effect/Effect`) or a path to a .ts file.
 */
import { execFileSync } from "node:child_process"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"

const [runsText = "5", ...specs] = process.argv.slice(2)
const runs = Number(runsText)
for (const spec of specs) {
  const target = spec.endsWith(".ts") ? pathToFileURL(resolve(spec)).href : spec
  const times: Array<number> = []
  const cpu: Array<number> = []
  const rss: Array<number> = []
  for (let i = 0; i < runs; i++) {
    const out = execFileSync(process.execPath, [
      "--input-type=module",
      "-e",
      `const t0 = performance.now(); const c0 = process.cpuUsage(); await import(${
        JSON.stringify(target)
      }); const c = process.cpuUsage(c0); console.log(performance.now() - t0, process.memoryUsage().rss, (c.user + c.system) / 1000)`
    ], { encoding: "utf8" })
    const [ms, bytes, cpuMs] = out.trim().split(" ").map(Number)
    times.push(ms!)
    cpu.push(cpuMs!)
    rss.push(bytes! / 1048576)
  }
  times.sort((a, b) => a - b)
  cpu.sort((a, b) => a - b)
  rss.sort((a, b) => a - b)
  console.log(
    `${spec.padEnd(50)} median ${times[Math.floor(runs / 2)]!.toFixed(0)} ms (min ${times[0]!.toFixed(0)}, max ${
      times[runs - 1]!.toFixed(0)
    }), CPU ${cpu[Math.floor(runs / 2)]!.toFixed(0)} ms, RSS ${rss[Math.floor(runs / 2)]!.toFixed(0)} MiB`
  )
}
