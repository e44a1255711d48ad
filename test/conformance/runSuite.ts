import { NodeServices } from "@effect/platform-node"
import { Effect, Stream } from "effect"
import { ChildProcess } from "effect/process"

const runner = new URL("../../conformance/run-server.ts", import.meta.url).pathname

/**
 * Runs `conformance/run-server.ts --only <suite>` (both requirement lists): its
 * exit code, its summary line per list (`"2025-11-25"` → `server 2025-11-25:
 * …`; `"extensions"` → `client extensions (auth): …`), and its output when it failed.
 */
export const runSuite = (suite: "server" | "client") =>
  Effect.scoped(Effect.gen(function*() {
    const handle = yield* ChildProcess.make(process.execPath, [runner, "--only", suite], { forceKillAfter: "2 seconds" })
    const [stdout, stderr] = yield* Effect.all([
      handle.stdout.pipe(Stream.decodeText(), Stream.mkString),
      handle.stderr.pipe(Stream.decodeText(), Stream.mkString)
    ], { concurrency: 2 })
    const code = Number(yield* handle.exitCode)
    const lines: Record<string, string> = {}
    for (const line of stdout.split("\n")) {
      // `client extensions (auth): …` is keyed `extensions`.
      const m = new RegExp(`^${suite} (\\S+)(?: \\([^)]*\\))?: `).exec(line)
      if (m !== null) lines[m[1]!] = line
    }
    return { code, lines, output: code === 0 ? "" : stdout + stderr }
  })).pipe(Effect.provide(NodeServices.layer))
