/**
 * Where a cold `McpClient` close spends its time: one cold start as
 * bench/cold-start-client.ts makes it (fresh process, open, one call), then
 * `close()`, under `--cpu-prof` at a fine interval; prints the self time of
 * the functions sampled between close's start and its end (monotonic clock,
 * the profiler's own), by function and by file.
 *
 *   npx node bench/profile/teardown-window.ts [client=ours-mcp] [top=30]
 *
 * BENCH_STDIO_UNTRACKED=1 and BENCH_BUILD=dist apply as in the bench clients.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const [client = "ours-mcp", topText = "30"] = process.argv.slice(2)
if (process.env.TEARDOWN_CHILD === "1") {
  const { loaderFor } = await import("../clients/index.ts")
  const module = await (loaderFor(client))()
  const c = await module.make(process.execPath, [new URL("../raw-responder.ts", import.meta.url).pathname])
  await c.callTool()
  const start = process.hrtime.bigint() / 1000n
  await c.close()
  const end = process.hrtime.bigint() / 1000n
  writeFileSync(process.env.TEARDOWN_WINDOW!, JSON.stringify({ start: Number(start), end: Number(end) }))
  process.exit(0)
}
const dir = mkdtempSync(join(tmpdir(), "teardown-prof-"))
const windowFile = join(dir, "window.json")
execFileSync(
  process.execPath,
  ["--cpu-prof", "--cpu-prof-interval=50", `--cpu-prof-dir=${dir}`, new URL(import.meta.url).pathname, client],
  { env: { ...process.env, TEARDOWN_CHILD: "1", TEARDOWN_WINDOW: windowFile }, stdio: "inherit" }
)
const window = JSON.parse(readFileSync(windowFile, "utf8")) as { start: number; end: number }
const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))!
const profile = JSON.parse(readFileSync(join(dir, file), "utf8")) as {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>
  samples: Array<number>
  timeDeltas: Array<number>
  startTime: number
}
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const short = (url: string) => url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*?\/(src|dist|bench)\//, "$1/")
const byFunction = new Map<string, number>()
const byFile = new Map<string, number>()
let t = profile.startTime
let inWindow = 0
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0
  t += dt
  if (t < window.start || t > window.end) return
  inWindow += dt
  const n = byId.get(id)!
  const fn = `${n.callFrame.functionName || "(anon)"} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + dt)
  const f = short(n.callFrame.url) || n.callFrame.functionName
  byFile.set(f, (byFile.get(f) ?? 0) + dt)
})
const top = Number(topText)
console.log(`close: ${((window.end - window.start) / 1000).toFixed(2)} ms, sampled ${(inWindow / 1000).toFixed(2)} ms`)
for (const [title, m] of [["by function", byFunction], ["by file", byFile]] as const) {
  console.log(`\n-- ${title}`)
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${(us / 1000).toFixed(2).padStart(7)} ms  ${k}`)
}
