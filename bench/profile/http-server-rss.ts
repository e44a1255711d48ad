/**
 * What one HTTP bench server holds before and after answering large tool
 * results: starts the server with `--bytes N`, reads VmRSS / VmHWM from /proc
 * once it listens, has the raw client make `calls` `tools/call`s, and reads
 * them again. Separates a server's baseline (its modules, the prepared
 * result) from what a message costs it:
 *
 *   BENCH_BUILD=dist npx node bench/profile/http-server-rss.ts bench/http/server-ours.ts [json|sse] [bytes=10485760] [calls=3]
 */
import { execFileSync } from "node:child_process"
import { resolve } from "node:path"
import { memoryLine, startListening } from "./listening-server.ts"

const [script = "bench/http/server-ours.ts", mode = "json", bytes = String(10 * 1024 * 1024), calls = "3"] = process.argv.slice(2)
const { process: server, pid, url } = await startListening(resolve(script), ["--mode", mode, "--bytes", bytes])
const memory = () => memoryLine(pid)
const before = memory()
const job = { client: "raw", target: { kind: "http", url }, op: "callTool", concurrency: 1, total: Number(calls), warmup: 0 }
execFileSync(process.execPath, [new URL("../http/run-client.ts", import.meta.url).pathname, JSON.stringify(job)])
console.log(`${script} --mode ${mode} --bytes ${bytes}: listening ${before}; after ${calls} calls ${memory()}`)
server.kill("SIGTERM")
process.exit(0)
