/**
 * Where the HTTP pair's throughput is bounded: client→server pairs at one
 * concurrency, each client a fresh process (bench/http/client-cpu.ts), rounds
 * interleaved, medians of req/s, the client's CPU µs per call and the
 * server's (from `/proc`, over the client's whole run, warm-up included).
 *
 *   npx node bench/profile/http-pair-floor.ts [rounds=5] [concurrency=32] [total=2000] [protocols=2025-11-25,2026-07-28]
 *
 * Pairs: `raw→raw` (undici's Pool and `JSON.parse` against the bare
 * `node:http` responder), `effect-http→raw` (`effect/http`'s `HttpClient` on
 * the undici layer doing the same), `effect-http→ours` (that client against
 * our `McpServer` on `HttpServerTransport`), `transport→ours` (our Streamable
 * HTTP client transport) and `mcp→ours` (`McpClient`, what the sweep's
 * `ours→ours` is). On two cores the client and the server each have about
 * one, so a pair runs at the pace of its slower side.
 */
import { execFileSync } from "node:child_process"
import { processCpuUs } from "../child.ts"
import { type RunningServer, serverScript, startServer } from "../http/harness.ts"
import type { Job } from "../http/client-cpu.ts"

const [roundsText = "5", concText = "32", totalText = "2000", protocolsText = "2025-11-25,2026-07-28"] = process.argv
  .slice(2)
const rounds = Number(roundsText), concurrency = Number(concText), total = Number(totalText)
const warmup = Math.max(300, Math.round(total / 4))
const root = new URL(`../../${process.env.BENCH_BUILD === "dist" ? "dist" : "src"}`, import.meta.url).pathname
const script = new URL("../http/client-cpu.ts", import.meta.url).pathname
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!

const PAIRS: ReadonlyArray<readonly [Job["client"], "raw" | "ours"]> = [
  ["raw", "raw"],
  ["effect-http", "raw"],
  ["effect-http", "ours"],
  ["transport", "ours"],
  ["mcp", "ours"]
]

const servers: Record<"raw" | "ours", RunningServer> = {
  raw: await startServer(serverScript.raw, ["--mode", "json"]),
  ours: await startServer(serverScript.ours, ["--transport", "http", "--mode", "json"])
}
try {
  for (const protocol of protocolsText.split(",") as Array<Job["protocol"]>) {
    const seen = new Map<string, Array<{ rps: number; clientUs: number; serverUs: number }>>()
    for (let r = 0; r < rounds; r++) {
      for (const [client, server] of PAIRS) {
        const { url, pid } = servers[server]
        const job: Job = { root, client, http: "undici", protocol, url, concurrency, total, warmup }
        const before = await processCpuUs(pid)
        const out = execFileSync(process.execPath, [script, JSON.stringify(job)], { encoding: "utf8" })
        const serverUs = ((await processCpuUs(pid)) - before) / (total + warmup)
        const line = JSON.parse(out.trim().split("\n").at(-1)!) as { rps: number; cpuUs: number }
        const name = `${client}→${server}`
        seen.set(name, [...(seen.get(name) ?? []), { rps: line.rps, clientUs: line.cpuUs, serverUs }])
      }
    }
    const base = median(seen.get("raw→raw")!.map((x) => x.rps))
    console.log(`\n${protocol} c${concurrency} x${total}, ${rounds} rounds, medians`)
    for (const [name, xs] of seen) {
      const rps = median(xs.map((x) => x.rps))
      console.log(
        `${name.padEnd(18)} req/s ${rps.toFixed(0).padStart(6)} (${(rps / base).toFixed(2)}× raw→raw)` +
          `  client µs/call ${median(xs.map((x) => x.clientUs)).toFixed(1).padStart(6)}` +
          `  server µs/call ${median(xs.map((x) => x.serverUs)).toFixed(1).padStart(6)}`
      )
    }
  }
} finally {
  await Promise.all([servers.raw.stop(), servers.ours.stop()])
}
