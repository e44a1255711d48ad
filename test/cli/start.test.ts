/**
 * `npm start` (src/cli/start.ts) as a user runs it: a child process that must
 * exit 0, print the summary table, and leave no process behind.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { isAlive } from "../fixtures/stdio-helpers.ts"

const start = fileURLToPath(new URL("../../src/cli/start.ts", import.meta.url))

const runStart = (env: Record<string, string> = {}) =>
  Effect.promise(() =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [start], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } })
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (d: string) => void (stdout += d))
      child.stderr.setEncoding("utf8").on("data", (d: string) => void (stderr += d))
      child.on("close", (code) => resolve({ code, stdout, stderr }))
    })
  )

describe("npm start", () => {
  it.live("runs the example server over HTTP and stdio in both eras, calls countdown with progress, prints the summary, cleans up", () =>
    Effect.gen(function*() {
      const { code, stderr, stdout } = yield* runStart()
      expect(stderr).toBe("")
      expect(code).toBe(0)
      const lines = stdout.split("\n")

      // Each transport in each era: connection and inspection, five progress lines, the result.
      const protocols = { handshake: "2025-11-25", stateless: "2026-07-28" }
      for (const transport of ["http", "stdio"]) {
        for (const [era, protocol] of Object.entries(protocols)) {
          const tag = `[${transport} ${era}]`
          expect(lines).toContainEqual(
            expect.stringMatching(new RegExp(`^\\[${transport} ${era}\\] effect-mcp-example 0\\.1\\.0, protocol ${protocol}, connected in \\d+ ms$`))
          )
          expect(lines).toContain(`${tag} tools: echo, add, countdown`)
          const progress = lines.filter((l) => l.startsWith(`${tag} progress `))
          expect(progress).toEqual([1, 2, 3, 4, 5].map((i) => `${tag} progress ${i}/5  step ${i} of 5, ${5 - i} to go`))
        }
      }

      // The table: a header and one row per transport and era, the era and its protocol shown.
      const header = lines.findIndex((l) => /^transport\s+era\s+protocol\s+connect\s+tools\s+call\s+progress\s+result$/.test(l))
      expect(header).toBeGreaterThanOrEqual(0)
      const row = (transport: string, era: string, protocol: string) =>
        new RegExp(`^${transport}\\s+${era}\\s+${protocol}\\s+\\d+ ms\\s+3\\s+\\d+ ms\\s+5\\s+countdown finished after 5 steps$`)
      expect(lines.slice(header + 1, header + 5)).toEqual([
        expect.stringMatching(row("http", "handshake", "2025-11-25")),
        expect.stringMatching(row("http", "stateless", "2026-07-28")),
        expect.stringMatching(row("stdio", "handshake", "2025-11-25")),
        expect.stringMatching(row("stdio", "stateless", "2026-07-28"))
      ])
      expect(stdout).toMatch(/^ok: both transports in both eras torn down/m)

      // Both stdio children are gone.
      const pids = [...stdout.matchAll(/^\[stdio (?:handshake|stateless)\] child pid (\d+)$/gm)].map((m) => Number(m[1]))
      expect(pids).toHaveLength(2)
      for (const pid of pids) expect(isAlive(pid)).toBe(false)
    }), 90_000)

  it.live("a failure is one line on stderr and exit 1", () =>
    Effect.gen(function*() {
      // A stdio child that exits at once: the handshake over stdio fails.
      const { code, stderr } = yield* runStart({ EFFECT_MCP_START_STDIO_ENTRY: "-e" })
      expect(code).toBe(1)
      expect(stderr.trim().split("\n")).toHaveLength(1)
      expect(stderr).toMatch(/^npm start: /)
    }), 90_000)
})
