/**
 * Quick start, measured from outside as whole processes: a one-shot script
 * spawns a stdio server, runs the handshake, lists the tools, calls `add`,
 * prints the result and exits. Three scripts do the same:
 * - `ours-subpath`: README.md's first quick start, read from README.md at run
 *   time (`bench/quick-start/scripts.ts`), only its server command replaced;
 * - `ours-barrel`: the same program on the barrels `effect`,
 *   `@effect/platform-node` and `effect-mcp-transport`;
 * - `sdk`: the official SDK's client (`bench/quick-start/sdk-client.ts`).
 * Our scripts import the package by name, which resolves to the built `dist/`
 * through package.json "exports", as in a user's project.
 *
 * The server is the same for all three: the project's example server over
 * stdio, `node dist/cli/example-server-stdio.js` (what `effect-mcp-transport
 * serve --stdio` runs, without the CLI's argument parsing). README.md spawns
 * it through `npx`, whose own start-up (npm's command line) costs more than a
 * client and varies widely on a loaded machine: it would swamp the clients.
 *
 * Figures per client process: wall time from spawn to exit, as seen by this
 * process; its CPU time (user + system, its own, not the server's) and its
 * peak RSS, both from `process.resourceUsage()` at exit, printed by a module
 * preloaded with `--import` (`/usr/bin/time` would report the larger of the
 * client's and the server's peak, since the client waits for its child).
 * Runs of the three are interleaved, after one unmeasured round.
 *
 * Environment: BENCH_QUICK_START_CLIENTS (ours-subpath,ours-barrel,sdk).
 */
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { envList, groupRows, interleave, mapLimited, parallelism, Samples } from "../child.ts"
import { readmeQuickStart, toBarrels, withServer } from "../quick-start/scripts.ts"
import type { Target, Workload } from "../workload.ts"

const NAME = "quick start"
const root = fileURLToPath(new URL("../../", import.meta.url))
const exampleServer = fileURLToPath(new URL("../../dist/cli/example-server-stdio.js", import.meta.url))
const sdkClient = fileURLToPath(new URL("../quick-start/sdk-client.ts", import.meta.url))


const WALL = "wall time"
const CPU = "client CPU time"
const RSS = "client peak RSS"

/** Preloaded into every client: its own CPU time and peak RSS on stderr as it exits. */
const USAGE_MARK = "quick-start-usage "
const usageReporter = `data:text/javascript,${
  encodeURIComponent(
    `import { writeSync } from "node:fs"
process.on("exit", () => {
  const u = process.resourceUsage()
  writeSync(2, "\\n${USAGE_MARK}" + JSON.stringify({ cpuUs: u.userCPUTime + u.systemCPUTime, maxRssKiB: u.maxRSS }) + "\\n")
})`
  )
}`

/** (a) within 1.2× the SDK's wall time: the ratio is oriented so that bigger is better for ours. */
const targets: ReadonlyArray<Target> = [
  { workload: NAME, variant: WALL, ours: "ours-subpath", peer: "sdk", atLeast: 1 / 1.2 }
]

interface Usage {
  readonly wallMs: number
  readonly cpuUs: number
  readonly maxRssKiB: number
}

/** One client process, spawn to exit; it must print the tool's result. */
const runClient = (file: string, args: ReadonlyArray<string>): Promise<Usage> =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, ["--import", usageReporter, file, ...args], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (s: string) => void (stdout += s))
    child.stderr.setEncoding("utf8").on("data", (s: string) => void (stderr += s))
    let wallMs = Number.NaN
    child.on("exit", () => void (wallMs = performance.now() - started))
    child.on("error", reject)
    child.on("close", (code, signal) => {
      const line = stderr.split("\n").find((l) => l.startsWith(USAGE_MARK))
      if (code !== 0 || line === undefined || !/sum: 5\b/.test(stdout)) {
        reject(new Error(`${file} ${args.join(" ")}: exit ${code ?? signal}\n${stdout.slice(-1000)}\n${stderr.slice(-2000)}`))
        return
      }
      const usage = JSON.parse(line.slice(USAGE_MARK.length)) as { cpuUs: number; maxRssKiB: number }
      resolve({ wallMs, ...usage })
    })
  })

export const workload: Workload = {
  name: NAME,
  targets,
  run: async ({ runs, smoke }) => {
    const clients = envList("BENCH_QUICK_START_CLIENTS", "ours-subpath,ours-barrel,sdk")
    if (!existsSync(exampleServer)) {
      throw new Error("quick start loads the built package: run `npm run build` first (`npm run bench` does)")
    }
    const quickStart = readmeQuickStart(readFileSync(new URL("../../README.md", import.meta.url), "utf8"))

    // Inside the repository, so that `effect-mcp-transport/…` resolves by the package's self-reference.
    mkdirSync(new URL("../../.bench-tmp/", import.meta.url), { recursive: true })
    const work = mkdtempSync(fileURLToPath(new URL("../../.bench-tmp/quick-start-", import.meta.url)))
    try {
      const serverArgs = [exampleServer]
      const subpath = withServer(quickStart, process.execPath, serverArgs)
      const files: Record<string, readonly [string, ReadonlyArray<string>]> = {
        "ours-subpath": [`${work}/subpath.ts`, []],
        "ours-barrel": [`${work}/barrel.ts`, []],
        sdk: [sdkClient, [process.execPath, ...serverArgs]]
      }
      writeFileSync(files["ours-subpath"]![0], subpath)
      writeFileSync(files["ours-barrel"]![0], toBarrels(subpath))
      const cells = clients.map((client) => {
        const file = files[client]
        if (file === undefined) throw new Error(`unknown quick-start client: ${client}`)
        return { client, file: file[0], args: file[1] }
      })
      // One unmeasured round: the first process to read each module from disk pays for it.
      if (!smoke) for (const cell of cells) await runClient(cell.file, cell.args)
      const samples = new Samples(NAME)
      const results = await mapLimited(interleave(runs, cells), parallelism(smoke), async (cell) => ({
        cell,
        usage: await runClient(cell.file, cell.args)
      }))
      for (const { cell, usage } of results) {
        samples.add(WALL, cell.client, "ms", usage.wallMs)
        samples.add(CPU, cell.client, "ms", usage.cpuUs / 1000)
        samples.add(RSS, cell.client, "MiB", usage.maxRssKiB / 1024)
      }
      return groupRows(samples.rows())
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
  }
}
