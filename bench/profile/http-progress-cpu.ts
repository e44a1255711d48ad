/**
 * Our HTTP server's CPU per `tools/call` with `n` progress notifications per
 * call, in a 2025-11-25 session: starts bench/http/server-ours.ts with
 * `--progress n` (JSON mode: a call that reports progress gets an SSE
 * answer), drives it with one undici Pool at concurrency `c` (every call
 * carries a progress token), and reads the server's CPU from /proc after a
 * 5,000-call warm-up. With a directory as the last argument the server runs
 * under `--cpu-prof` and writes its profile there.
 *
 *   npx node bench/profile/http-progress-cpu.ts [progress=1] [calls=20000] [concurrency=8] [profileDir]
 */
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { createInterface } from "node:readline"
import { mcpPoster, openSession } from "./mcp-post.ts"

const [progress = "1", totalText = "20000", concText = "8", profileDir] = process.argv.slice(2)
const total = Number(totalText)
const concurrency = Number(concText)
const flags = profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`]
const script = new URL("../http/server-ours.ts", import.meta.url).pathname
const child = spawn(process.execPath, [...flags, script, "--transport", "http", "--mode", "json", "--progress", progress], {
  stdio: ["ignore", "pipe", "inherit"],
  env: { ...process.env, BENCH_BUILD: process.env.BENCH_BUILD ?? "dist" }
})
const url = await new Promise<string>((ok) =>
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const found = /http:\/\/\S+/.exec(line)
    if (found !== null) ok(found[0])
  })
)
const { close, post } = mcpPoster(url, concurrency)
const session = await openSession(post, "progress-cpu")

let nextId = 0
const drive = async (n: number) => {
  let left = n
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (left-- > 0) {
      const id = ++nextId
      const params = { name: "echo", arguments: { text: "hi" }, _meta: { progressToken: id } }
      const res = await post({ jsonrpc: "2.0", id, method: "tools/call", params }, session)
      if (!res.text.includes("\"result\"")) throw new Error(res.text)
    }
  }))
}
const TICK_US = 10_000
const serverCpuUs = () => {
  const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * TICK_US
}
await drive(5000)
const cpuBefore = serverCpuUs()
const started = performance.now()
await drive(total)
const seconds = (performance.now() - started) / 1000
console.log(
  `progress ${progress} c${concurrency}: server CPU ${((serverCpuUs() - cpuBefore) / total).toFixed(0)} µs per call, ${(total / seconds).toFixed(0)} req/s`
)
await close()
child.kill("SIGINT")
await new Promise((exited) => child.on("exit", exited))
