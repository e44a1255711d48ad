import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"
import { BaseSequencer, type TestSpecification } from "vitest/node"
import { builtCurrent, builtModulesPreload } from "./test/fixtures/build.ts"

/**
 * Processes the tests start load the repository's TypeScript modules as JavaScript kept for them
 * before the run (test/fixtures/strip-typescript.ts, stripped-modules.mjs): about 120 ms of CPU less
 * per process start.
 */
const strippedModulesPreload = `--import=${new URL("./test/fixtures/stripped-modules.mjs", import.meta.url).href}`

/**
 * Files whose assertions are about the first load of a module in a process:
 * each runs in a fresh worker. Every other file shares a worker with the files
 * before it, which saves a Node start and a fresh import of `effect` and our
 * modules per file: about 1.2 CPU-seconds each, half of what the files of
 * test/client, test/internal and test/server/http cost in all.
 */
const ownProcess = ["test/client/SchemaPreload.test.ts"]

/**
 * The files that take longest (20 s or more each), started first. Without
 * timings from an earlier run, as in a fresh clone, vitest starts the largest
 * files first; a long file started last then holds up the end of the run
 * while the other worker idles. Order only: a file missing here still runs.
 */
const longestFirst = [
  "test/bench-smoke.test.ts",
  "test/conformance/client.test.ts",
  "test/package/pack.test.ts",
  "test/house/docs.test.ts",
  "test/property/http-server.test.ts",
  "test/cli/serve.test.ts",
  "test/cli/auth.test.ts",
  "test/server/fleet/FleetTasks.test.ts",
  "test/interop/eras.test.ts",
  "test/cli/resources-prompts.test.ts",
  "test/cli/protocol.test.ts",
  "test/bridge/matrix.test.ts",
  "test/server/fleet/HandshakeSessions.test.ts"
]

/**
 * The tests start about 1,200 Node processes (servers, clients, the CLI, the
 * conformance suite). Node's compile cache spares each of them compiling the
 * JavaScript of `node_modules` and `dist` again: 3–10 % of a start's CPU,
 * 14 % of the whole suite's.
 */
const compileCache = process.env.NODE_COMPILE_CACHE ??
  fileURLToPath(new URL("node_modules/.cache/node-compile-cache", import.meta.url))

/**
 * With a current build, the processes the tests start load our modules from
 * dist/ (test/fixtures/built-modules.mjs): 0.2–0.25 CPU-seconds less per
 * fixture that imports them from src/. Without one they load src/ as written.
 */
const preloads = builtCurrent(fileURLToPath(new URL(".", import.meta.url)))
  ? [builtModulesPreload, strippedModulesPreload]
  : [strippedModulesPreload]
const nodeOptions = [process.env.NODE_OPTIONS, ...preloads].filter((option) => option !== undefined && option !== "").join(" ")

class LongestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    const rank = (file: TestSpecification) => {
      const at = longestFirst.findIndex((path) => file.moduleId.endsWith(path))
      return at < 0 ? longestFirst.length : at
    }
    // Array#sort is stable: the rest keep the order vitest gave them.
    return sorted.sort((a, b) => rank(a) - rank(b))
  }
}

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Real child processes and loopback servers: keep the 2-core machines from oversubscribing
    // (a third worker fills the idle time but measured no faster; docs/design.md).
    maxWorkers: 2,
    env: { NODE_COMPILE_CACHE: compileCache, NODE_OPTIONS: nodeOptions },
    globalSetup: ["test/fixtures/strip-typescript.ts"],
    sequence: { sequencer: LongestFirst },
    projects: [
      { extends: true, test: { name: "shared", include: ["test/**/*.test.ts"], exclude: ownProcess, isolate: false } },
      { extends: true, test: { name: "own-process", include: ownProcess, isolate: true } }
    ]
  }
})
