/**
 * What one HTTP bench server holds before and after answering large tool
 * results: starts the server with `--bytes N`, reads VmRSS / VmHWM from /proc
 * once it listens, has the raw client make `calls` `tools/call`s, and reads
 * them again. Separates a server's baseline (its modules, the prepared
 * result) from what a message costs it:
 *
 *   BENCH_BUILD=dist npx node bench/profile/http-server-rss.ts bench/http/server-ours.ts [json|sse] [bytes=10485760] [calls=3]
 */
import { execFileSync, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"

const [script = "bench/http/server-ours.ts", mode = "json", bytes = String(10 * 1024 * 1024), calls = "3"] = process.argv.slice(2)
const server = spawn(process.execPath, [resolve(script), "--mode", mode, "--bytes", bytes], {
  stdio: ["ignore", "pipe", "inherit"]
})
const url = await new Promise<string>((done, fail) => {
  let out = ""
  server.stdout.setEncoding("utf8")
  server.stdout.on("data", (text: string) => {
    out += text
    const found = /http:\/\/\S+/.exec(out)
    if (found !== null) done(found[0])
  })
  server.on("exit", (code) => fail(new Error(`${script} exited with ${code} before listening`)))
})
const memory = () => {
  const status = readFileSync(`/proc/${server.pid}/status`, "utf8")
  const mib = (field: string) => (Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]) / 1024).toFixed(0)
  return `RSS ${mib("VmRSS")} MiB, peak ${mib("VmHWM")} MiB`
}
const before = memory()
const job = { client: "raw", target: { kind: "http", url }, op: "callTool", concurrency: 1, total: Number(calls), warmup: 0 }
execFileSync(process.execPath, [new URL("../http/run-client.ts", import.meta.url).pathname, JSON.stringify(job)])
console.log(`${script} --mode ${mode} --bytes ${bytes}: listening ${before}; after ${calls} calls ${memory()}`)
server.kill("SIGTERM")
process.exit(0)
