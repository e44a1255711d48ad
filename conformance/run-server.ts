/**
 * `npm run conformance`: runs the official MCP conformance suite against our
 * runtime, once per protocol revision's requirement list (`--requirements
 * 2025-11-25`, `--requirements 2026-07-28`), and prints one line per suite
 * and list, e.g. `server 2025-11-25: 33 passed, 0 failed`.
 *
 * - server: starts `everything-server` (in this process, 127.0.0.1, a free
 *   port) and runs `conformance server --url … --requirements REV` against it.
 * - client: runs `conformance client --command "node
 *   conformance/everything-client.ts" --scenario NAME --spec-version REV` for
 *   each client scenario of the list (the suite's test server speaks REV and
 *   tells the client through `MCP_CONFORMANCE_PROTOCOL_VERSION`), three at
 *   a time. Then, as a third group printed `client extensions (auth): …`,
 *   the client's OAuth extension scenarios (DPoP, private_key_jwt, workload
 *   identity, enterprise-managed authorization…), without `--spec-version`.
 *
 * Which scenarios are judged: those the list scores (the client's OAuth
 * scenarios `auth/*` included) plus the ones it runs unscored as pending or
 * added after its release; protocol extensions are left out (see `inScope`),
 * except the client's auth extensions, judged in their own group.
 *
 * A scenario fails when any of its saved checks (`-o DIR`) is a FAILURE or a
 * WARNING, or when none succeeded (see `fromChecks`). Every failure must be listed
 * in `conformance/baseline.json` (per list and suite) with its reason; a listed
 * scenario that now passes is an error too, so the baseline cannot go stale.
 * Exit code: 0 when nothing unexpected happened, 1 otherwise.
 *
 * Flags: `--verbose` prints the suite's whole output; `--only server|client`
 * runs one suite; `--requirements REV` runs one list (default: both lists and
 * the client's auth extensions; `--requirements extensions` runs those alone).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { ChildProcess } from "effect/process"
import * as HttpServerTransport from "../src/server/HttpServerTransport.ts"
import * as EverythingServer from "./everything-server.ts"
import { authExtensions, inScope, readRequirements, type Revision, revisions } from "./requirements.ts"

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, "..")
const conformanceBin = join(root, "node_modules/@modelcontextprotocol/conformance/dist/index.js")
const baselinePath = join(here, "baseline.json")
const exampleClient = join(here, "everything-client.ts")

/** The client scenarios of a requirement list the runner judges (OAuth included, no extensions). */
export const clientScenarios = (revision: Revision): ReadonlyArray<string> =>
  inScope(readRequirements(revision), "client")

/** The client's OAuth extension scenarios, judged as one group without a protocol revision. */
export const clientAuthExtensions = (): ReadonlyArray<string> => authExtensions(revisions.map(readRequirements))

/**
 * How many client scenarios run at once: each is two processes (the suite and our client). Not the
 * suite's own `--requirements REV`, which starts every scenario of a list at once in one process: half
 * the CPU, but on a loaded two-core machine its clients' requests waited past 30 s and reused
 * keep-alive connections the test servers had closed (ECONNRESET), failing scenarios at random.
 */
const CLIENT_CONCURRENCY = 3

/** The server scenarios of a requirement list the runner judges (no extensions). */
export const serverScenarios = (revision: Revision): ReadonlyArray<string> =>
  inScope(readRequirements(revision), "server")

export interface ScenarioResult {
  readonly name: string
  readonly passed: number
  readonly failed: number
}

/** Expected failures of one requirement list: scenario name → why it is expected to fail. */
export interface ListBaseline {
  readonly server: Readonly<Record<string, string>>
  readonly client: Readonly<Record<string, string>>
}

/** Expected failures per requirement list, and of the client's auth extension scenarios (`extensions`). */
export type Baseline = Readonly<Record<Revision | "extensions", ListBaseline>>

