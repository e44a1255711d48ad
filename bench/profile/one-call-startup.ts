/**
 * A one-call client script as a whole process, measured from outside: spawn
 * the server over stdio, connect, call `add`, close, exit
 * (`startup/one-call-ours.js`, `startup/one-call-sdk.js`). Every variant runs
 * against the same server; runs are interleaved after one unmeasured round,
 * and the order rotates each round.
 *
 *   npx node bench/profile/one-call-startup.ts [runs=10] [variant...] [--server example|sdk]
 *
 * A variant is `<kind>` or `<root>#<kind>`: kind `auto` or a pinned revision
 * (`2025-11-25`, `2026-07-28`) runs our client from `<root>` (default: this
 * checkout; another one, e.g. a copy of an earlier `dist/` with its
 * `package.json` and a `node_modules` link, serves as "before"), kind `sdk`
 * runs the official SDK 1.x client. Default: `auto 2025-11-25 sdk`. The
 * server is `dist/cli/example-server-stdio.js` (both eras), or with
 * `--server sdk` the SDK 1.x server (`bench/http/server-sdk.ts`, handshake
 * era only: `auto` then pays for the probe's refusal).
 *
 * Per variant: median wall ms (spawn → exit, seen by this process), client
 * CPU ms (`process.resourceUsage()` at exit, preloaded with `--import`; the
 * figure that survives a loaded machine), server start ms (from the client's
 * spawn to the server process's own start: what the client does before it
 * spawns the server, mostly loading modules), the client's CPU ms when it
 * called `child_process.spawn` (the preload wraps it) and teardown ms (the
 * client's own close, as the script times it) and client teardown ms (that
 * close less the server's own shutdown, from the client's `stdin.end()` to
 * the child's `exit`: what the client adds before and after it, the part
 * that depends least on the server and the load), each with its
 * ratio to `sdk` when it ran.
 */
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const argv = process.argv.slice(2)
const serverFlag = argv.indexOf("--server")
const serverKind = serverFlag === -1 ? "example" : argv.splice(serverFlag, 2)[1]
const [runsText = "10", ...variantArgs] = argv
const runs = Number(runsText)
const variants = variantArgs.length > 0 ? variantArgs : ["auto", "2025-11-25", "sdk"]
const here = fileURLToPath(new URL("../../", import.meta.url))

const server = serverKind === "sdk"
  ? [fileURLToPath(new URL("../http/server-sdk.ts", import.meta.url))]
  : [fileURLToPath(new URL("../../dist/cli/example-server-stdio.js", import.meta.url))]
if (!existsSync(server[0]!)) throw new Error(`${server[0]} is missing: run \`npm run build\` first`)

const USAGE_MARK = "one-call-usage "
const usageReporter = `data:text/javascript,${
  encodeURIComponent(
    `import { writeSync } from "node:fs"
import childProcess from "node:child_process"
import { syncBuiltinESMExports } from "node:module"
const spawn = childProcess.spawn
let spawnCpuUs = -1
let endedAt = -1
let exitedAt = -1
childProcess.spawn = function(...args) {
  if (spawnCpuUs < 0) {
    const c = process.cpuUsage()
    spawnCpuUs = c.user + c.system
  }
  const child = spawn.apply(this, args)
  const end = child.stdin.end
  child.stdin.end = function(...a) {
    if (endedAt < 0) endedAt = performance.now()
    return end.apply(this, a)
  }
  child.once("exit", () => void (exitedAt = performance.now()))
  return child
}
syncBuiltinESMExports()
process.on("exit", () => {
  const u = process.resourceUsage()
  const serverShutdownMs = endedAt >= 0 && exitedAt >= endedAt ? exitedAt - endedAt : -1
  writeSync(2, "\\n${USAGE_MARK}" + JSON.stringify({ cpuUs: u.userCPUTime + u.systemCPUTime, spawnCpuUs, serverShutdownMs }) + "\\n")
})`
  )
}`

/** Preloaded into the server (through NODE_OPTIONS, which the client passes on): its start time, epoch ms, into a file. */
const serverStamp = `data:text/javascript,${
  encodeURIComponent(
    `import { writeFileSync } from "node:fs"
if (process.env.ONE_CALL_SERVER_STAMP && process.argv[1] === ${JSON.stringify(server.at(-1))}) {
  writeFileSync(process.env.ONE_CALL_SERVER_STAMP, String(performance.timeOrigin))
}`
  )
}`
const stamps = mkdtempSync(join(tmpdir(), "one-call-"))
process.on("exit", () => rmSync(stamps, { recursive: true, force: true }))
let stampCount = 0

