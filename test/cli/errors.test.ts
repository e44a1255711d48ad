/**
 * Usage and connection failures of the built `effect-mcp-transport` binary: one line
 * on stderr (no stack trace unless --verbose) and the documented exit code.
 */
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { ensureBuilt, NODE, runCli } from "./runCli.ts"

const STDIO_TEST_SERVER = path.resolve(import.meta.dirname, "../fixtures/stdio-test-server.ts")
const TIMEOUT = 120_000
const MISSING = "/nonexistent/effect-mcp-no-such-server"

beforeAll(ensureBuilt)

const stderrLines = (stderr: string) => stderr.split("\n").filter((l) => l.trim() !== "")

describe.concurrent("effect-mcp-transport errors", () => {
  it("exits 2 when no target is given", async () => {
    const r = await runCli(["inspect"])
    expect(r.code).toBe(2)
    expect(r.stdout).toBe("")
    expect(stderrLines(r.stderr)).toEqual([
      "effect-mcp-transport: no server given: pass a URL (http://…) or a command after -- (-- node server.js)"
    ])
  }, TIMEOUT)

  it("exits 2 on an unknown flag, a bad flag value, a missing tool name, and with no subcommand", async () => {
    const [flag, value, tool, none] = await Promise.all([
      runCli(["inspect", "--bogus", "--", MISSING]),
      runCli(["call", "echo", "--timeout", "soon", "--", MISSING]),
      runCli(["call", "--", MISSING]),
      runCli([])
    ])
    expect(flag.code).toBe(2)
    expect(stderrLines(flag.stderr)).toHaveLength(1)
    expect(flag.stderr).toMatch(/^effect-mcp-transport: Unrecognized flag: --bogus/)
    expect(value.code).toBe(2)
    expect(stderrLines(value.stderr)).toHaveLength(1)
    expect(value.stderr).toMatch(/--timeout/)
    expect(tool.code).toBe(2)
    expect(stderrLines(tool.stderr)).toEqual(["effect-mcp-transport: no tool name given (call [url] <tool> [key=value …])"])
    expect(none.code).toBe(2)
    expect(none.stdout).toMatch(/inspect/)
  }, TIMEOUT)

  it("--help prints the commands and exits 0", async () => {
    const r = await runCli(["--help"])
    expect(r.code).toBe(0)
    for (const name of ["inspect", "call", "ping", "serve", "bridge"]) expect(r.stdout).toContain(name)
  }, TIMEOUT)

  it("exits 3 with one line and no stack trace when the command cannot be spawned", async () => {
    const r = await runCli(["inspect", "--", MISSING, "--flag"])
    expect(r.code).toBe(3)
    expect(r.stdout).toBe("")
    const lines = stderrLines(r.stderr)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(new RegExp(`^effect-mcp-transport: cannot connect to ${MISSING} --flag: Failed to spawn`))
    expect(r.stderr).not.toMatch(/^\s+at /m)
  }, TIMEOUT)

  it("--verbose adds the details (cause and stack)", async () => {
    const r = await runCli(["--verbose", "inspect", "--", MISSING])
    expect(r.code).toBe(3)
    expect(stderrLines(r.stderr).length).toBeGreaterThan(1)
    expect(r.stderr).toMatch(/SpawnError/)
    expect(r.stderr).toMatch(/^\s+at /m)
  }, TIMEOUT)

  it("exits 3 when the server dies before the handshake, with its last stderr line", async () => {
    const r = await runCli(["ping", "--", NODE, STDIO_TEST_SERVER, "--exit-on-start=7"])
    expect(r.code).toBe(3)
    const lines = stderrLines(r.stderr)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^effect-mcp-transport: cannot connect to .*Transport closed \(.*exit code 7.*\).*missing configuration file/)
  }, TIMEOUT)

  it("exits 3 when nothing listens at the URL", async () => {
    const r = await runCli(["inspect", "http://127.0.0.1:1/mcp"])
    expect(r.code).toBe(3)
    const lines = stderrLines(r.stderr)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^effect-mcp-transport: cannot connect to http:\/\/127\.0\.0\.1:1\/mcp: /)
  }, TIMEOUT)

  it("exits 5 when the handshake times out", async () => {
    const r = await runCli(["inspect", "--connect-timeout", "300ms", "--", NODE, STDIO_TEST_SERVER, "--hang-initialize"])
    expect(r.code).toBe(5)
    const lines = stderrLines(r.stderr)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^effect-mcp-transport: cannot connect to .*timeout after 300ms \(initialize/i)
  }, TIMEOUT)
})
