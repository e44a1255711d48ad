/**
 * What the program loads: `--version` and the root's `--help` are answered
 * before effect is loaded (and read as effect/cli prints them), and a call
 * over HTTP loads neither undici (npm's, or the one Node's fetch compiles), nor
 * ws, nor the OAuth client, nor any other subcommand's module; and what it
 * loads, Node's compile cache keeps for the next start.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import * as HttpClientLayer from "../../src/cli/HttpClientLayer.ts"
import { exampleHttpServer } from "./httpServer.ts"
import { MAIN, NODE, runCli } from "./runCli.ts"
import { tempFiles } from "../fixtures/temp-files.ts"

const tempFile = tempFiles("effect-mcp-cli-")

const RECORDER = path.resolve(import.meta.dirname, "fixtures/record-modules.ts")
const VERSION = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, "../../package.json"), "utf8")).version

const http = exampleHttpServer()

const TIMEOUT = 120_000

/** The CLI's result and the module URLs it loaded. */
const recorded = async (args: ReadonlyArray<string>) => {
  const file = tempFile("modules.txt")
  const result = await runCli(args, { command: [NODE, "--import", RECORDER, MAIN, ...args], env: { RECORD_MODULES: file } })
  return { ...result, modules: fs.readFileSync(file, "utf8").split("\n") }
}

describe.concurrent("start-up", () => {
  it("--version and -v print the version without loading effect", async () => {
    for (const flag of ["--version", "-v"]) {
      const r = await recorded([flag])
      expect(r.code).toBe(0)
      expect(r.stdout).toBe(`effect-mcp-transport v${VERSION}\n`)
      expect(r.modules.filter((url) => url.includes("/node_modules/"))).toEqual([])
    }
  }, TIMEOUT)

  it("--help prints the page effect/cli prints, without loading effect", async () => {
    const quick = await recorded(["--help"])
    expect(quick.code).toBe(0)
    expect(quick.modules.filter((url) => url.includes("/node_modules/"))).toEqual([])
    // --verbose keeps the program from answering early: effect/cli renders this one.
    const full = await runCli(["--verbose", "--help"])
    expect(full.code).toBe(0)
    expect(quick.stdout).toBe(full.stdout)
    expect((await runCli(["-h"])).stdout).toBe(full.stdout)
    for (const name of ["inspect", "list", "call", "task", "read", "prompt", "complete", "lint", "ping", "serve", "bridge", "logout"]) {
      expect(full.stdout).toMatch(new RegExp(`^  ${name} `, "m"))
    }
  }, TIMEOUT)

  it("a call over HTTP loads neither undici, ws, the OAuth client, the server nor another command", async () => {
    const r = await recorded(["call", http.url, "add", "a=1", "b=2"])
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("3")
    const unwanted = r.modules.filter((url) =>
      /\/node_modules\/(undici|ws)\//.test(url) || /deps\/undici/.test(url) ||
      /\/dist\/(server|bridge)\//.test(url) ||
      /\/dist\/client\/auth\/OAuthProvider\.js$/.test(url) ||
      /\/dist\/cli\/(LoopbackRedirect|ExampleServer)\.js$/.test(url) ||
      /\/dist\/cli\/commands\/(?!call\.js)/.test(url)
    )
    expect(unwanted).toEqual([])
  }, TIMEOUT)

  it("a stdio call loads no HTTP client (the transports' own FetchHttpClient import aside)", async () => {
    const r = await recorded(["call", "echo", "text=hi", "--", NODE, path.resolve(import.meta.dirname, "../../dist/cli/example-server-stdio.js")])
    expect(r.code).toBe(0)
    expect(r.modules.filter((url) => /NodeHttpClient|\/undici\//.test(url))).toEqual([])
  }, TIMEOUT)
})

describe("the compile cache", () => {
  /** Whether a run that loads the program (a usage error, exit 2) leaves Node's compile cache in the temporary folder. */
  const leavesCache = async (env: Record<string, string>) => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "effect-mcp-cache-"))
    try {
      // The tests' own cache setting would decide where the cache goes (or that it is on at all).
      const { code } = await runCli(["ping", "--protocol", "2099-01-01", "--", NODE, "nothing.js"], {
        env: { NODE_COMPILE_CACHE: undefined, TMPDIR: tmp, ...env }
      })
      expect(code).toBe(2)
      return fs.existsSync(path.join(tmp, "node-compile-cache"))
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true })
    }
  }

  it("keeps the program's compiled code under the temporary folder; NODE_DISABLE_COMPILE_CACHE=1 turns that off", async () => {
    expect(await leavesCache({})).toBe(true)
    expect(await leavesCache({ NODE_DISABLE_COMPILE_CACHE: "1" })).toBe(false)
  }, TIMEOUT)
})

describe("HttpClientLayer.clientFor", () => {
  it("is undici for bridge alone", () => {
    expect(HttpClientLayer.clientFor("bridge")).toBe("undici")
    for (const name of ["call", "inspect", "read", undefined]) expect(HttpClientLayer.clientFor(name)).toBe("node:http")
  })
})
