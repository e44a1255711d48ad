/**
 * `--log-level`: the server's log messages on stderr, asked for with
 * `logging/setLevel` in the handshake era and with every request's `logLevel`
 * in the stateless era; and `--output` for a command other than `read`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { exampleHttpServer } from "./httpServer.ts"
import { exampleServer, NODE, runCli } from "./runCli.ts"
import { tempFiles } from "../fixtures/temp-files.ts"

const tempFile = tempFiles("effect-mcp-cli-")

const fixture = ["--", NODE, path.resolve(import.meta.dirname, "fixtures/lint-server.ts")]

const http = exampleHttpServer()

const TIMEOUT = 120_000
const COUNTDOWN_LOG = "[server debug countdown] countdown of 2 steps, one every 50 ms"

describe.concurrent("--log-level", () => {
  it("prints the example server's log messages in the stateless era (HTTP)", async () => {
    const r = await runCli(["call", http.url, "countdown", "steps=2", "intervalMs=50", "--log-level", "debug"])
    expect(r.code).toBe(0)
    expect(r.stdout).toBe("countdown finished after 2 steps\n")
    expect(r.stderr.split("\n")).toContain(COUNTDOWN_LOG)
  }, TIMEOUT)

  it("sends logging/setLevel in the handshake era (stdio)", async () => {
    const r = await runCli(["--log-level", "debug", "call", "--protocol", "2025-11-25", "countdown", "steps=2", "intervalMs=50", ...exampleServer])
    expect(r.code).toBe(0)
    expect(r.stderr.split("\n")).toContain(COUNTDOWN_LOG)
    const quiet = await runCli(["--log-level", "info", "call", "--protocol", "2025-11-25", "countdown", "steps=2", "intervalMs=50", ...exampleServer])
    expect(quiet.code).toBe(0)
    expect(quiet.stderr).not.toContain("[server debug")
  }, TIMEOUT)

  it("a message sent in reply to logging/setLevel is printed", async () => {
    const r = await runCli(["list", "tools", "--log-level", "notice", ...fixture])
    expect(r.code).toBe(0)
    expect(r.stderr.split("\n")).toContain("[server warning fixture] level set to notice")
  }, TIMEOUT)

  it("a server without logging gets nothing, and a warning says so", async () => {
    const r = await runCli(["list", "tools", "--log-level", "info", ...fixture], { env: { LINT_NO_LOGGING: "1" } })
    expect(r.code).toBe(0)
    expect(r.stderr).toBe(
      "effect-mcp-transport: the server does not declare logging: --log-level info asks it for nothing\n(no tools)\n"
    )
  }, TIMEOUT)

  it("a level that is not the protocol's is a usage error (exit 2)", async () => {
    const r = await runCli(["list", "tools", "--log-level", "warn", ...fixture])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("--log-level")
  }, TIMEOUT)
})

describe.concurrent("--output", () => {
  it("writes call's JSON result to the file, replacing what was there", async () => {
    const file = tempFile("result.json")
    fs.writeFileSync(file, "old contents that are longer than the result will be, to see them replaced")
    const r = await runCli(["call", "--json", http.url, "add", "a=1", "b=2", "--output", file])
    expect(r.code).toBe(0)
    expect(r.stdout).toBe("")
    expect(JSON.parse(fs.readFileSync(file, "utf8")).structuredContent).toEqual({ sum: 3 })
    fs.rmSync(path.dirname(file), { recursive: true, force: true })
  }, TIMEOUT)

  it("leaves the file alone when the command fails before its result", async () => {
    const file = tempFile("kept.txt")
    fs.writeFileSync(file, "kept")
    const r = await runCli(["call", http.url, "nope", "--output", file])
    expect(r.code).toBe(4)
    expect(fs.readFileSync(file, "utf8")).toBe("kept")
    fs.rmSync(path.dirname(file), { recursive: true, force: true })
  }, TIMEOUT)
})