export const readBaseline = (path = baselinePath): Baseline => {
  const raw = JSON.parse(readFileSync(path, "utf8")) as Partial<Record<Revision | "extensions", Partial<ListBaseline>>>
  const list = (key: Revision | "extensions"): ListBaseline => ({
    server: raw[key]?.server ?? {},
    client: raw[key]?.client ?? {}
  })
  return { "2025-11-25": list("2025-11-25"), "2026-07-28": list("2026-07-28"), extensions: list("extensions") }
}

// The suite's summary: `✓ name: 3 passed, 0 failed` (✗ when something failed).
const SUMMARY_LINE = /^\s*([✓✗])\s+(\S+):\s+(\d+) passed,\s+(\d+) failed/u
// The single-scenario form: `Passed: 3/3, 0 failed, 0 warnings`.
const SINGLE_LINE = /^\s*Passed:\s+(\d+)\/(\d+),\s+(\d+) failed/u

/** Scenario results from the suite's summary lines. */
export const parseSummary = (output: string): ReadonlyArray<ScenarioResult> =>
  output.split("\n").flatMap((line) => {
    const m = SUMMARY_LINE.exec(line)
    if (m === null) return []
    const failed = Number(m[4])
    return [{ name: m[2]!, passed: Number(m[3]), failed: m[1] === "✗" && failed === 0 ? 1 : failed }]
  })

/** The result of a run with `--scenario NAME` (no summary table; `Passed: p/n, f failed`). */
export const parseSingle = (name: string, output: string, exitCode: number): ScenarioResult => {
  for (const line of output.split("\n")) {
    const m = SINGLE_LINE.exec(line)
    if (m !== null) {
      const failed = Number(m[3])
      return { name, passed: Number(m[1]), failed: failed === 0 && exitCode !== 0 ? 1 : failed }
    }
  }
  // No result line at all: the scenario did not run to the end.
  return { name, passed: 0, failed: 1 }
}

export interface Check {
  readonly id: string
  readonly status: string
  readonly errorMessage?: string | undefined
}

/**
 * A scenario's result from the checks the suite saved (`-o DIR`): stricter
 * than its summary line. A WARNING counts as a failure (the suite's way of
 * saying a SHOULD is missing, e.g. no `test_reconnection` tool), and so does
 * a scenario with no successful check at all (e.g. SSE polling answered with
 * JSON, which the suite only notes as INFO).
 */
export const fromChecks = (name: string, checks: ReadonlyArray<Check>): ScenarioResult & { readonly problems: ReadonlyArray<string> } => {
  const passed = checks.filter((c) => c.status === "SUCCESS").length
  const bad = checks.filter((c) =>
    c.status === "FAILURE" || (c.status === "WARNING" && !TOLERATED_WARNINGS.has(c.id))
  )
  const problems = bad.map((c) => `${c.id}: ${c.status} ${c.errorMessage ?? ""}`.trim())
  if (passed === 0 && bad.length === 0) problems.push("no successful check")
  return { name, passed, failed: problems.length, problems }
}

/**
 * Warnings that depend on the machine's load, not on the code: "reconnected
 * slightly late" (retry + 200 ms … 2 × retry), which the suite itself calls
 * acceptable. Too early or very late is still a FAILURE.
 */
const TOLERATED_WARNINGS: ReadonlySet<string> = new Set(["client-sse-retry-timing"])

// `-o DIR` writes `DIR/server-<scenario>-<timestamp>/checks.json` for server
// scenarios and `DIR/<scenario>-<timestamp>/checks.json` for client ones; a
// scenario name with a slash (`auth/dpop`) makes a subdirectory (`DIR/auth/dpop-<timestamp>`).
// Only `server-` is a prefix: a client scenario may begin with `client-` (`auth/client-credentials-jwt`).
const RESULT_DIR = /^(?:server-)?(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/

/** Every scenario result saved under `dir` (names under a subdirectory get its name as a prefix). */
export const readResults = (dir: string, prefix = ""): ReadonlyArray<ReturnType<typeof fromChecks>> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (!entry.isDirectory()) return []
    const m = RESULT_DIR.exec(entry.name)
    const file = join(dir, entry.name, "checks.json")
    if (m === null) return prefix === "" ? readResults(join(dir, entry.name), `${entry.name}/`) : []
    if (!existsSync(file)) return []
    return [fromChecks(`${prefix}${m[1]!}`, JSON.parse(readFileSync(file, "utf8")) as ReadonlyArray<Check>)]
  })

