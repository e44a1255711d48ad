/**
 * The CLI on a Node.js older than package.json "engines": one line on
 * stderr, exit code 1, before anything that would crash loads. The run uses
 * an older `node` found on PATH outside node_modules (the machine's own),
 * with the built dist/cli/main.js, since such a Node cannot run .ts files.
 */
import { execFileSync } from "node:child_process"
import { accessSync, constants, readFileSync } from "node:fs"
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { isOlder, parseFloor, parseVersion, refusal } from "../../src/cli/NodeFloor.ts"
import { ensureBuilt, MAIN, runCli } from "./runCli.ts"

const ROOT = path.resolve(import.meta.dirname, "../..")
const manifest = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
  readonly name: string
  readonly engines: { readonly node: string }
}
const floor = parseFloor(manifest.engines.node)

const executable = (file: string): boolean => {
  try {
    accessSync(file, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** The first `node` on PATH (outside node_modules) older than the floor, with its version. */
const olderNode = ((): { readonly file: string; readonly version: string } | undefined => {
  if (floor === undefined) return undefined
  const candidates = (process.env.PATH ?? "").split(path.delimiter)
    .filter((dir) => dir !== "" && !dir.split(path.sep).includes("node_modules"))
    .map((dir) => path.join(dir, "node"))
  for (const file of new Set(candidates)) {
    if (!executable(file)) continue
    try {
      const version = execFileSync(file, ["--version"], { encoding: "utf8", timeout: 10_000 }).trim()
      const parsed = parseVersion(version)
      if (parsed !== undefined && isOlder(parsed, floor)) return { file, version }
    } catch {
      continue
    }
  }
  return undefined
})()

describe("the Node.js floor", () => {
  it("package.json engines is a `>=X.Y.Z` floor the CLI can read", () => {
    expect(floor).toBeDefined()
  })

  it("compares versions part by part", () => {
    const f = parseFloor(">=22.19.0")!
    expect(f).toEqual([22, 19, 0])
    expect(isOlder(parseVersion("v20.20.2")!, f)).toBe(true)
    expect(isOlder(parseVersion("22.18.9")!, f)).toBe(true)
    expect(isOlder(parseVersion("22.19.0")!, f)).toBe(false)
    expect(isOlder(parseVersion("22.23.3")!, f)).toBe(false)
    expect(isOlder(parseVersion("23.0.0")!, f)).toBe(false)
    expect(isOlder(parseVersion("100.0.0")!, f)).toBe(false)
  })

  it("refuses only a version below the floor, and runs when the range or version cannot be read", () => {
    expect(refusal("prog", ">=22.19.0", "20.20.2")).toBe(
      `prog: needs Node.js 22.19.0 or newer (package.json engines: ">=22.19.0"); this is Node.js 20.20.2`
    )
    expect(refusal("prog", ">=22.19.0", "22.19.0")).toBeUndefined()
    expect(refusal("prog", "^22.19.0 || >=24", "20.0.0")).toBeUndefined()
    expect(refusal("prog", ">=22.19.0", "not a version")).toBeUndefined()
  })
})

describe(
  olderNode === undefined
    ? `the CLI on an older Node.js (skipped: no node older than ${manifest.engines.node} on PATH outside node_modules)`
    : `the CLI on Node.js ${olderNode.version} (${olderNode.file})`,
  () => {
    beforeAll(ensureBuilt)

    it.runIf(olderNode !== undefined)("prints one line on stderr and exits 1", async () => {
      const result = await runCli([], { command: [olderNode!.file, MAIN, "inspect", "http://127.0.0.1:1/mcp"] })
      expect(result.stdout).toBe("")
      expect(result.stderr).toBe(
        `${manifest.name}: needs Node.js ${floor!.join(".")} or newer (package.json engines: "${manifest.engines.node}"); ` +
          `this is Node.js ${olderNode!.version.replace(/^v/, "")}\n`
      )
      expect(result.code).toBe(1)
    }, 60_000)
  }
)
