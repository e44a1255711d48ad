/**
 * What Node's compile cache, which the command line turns on for itself,
 * saves a `call` over HTTP: the example server started once
 * (`serve --http`), then `call <url> add a=1 b=2` run `runs` times with the
 * cache and `runs` times with `NODE_DISABLE_COMPILE_CACHE=1`, interleaved,
 * each under `/usr/bin/time`. The cache lives in a temporary folder of its
 * own (`TMPDIR`), filled by one run before the measured ones. Prints the
 * medians of wall time and CPU (user + system) per mode. Needs `npm run build`.
 *
 *   npx node bench/profile/cli-compile-cache.ts [runs=15]
 */
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { createInterface } from "node:readline"

const runs = Number(process.argv[2] ?? "15")
const main = resolve(import.meta.dirname, "../../dist/cli/main.js")
const folder = mkdtempSync(join(tmpdir(), "cli-compile-cache-"))
const { NODE_COMPILE_CACHE: _, ...inherited } = process.env
const env = { ...inherited, TMPDIR: folder }

// The example server prints `listening URL (eras: …)` on stderr.
const server = spawn(process.execPath, [main, "serve", "--http", "--port", "0"], { env, stdio: ["ignore", "ignore", "pipe"] })
const url = await new Promise<string>((ok) =>
  createInterface({ input: server.stderr! }).on("line", (line) => {
    const found = /listening (http:\S+)/.exec(line)
    if (found !== null) ok(found[1]!)
  })
)

interface Sample {
  readonly wall: number
  readonly cpu: number
}

const call = (disabled: boolean): Sample => {
  // /usr/bin/time writes its line on stderr after the command's own; the command's output is dropped.
  const { status, stderr } = spawnSync("/usr/bin/time", ["-f", "TIME %e %U %S", process.execPath, main, "call", url, "add", "a=1", "b=2"], {
    env: disabled ? { ...env, NODE_DISABLE_COMPILE_CACHE: "1" } : env,
    encoding: "utf8",
    stdio: ["ignore", "ignore", "pipe"]
  })
  if (status !== 0) throw new Error(`the call failed (${status}): ${stderr}`)
  const line = stderr.split("\n").find((l) => l.startsWith("TIME "))
  if (line === undefined) throw new Error(`no timing from /usr/bin/time: ${stderr}`)
  const [wall, user, system] = line.slice("TIME ".length).split(" ").map(Number)
  return { wall: wall!, cpu: user! + system! }
}

const median = (values: Array<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

try {
  call(false) // fills the cache
  const on: Array<Sample> = []
  const off: Array<Sample> = []
  for (let i = 0; i < runs; i++) {
    on.push(call(false))
    off.push(call(true))
  }
  for (const [mode, samples] of [["cache", on], ["NODE_DISABLE_COMPILE_CACHE=1", off]] as const) {
    console.log(JSON.stringify({
      mode,
      runs,
      wallMs: Math.round(median(samples.map((s) => s.wall)) * 1000),
      cpuMs: Math.round(median(samples.map((s) => s.cpu)) * 1000)
    }))
  }
} finally {
  // The server writes to the cache as it exits: the folder goes after it.
  await new Promise((ok) => server.once("exit", ok).kill("SIGTERM"))
  rmSync(folder, { recursive: true, force: true })
}