export interface Verdict {
  readonly passed: ReadonlyArray<string>
  readonly failed: ReadonlyArray<string>
  /** Failed and not in the baseline. */
  readonly unexpected: ReadonlyArray<string>
  /** In the baseline but passed (or did not run): the baseline must be updated. */
  readonly stale: ReadonlyArray<string>
}

export const judge = (
  results: ReadonlyArray<ScenarioResult>,
  expectedFailures: Readonly<Record<string, string>>
): Verdict => {
  const failed = results.filter((r) => r.failed > 0).map((r) => r.name)
  const passed = results.filter((r) => r.failed === 0).map((r) => r.name)
  return {
    passed,
    failed,
    unexpected: failed.filter((n) => !(n in expectedFailures)),
    stale: Object.keys(expectedFailures).filter((n) => !failed.includes(n))
  }
}

const summaryLine = (suite: string, v: Verdict) => {
  const parts = [`${suite}: ${v.passed.length} passed, ${v.failed.length} failed`]
  if (v.failed.length > 0) parts.push(`(${v.failed.length - v.unexpected.length} expected)`)
  return parts.join(" ")
}

/** Runs the conformance CLI; its output (stdout and stderr together) and exit code. */
export const runCli = (args: ReadonlyArray<string>, env?: Record<string, string>) =>
  Effect.scoped(Effect.gen(function*() {
    const handle = yield* ChildProcess.make(process.execPath, [conformanceBin, ...args], {
      cwd: root,
      forceKillAfter: "2 seconds",
      ...(env === undefined ? {} : { env, extendEnv: true })
    })
    const output = yield* handle.all.pipe(Stream.decodeText(), Stream.mkString)
    const code = yield* handle.exitCode
    return { output, exitCode: Number(code) }
  }))

const flagValue = (name: string): string | undefined => {
  const at = process.argv.indexOf(`--${name}`)
  return at >= 0 ? process.argv[at + 1] : undefined
}
const verbose = process.argv.includes("--verbose")

type Detailed = ScenarioResult & { readonly problems?: ReadonlyArray<string> | undefined }

const report = (
  suite: string,
  results: ReadonlyArray<Detailed>,
  output: string,
  baseline: Readonly<Record<string, string>>
) =>
  Effect.sync(() => {
    const v = judge(results, baseline)
    if (verbose) process.stderr.write(output)
    process.stdout.write(`${summaryLine(suite, v)}\n`)
    for (const r of results) {
      if (r.failed === 0) continue
      const why = r.name in baseline ? `expected: ${baseline[r.name]}` : "UNEXPECTED"
      process.stdout.write(`  ✗ ${suite}/${r.name} (${why})\n`)
      for (const p of r.problems ?? []) process.stdout.write(`      ${p}\n`)
    }
    for (const name of v.stale) process.stdout.write(`  stale baseline entry (now passes): ${suite}/${name}\n`)
    return v.unexpected.length === 0 && v.stale.length === 0
  })

/** A fresh directory for the suite's saved checks, removed with the scope. */
const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "mcp-conformance-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** The server scenarios of one requirement list against our example server, started here on a free loopback port. */
export const serverSuite = (baseline: Baseline, revision: Revision) =>
  Effect.scoped(Effect.gen(function*() {
    const services = yield* Layer.build(EverythingServer.layer({ host: "127.0.0.1", port: 0 }))
    const transport = Context.get(services, HttpServerTransport.HttpServerTransport)
    const url = Option.getOrThrow(transport.url)
    const dir = yield* tempDir
    const { output } = yield* runCli(["server", "--url", url, "--requirements", revision, "-o", dir])
    const judged = serverScenarios(revision)
    const saved = readResults(dir).filter((r) => judged.includes(r.name))
    // A judged scenario that saved nothing (it crashed, or the suite skipped it) still counts.
    const missing = judged
      .filter((name) => !saved.some((r) => r.name === name))
      .map((name) => ({ name, passed: 0, failed: 1, problems: ["no saved checks"] }))
    const results: Array<Detailed> = [...saved, ...missing]
    const expected = /Running requirements \S+ \((\d+) scenarios\)/.exec(output)
    if (expected === null) results.push({ name: "(suite)", passed: 0, failed: 1, problems: ["the suite did not start the list"] })
    return yield* report(`server ${revision}`, results, output, baseline[revision].server)
  }))

