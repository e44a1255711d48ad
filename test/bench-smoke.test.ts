/**
 * Smoke test of the benchmark harness: `bench/main.ts` in smoke mode (tiny
 * sizes, one run) over every workload in `bench/workloads/` must finish
 * without a failed workload and report a row for every implementation.
 * Correctness only: nothing here looks at the speed or at a target's status.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import type { Row, Target } from "../bench/workload.ts"
import * as RedisServer from "./fixtures/RedisServer.ts"

interface Report {
  readonly workloads: ReadonlyArray<{
    readonly file: string
    readonly name: string | undefined
    readonly error: string | undefined
    readonly rows: ReadonlyArray<Row>
    readonly targets: ReadonlyArray<Target>
  }>
}

const harness = new URL("../bench/main.ts", import.meta.url).pathname
const workloadFiles = readdirSync(new URL("../bench/workloads/", import.meta.url))
  .filter((file) => file.endsWith(".ts"))
  .map((file) => basename(file, ".ts"))

/** The implementations each of the workloads in this list must report, in every one of its variants. */
const expected: Record<string, { readonly impls: ReadonlyArray<string>; readonly variants: ReadonlyArray<string> }> = {
  "stdio-client": {
    impls: ["raw", "ours", "ours-mcp", "sdk", "sdk-transport", "effect-ai"],
    variants: ["tools/call c1", "tools/call c32"]
  },
  "stdio-server": {
    impls: ["raw", "ours", "ours-handler", "sdk"],
    variants: ["tools/call c1", "tools/call c32", "ping c1", "ping c32"]
  },
  "in-flight": {
    impls: ["raw", "ours", "sdk"],
    variants: ["client heap (200)", "server heap (200)", "server first call → all answered (200)"]
  },
  "stateless-http": {
    impls: ["ours", "ours-auto", "sdk2", "effect-ai", "fetch"],
    variants: ["minimal tools/call c32"]
  },
  "stateless-server": {
    impls: ["ours", "sdk2", "effect-ai", "minimal"],
    variants: ["tools/call c1", "tools/call c32", "tools/call c32 main thread", "idle heap", "in flight heap (20)"]
  },
  tasks: {
    impls: ["ours", "sdk2"],
    variants: [
      "work 0 ms, plain call",
      "work 0 ms, as a task",
      "work 20 ms, plain call",
      "work 20 ms, as a task",
      "heap per 10,000 live tasks"
    ]
  },
  fleet: {
    impls: ["1 instance", "3 instances"],
    variants: ["stateless tools/call wait 20 ms, 2 slots per instance"]
  },
  sweep: {
    impls: ["raw", "ours", "sdk", "sdk2", "ours→ours"],
    variants: ["2025-11-25 c8 p0", "2025-11-25 c32 p0", "2025-11-25 c8 p20"]
  },
  "cold-start": {
    impls: ["raw", "ours", "ours-mcp", "sdk", "effect-ai"],
    variants: ["process start → first result", "import", "open → first result", "teardown"]
  }
}

/**
 * Every workload unless BENCH_WORKLOADS narrows it (while developing one).
 * The fleet's needs a real `redis-server`; without one it is left out, as the
 * other Redis tests skip (under `CI=true` a missing binary fails instead).
 */
const runnable = RedisServer.present ? workloadFiles : workloadFiles.filter((file) => file !== "fleet")
const selection = process.env.BENCH_WORKLOADS ?? (RedisServer.present ? "" : runnable.join(","))
const HARNESS_TIMEOUT_MS = 450_000

/**
 * Runs the harness in its own process group, so that on a timeout the
 * servers and clients it started go with it.
 */
const runHarness = (env: Record<string, string>): Promise<string> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [harness], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (s: string) => void (stdout += s))
    child.stderr.setEncoding("utf8").on("data", (s: string) => void (stderr += s))
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL")
      } catch {
        // already gone
      }
    }, HARNESS_TIMEOUT_MS)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      if (code === 0) resolve(stdout)
      else reject(new Error(`bench/main.ts exited with ${code ?? signal}\n${stderr.slice(-4000)}\n${stdout.slice(-4000)}`))
    })
  })

const matches = (pattern: string, variant: string) =>
  pattern.includes("*")
    ? new RegExp(`^${pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`).test(variant)
    : pattern === variant

describe("bench/main.ts (smoke)", () => {
  it("runs every workload and reports every implementation", async () => {
    const dir = mkdtempSync(join(tmpdir(), "bench-smoke-"))
    const json = join(dir, "report.json")
    try {
      const stdout = await runHarness({ BENCH_SMOKE: "1", BENCH_RUNS: "1", BENCH_JSON: json, BENCH_WORKLOADS: selection })
      expect(stdout).toContain("## Benchmark report")
      expect(stdout).toMatch(/- machine: \d+ cores, .+, Node v\d+/)
      expect(stdout).toContain("### Targets")

      const report = JSON.parse(readFileSync(json, "utf8")) as Report
      if (process.env.BENCH_WORKLOADS === undefined) {
        expect(report.workloads.map((w) => w.file).sort()).toEqual([...runnable].sort())
      }
      const tableRows = stdout.split("\n").filter((line) => /^\| [^-|][^|]* \| /.test(line) && !line.startsWith("| workload"))
      let rowCount = 0
      for (const w of report.workloads) {
        expect(w.error, w.file).toBeUndefined()
        expect(w.rows.length, w.file).toBeGreaterThan(0)
        rowCount += w.rows.length
        for (const row of w.rows) {
          expect(Number.isFinite(row.median), `${w.file} ${row.variant} ${row.impl}`).toBe(true)
          expect(row.runs).toBeGreaterThanOrEqual(1)
        }
        // Every implementation a target names has a row in a variant the target covers.
        for (const target of w.targets) {
          for (const impl of [target.ours, target.peer]) {
            const found = w.rows.some((row) =>
              row.workload === target.workload && row.impl === impl && matches(target.variant, row.variant)
            )
            expect(found, `${w.file}: no row for ${impl} in ${target.variant}`).toBe(true)
          }
        }
        const wanted = expected[w.file]
        if (wanted !== undefined) {
          for (const variant of wanted.variants) {
            const impls = new Set(w.rows.filter((row) => row.variant === variant).map((row) => row.impl))
            expect([...impls].sort(), `${w.file} ${variant}`).toEqual(expect.arrayContaining([...wanted.impls].sort()))
          }
        }
      }
      // The sweep's floor and our client see every progress notification the server sends.
      for (const row of report.workloads.find((w) => w.file === "sweep")?.rows ?? []) {
        if (row.metric !== "progress/call" || !["raw", "ours", "ours→ours"].includes(row.impl)) continue
        expect(row.median, `${row.workload} ${row.variant} ${row.impl}`).toBe(Number(row.variant.split(" p").pop()))
      }
      // Rows of the workload table plus one line per checked target.
      expect(tableRows.length).toBeGreaterThanOrEqual(rowCount)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 510_000)
})
