/**
 * Same-run comparison of HTTP clients by this client process's CPU µs per
 * `tools/call`, against the bare `node:http` responder (`server-raw.ts`, so
 * the server's cost does not count), rounds interleaved, medians:
 *
 *   npx node bench/http/client-cpu-ab.ts [rounds=5] [concurrency=32] [total=4000] variant...
 *
 * A variant is `client:http[@root]` (see `client-cpu.ts`): e.g.
 * `transport:undici@/tmp/before/src`, `mcp:fetch`, `effect-http:undici`, `raw:-`;
 * without `@root` this checkout's `src/`. BENCH_HTTP_MODES (json,sse) and
 * BENCH_PROTOCOLS (2025-11-25,2026-07-28) pick the answers and eras.
 */
import { execFileSync } from "node:child_process"
import { startServer, serverScript } from "./harness.ts"
import type { Job } from "./client-cpu.ts"

const [roundsText = "5", concurrencyText = "32", totalText = "4000", ...variants] = process.argv.slice(2)
const rounds = Number(roundsText)
const script = new URL("./client-cpu.ts", import.meta.url).pathname
const ownSrc = new URL("../../src", import.meta.url).pathname
const list = (name: string, fallback: string) => (process.env[name] ?? fallback).split(",").filter((s) => s !== "")
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!

for (const mode of list("BENCH_HTTP_MODES", "json,sse")) {
  const server = await startServer(serverScript.raw, ["--mode", mode])
  try {
    for (const protocol of list("BENCH_PROTOCOLS", "2025-11-25,2026-07-28") as Array<Job["protocol"]>) {
      const cpu = new Map<string, Array<number>>()
      for (let r = 0; r < rounds; r++) {
        for (const variant of variants) {
          const [spec, root = ownSrc] = variant.split("@") as [string, string | undefined]
          const [client, http = "undici"] = spec.split(":") as [Job["client"], Job["http"]]
          const job: Job = {
            root,
            client,
            http,
            protocol,
            url: server.url,
            concurrency: Number(concurrencyText),
            total: Number(totalText),
            warmup: 500
          }
          const out = execFileSync(process.execPath, [script, JSON.stringify(job)], { encoding: "utf8" })
          const line = JSON.parse(out.trim().split("\n").at(-1)!) as { cpuUs: number }
          cpu.set(variant, [...(cpu.get(variant) ?? []), line.cpuUs])
        }
      }
      console.log(`\n${mode} ${protocol} c${concurrencyText} x${totalText}, ${rounds} rounds`)
      const base = median(cpu.get(variants[0]!)!)
      for (const variant of variants) {
        const xs = cpu.get(variant)!
        const m = median(xs)
        console.log(
          `${variant.padEnd(50)} cpu µs/req ${m.toFixed(1).padStart(7)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})  ${(m / base).toFixed(2)}x of first`
        )
      }
    }
  } finally {
    await server.stop()
  }
}