/** One client scenario against our example client (at `revision`'s wire version when one is given). */
const clientScenario = (scenario: string, revision: Revision | undefined) =>
  Effect.scoped(Effect.gen(function*() {
    const command = `${process.execPath} ${exampleClient}`
    const dir = yield* tempDir
    const version = revision === undefined ? [] : ["--spec-version", revision]
    const run = yield* runCli(["client", "--command", command, "--scenario", scenario, ...version, "-o", dir])
    const output = `\n=== ${scenario}\n${run.output}`
    const saved = readResults(dir).find((r) => r.name === scenario)
    if (saved === undefined) {
      // The suite saves every scenario it runs, so nothing saved means it did not run to the end.
      const printed = parseSingle(scenario, run.output, run.exitCode)
      const result: Detailed = { ...printed, failed: Math.max(printed.failed, 1), problems: ["no saved checks"] }
      return { result, output }
    }
    if (run.exitCode !== 0 && saved.failed === 0) {
      const result: Detailed = { ...saved, failed: 1, problems: [`the suite exited ${run.exitCode}`] }
      return { result, output }
    }
    return { result: saved as Detailed, output }
  }))

/** Client scenarios, `CLIENT_CONCURRENCY` at a time, reported in their listed order as `suite`. */
const clientGroup = (
  suite: string,
  scenarios: ReadonlyArray<string>,
  revision: Revision | undefined,
  expected: Readonly<Record<string, string>>
) =>
  Effect.gen(function*() {
    const runs = yield* Effect.forEach(scenarios, (scenario) => clientScenario(scenario, revision), {
      concurrency: CLIENT_CONCURRENCY
    })
    return yield* report(suite, runs.map((r) => r.result), runs.map((r) => r.output).join(""), expected)
  })

/** The client scenarios of one requirement list, each against our example client at that list's wire version. */
export const clientSuite = (baseline: Baseline, revision: Revision) =>
  clientGroup(`client ${revision}`, clientScenarios(revision), revision, baseline[revision].client)

/** The client's OAuth extension scenarios, without a protocol revision. */
export const clientExtensionSuite = (baseline: Baseline) =>
  clientGroup("client extensions (auth)", clientAuthExtensions(), undefined, baseline.extensions.client)

const main = Effect.gen(function*() {
  const baseline = readBaseline()
  const only = flagValue("only")
  const requested = flagValue("requirements")
  const lists = revisions.filter((r) => requested === undefined || r === requested)
  const extensions = requested === undefined || requested === "extensions"
  if (lists.length === 0 && !extensions) {
    process.stderr.write(`unknown requirement list ${requested}; known: ${revisions.join(", ")}, extensions\n`)
    process.exitCode = 1
    return
  }
  let ok = true
  for (const revision of lists) {
    if (only === undefined || only === "server") ok = (yield* serverSuite(baseline, revision)) && ok
    if (only === undefined || only === "client") {
      if (existsSync(exampleClient)) ok = (yield* clientSuite(baseline, revision)) && ok
      else if (only === "client") ok = false
    }
  }
  if (extensions && (only === undefined || only === "client") && existsSync(exampleClient)) {
    ok = (yield* clientExtensionSuite(baseline)) && ok
  }
  if (!ok) process.exitCode = 1
}).pipe(Effect.provide(NodeServices.layer))

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) NodeRuntime.runMain(main)
