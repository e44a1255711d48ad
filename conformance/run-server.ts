/**
 * `npm run conformance`: runs the official MCP conformance suite against our
 * runtime, once per protocol revision's requirement list (`--requirements
 * 2025-11-25`, `--requirements 2026-07-28`), and prints one line per suite
 * and list, e.g. `server 2025-11-25: 33 passed, 0 failed`.
 *
 * - server: starts `everything-server` (in this process, 127.0.0.1, a free
 *   port) and runs `conformance server --url … --requirements REV` against it.
 * - client: runs `conformance client --command "node
 *   conformance/everything-client.ts" --requirements REV` once per list: the
 *   suite starts every client scenario the list runs at once, each against a
 *   test server that speaks REV and tells the client through
 *   `MCP_CONFORMANCE_PROTOCOL_VERSION`. Each list runs the client's OAuth
 *   extension scenarios (DPoP, private_key_jwt, workload identity,
 *   enterprise-managed authorization…) too, unscored; they are judged from
 *   every list's run as a third group, printed `client extensions (auth): …`.
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

/** The client's OAuth extension scenarios: every list runs them unscored; judged as one group, from every list's run. */
export const clientAuthExtensions = (): ReadonlyArray<string> => authExtensions(revisions.map(readRequirements))

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

/** Scenario results from the suite's summary lines. */
export const parseSummary = (output: string): ReadonlyArray<ScenarioResult> =>
  output.split("\n").flatMap((line) => {
    const m = SUMMARY_LINE.exec(line)
    if (m === null) return []
    const failed = Number(m[4])
    return [{ name: m[2]!, passed: Number(m[3]), failed: m[1] === "✗" && failed === 0 ? 1 : failed }]
  })

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

export type Detailed = ScenarioResult & { readonly problems?: ReadonlyArray<string> | undefined }

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

/** Whether the suite started a requirement list (`Running requirements REV (N scenarios)`). */
const startedList = (output: string): boolean => /Running requirements \S+ \(\d+ scenarios\)/.test(output)

/**
 * The results of the judged `scenarios` in the suite's `runs` of a list: a scenario fails when it
 * failed in any run, or saved nothing in one (it crashed, or the suite skipped it); a run that never
 * started its list fails as a whole.
 */
export const judgedResults = (
  scenarios: ReadonlyArray<string>,
  runs: ReadonlyArray<
    { readonly revision: string; readonly results: ReadonlyArray<Detailed>; readonly started: boolean }
  >
): Array<Detailed> => {
  const results: Array<Detailed> = scenarios.map((name) => {
    let passed = 0
    const problems: Array<string> = []
    for (const run of runs) {
      const saved = run.results.find((r) => r.name === name)
      const at = runs.length > 1 ? ` (at ${run.revision})` : ""
      if (saved === undefined) problems.push(`no saved checks${at}`)
      else {
        passed += saved.passed
        if (saved.failed > 0) problems.push(...(saved.problems ?? [`${saved.failed} failed`]).map((p) => `${p}${at}`))
      }
    }
    return { name, passed, failed: problems.length, problems }
  })
  for (const run of runs) {
    if (run.started) continue
    results.push({ name: `(suite at ${run.revision})`, passed: 0, failed: 1, problems: ["the suite did not start the list"] })
  }
  return results
}

/** The server scenarios of one requirement list against our example server, started here on a free loopback port. */
export const serverSuite = (baseline: Baseline, revision: Revision) =>
  Effect.scoped(Effect.gen(function*() {
    const services = yield* Layer.build(EverythingServer.layer({ host: "127.0.0.1", port: 0 }))
    const transport = Context.get(services, HttpServerTransport.HttpServerTransport)
    const url = Option.getOrThrow(transport.url)
    const dir = yield* tempDir
    const { output } = yield* runCli(["server", "--url", url, "--requirements", revision, "-o", dir])
    const run = { revision, results: readResults(dir), started: startedList(output) }
    const results = judgedResults(serverScenarios(revision), [run])
    return yield* report(`server ${revision}`, results, output, baseline[revision].server)
  }))

/**
 * How long the suite gives one client scenario. All of a list's start at once, each with a process of its
 * own, so one lasts about as long as the whole run: under a minute with the other tests beside it on two
 * cores. A hang still ends within the client test's own limit.
 */
const CLIENT_SCENARIO_TIMEOUT_MS = 240_000

/**
 * Every client scenario a requirement list runs, our example client as the client, in one run of
 * the suite (`--requirements REV`: it starts them all at once and gives the test server REV's wire
 * version): each scenario's saved result, and whether the suite started the list.
 */
const clientListRun = (revision: Revision) =>
  Effect.scoped(Effect.gen(function*() {
    const command = `${process.execPath} ${exampleClient}`
    const dir = yield* tempDir
    const run = yield* runCli([
      "client",
      "--command",
      command,
      "--requirements",
      revision,
      "--timeout",
      String(CLIENT_SCENARIO_TIMEOUT_MS),
      "-o",
      dir
    ])
    const output = `\n=== client ${revision}\n${run.output}`
    return { revision, results: readResults(dir), output, started: startedList(run.output) }
  }))

type ClientListRun = Effect.Success<ReturnType<typeof clientListRun>>

/** The client scenarios one requirement list judges, from that list's run. */
const clientSuite = (baseline: Baseline, run: ClientListRun) =>
  report(
    `client ${run.revision}`,
    judgedResults(clientScenarios(run.revision), [run]),
    run.output,
    baseline[run.revision].client
  )

/**
 * The client's OAuth extension scenarios, judged as one group from every list's run: each list
 * runs them too, unscored, at its own wire version.
 */
const clientExtensionSuite = (baseline: Baseline, runs: ReadonlyArray<ClientListRun>) =>
  report(
    "client extensions (auth)",
    judgedResults(clientAuthExtensions(), runs),
    runs.map((r) => r.output).join(""),
    baseline.extensions.client
  )

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
  const clients = (only === undefined || only === "client") && existsSync(exampleClient)
  if (only === "client" && !existsSync(exampleClient)) ok = false
  const clientRuns: Array<ClientListRun> = []
  for (const revision of lists) {
    if (only === undefined || only === "server") ok = (yield* serverSuite(baseline, revision)) && ok
    if (clients) {
      const run = yield* clientListRun(revision)
      clientRuns.push(run)
      ok = (yield* clientSuite(baseline, run)) && ok
    }
  }
  if (extensions && clients) {
    // Asked for alone, the extensions come from the newest list's run.
    if (clientRuns.length === 0) clientRuns.push(yield* clientListRun(revisions[revisions.length - 1]!))
    ok = (yield* clientExtensionSuite(baseline, clientRuns)) && ok
  }
  if (!ok) process.exitCode = 1
}).pipe(Effect.provide(NodeServices.layer))

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) NodeRuntime.runMain(main)