interface Sample {
  readonly wallMs: number
  readonly cpuMs: number
  readonly serverStartMs: number
  readonly cpuAtSpawnMs: number
  readonly teardownMs: number
  readonly clientTeardownMs: number
}

const scriptOf = (variant: string): { file: string; args: Array<string> } => {
  const [root, kind] = variant.includes("#") ? variant.split("#") as [string, string] : [here, variant]
  if (kind === "sdk") return { file: resolve(here, "bench/profile/startup/one-call-sdk.js"), args: [] }
  return { file: resolve(root, "bench/profile/startup/one-call-ours.js"), args: [kind] }
}

const runOnce = (variant: string): Promise<Sample> =>
  new Promise((done, reject) => {
    const { args, file } = scriptOf(variant)
    const stampFile = join(stamps, `${stampCount++}`)
    const startedAt = performance.timeOrigin + performance.now()
    const started = performance.now()
    const child = spawn(process.execPath, ["--import", usageReporter, file, ...args, process.execPath, ...server], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NODE_OPTIONS: `--import=${serverStamp}`, ONE_CALL_SERVER_STAMP: stampFile }
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (s: string) => void (stdout += s))
    child.stderr.setEncoding("utf8").on("data", (s: string) => void (stderr += s))
    let wallMs = Number.NaN
    child.on("exit", () => void (wallMs = performance.now() - started))
    child.on("error", reject)
    child.on("close", (code, signal) => {
      const usage = stderr.split("\n").find((l) => l.startsWith(USAGE_MARK))
      const teardown = /teardown-ms (\S+)/.exec(stderr)
      if (code !== 0 || usage === undefined || teardown === null || !/"sum":5\b/.test(stdout)) {
        reject(new Error(`${variant}: exit ${code ?? signal}\n${stdout.slice(-1000)}\n${stderr.slice(-2000)}`))
        return
      }
      const { cpuUs, serverShutdownMs, spawnCpuUs } = JSON.parse(usage.slice(USAGE_MARK.length)) as {
        cpuUs: number
        spawnCpuUs: number
        serverShutdownMs: number
      }
      done({
        wallMs,
        cpuMs: cpuUs / 1000,
        serverStartMs: Number(readFileSync(stampFile, "utf8")) - startedAt,
        cpuAtSpawnMs: spawnCpuUs / 1000,
        teardownMs: Number(teardown[1]),
        clientTeardownMs: serverShutdownMs < 0 ? Number.NaN : Number(teardown[1]) - serverShutdownMs
      })
    })
  })

const samples = new Map(variants.map((v) => [v, [] as Array<Sample>]))
for (let round = -1; round < runs; round++) {
  const order = variants.map((_, i) => variants[(i + Math.max(round, 0)) % variants.length]!)
  for (const variant of order) {
    const sample = await runOnce(variant)
    if (round >= 0) samples.get(variant)!.push(sample)
  }
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}
const medians = new Map([...samples].map(([v, xs]) => [v, {
  wallMs: median(xs.map((x) => x.wallMs)),
  cpuMs: median(xs.map((x) => x.cpuMs)),
  serverStartMs: median(xs.map((x) => x.serverStartMs)),
  cpuAtSpawnMs: median(xs.map((x) => x.cpuAtSpawnMs)),
  teardownMs: median(xs.map((x) => x.teardownMs)),
  clientTeardownMs: median(xs.map((x) => x.clientTeardownMs))
}]))
const sdk = [...medians].find(([v]) => v === "sdk" || v.endsWith("#sdk"))?.[1]
const ratio = (a: number, b: number | undefined) => b === undefined ? undefined : +(a / b).toFixed(2)
for (const [variant, m] of medians) {
  console.log(JSON.stringify({
    variant,
    server: serverKind,
    runs,
    wallMs: +m.wallMs.toFixed(1),
    cpuMs: +m.cpuMs.toFixed(1),
    serverStartMs: +m.serverStartMs.toFixed(1),
    cpuAtSpawnMs: +m.cpuAtSpawnMs.toFixed(1),
    teardownMs: +m.teardownMs.toFixed(2),
    clientTeardownMs: +m.clientTeardownMs.toFixed(2),
    wallVsSdk: ratio(m.wallMs, sdk?.wallMs),
    cpuVsSdk: ratio(m.cpuMs, sdk?.cpuMs),
    serverStartVsSdk: ratio(m.serverStartMs, sdk?.serverStartMs),
    cpuAtSpawnVsSdk: ratio(m.cpuAtSpawnMs, sdk?.cpuAtSpawnMs),
    teardownVsSdk: ratio(m.teardownMs, sdk?.teardownMs),
    clientTeardownVsSdk: ratio(m.clientTeardownMs, sdk?.clientTeardownMs)
  }))
}
