/**
 * The two protocol eras from the command line, run as the built binary:
 * `--protocol` (auto, pinned, invalid) on inspect, call and ping against a
 * stateless-era server (test/fixtures/scripted-modern-stdio-server.ts) and a
 * handshake-era one (test/fixtures/router-stdio-server.ts), what inspect
 * shows of the era, and the server's questions during `call` answered with
 * `--answer`, from a terminal (under util-linux `script`), or not at all
 * (exit 6).
 */
import { execFileSync } from "node:child_process"
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { ensureBuilt, MAIN, NODE, runCli, startCli } from "./runCli.ts"

const MODERN = ["--", NODE, path.resolve(import.meta.dirname, "../fixtures/scripted-modern-stdio-server.ts")]
const LEGACY = ["--", NODE, path.resolve(import.meta.dirname, "../fixtures/router-stdio-server.ts"), "--handshake-only"]
const TIMEOUT = 120_000

beforeAll(ensureBuilt)

const stderrLines = (stderr: string) => stderr.split("\n").filter((l) => l.trim() !== "")

const hasScript = (() => {
  try {
    execFileSync("script", ["--version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()
const shellQuote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`

/**
 * The CLI in a terminal: `script` gives it a pty (stdin, stdout and stderr
 * all on it, so everything it prints arrives on script's stdout), and what
 * we write to script's stdin is typed into that terminal.
 */
const inTerminal = (args: ReadonlyArray<string>) =>
  startCli([], {
    command: ["script", "-qfec", [NODE, MAIN, ...args].map(shellQuote).join(" "), "/dev/null"],
    stdin: true
  })

/** Types `keys` once the terminal shows `prompt` (everything since the last prompt answered). */
const answerAt = async (cli: ReturnType<typeof inTerminal>, prompt: string | RegExp, keys: string) => {
  await cli.waitFor(prompt, "stdout")
  cli.child.stdin!.write(keys)
}

describe.concurrent("--protocol", () => {
  it("auto: inspect shows the stateless era, the supported versions and the cache hints", async () => {
    const r = await runCli(["inspect", "--protocol", "auto", ...MODERN])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^Server: +modern-fixture 1\.0\.0$/m)
    expect(r.stdout).toMatch(/^Protocol: +2026-07-28$/m)
    expect(r.stdout).toMatch(/^Era: +modern \(2026-07-28, stateless\)$/m)
    expect(r.stdout).toMatch(/^Supported: +2026-07-28$/m)
    expect(r.stdout).toMatch(/^Cache hints: +ttl 60000 ms, public$/m)
    expect(r.stdout).toMatch(/^Transport: +stdio$/m)
    expect(r.stdout).toMatch(/^Tools \(5\)$/m)
    expect(r.stdout).toMatch(/^ +ask_name$/m)
  }, TIMEOUT)

  it("auto: inspect --json adds era and the raw discover result to the same fields", async () => {
    const r = await runCli(["inspect", "--json", ...MODERN])
    expect(r.code).toBe(0)
    const report = JSON.parse(r.stdout)
    expect(report.era).toBe("modern")
    expect(report.protocolVersion).toBe("2026-07-28")
    expect(report.discover).toMatchObject({ supportedVersions: ["2026-07-28"], ttlMs: 60_000, cacheScope: "public" })
    expect(report.discover._meta["io.modelcontextprotocol/serverInfo"].name).toBe("modern-fixture")
    expect(report.server).toEqual({ name: "modern-fixture", version: "1.0.0" })
    expect(report.transport).toBe("stdio")
    expect(report.capabilities.tools).toBeDefined()
    expect(report.instructions).toBe("modern fixture")
    expect(report.resources.map((x: { uri: string }) => x.uri)).toEqual(["fixture://hello"])
    expect(report.prompts).toEqual([])
  }, TIMEOUT)

  it("auto: a handshake server is shown as the legacy era, without discover", async () => {
    const [text, json] = await Promise.all([
      runCli(["inspect", ...LEGACY]),
      runCli(["inspect", "--json", "--protocol", "auto", ...LEGACY])
    ])
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(/^Era: +legacy \(2025-11-25\)$/m)
    expect(text.stdout).not.toMatch(/^Supported:/m)
    expect(text.stdout).not.toMatch(/^Cache hints:/m)
    expect(json.code).toBe(0)
    const report = JSON.parse(json.stdout)
    expect(report.era).toBe("legacy")
    expect(report.protocolVersion).toBe("2025-11-25")
    expect("discover" in report).toBe(false)
  }, TIMEOUT)

  it("a pinned handshake revision is spoken as asked", async () => {
    const r = await runCli(["inspect", "--protocol", "2025-06-18", ...LEGACY])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^Era: +legacy \(2025-06-18\)$/m)
  }, TIMEOUT)

  it("2026-07-28 against a handshake server: exit 3, one line saying the pinned revision was refused", async () => {
    const r = await runCli(["inspect", "--protocol", "2026-07-28", ...LEGACY])
    expect(r.code).toBe(3)
    expect(r.stdout).toBe("")
    const lines = stderrLines(r.stderr)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^effect-mcp-transport: cannot connect to .*router-stdio-server\.ts --handshake-only: MCP error -32002: /)
    expect(lines[0]).toContain("(the server refused --protocol 2026-07-28 (the stateless era); try --protocol auto)")
  }, TIMEOUT)

  it("a handshake revision against a stateless server: exit 3 with the same advice", async () => {
    const r = await runCli(["ping", "--protocol", "2025-11-25", ...MODERN])
    expect(r.code).toBe(3)
    const lines = stderrLines(r.stderr)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain("the server refused --protocol 2025-11-25 (the initialize handshake); try --protocol auto")
  }, TIMEOUT)

  it("an unknown value is a usage error (exit 2) on inspect, call and ping, before anything is spawned", async () => {
    const results = await Promise.all([
      runCli(["inspect", "--protocol", "2099-01-01", ...MODERN]),
      runCli(["call", "echo", "--protocol", "latest", ...MODERN]),
      runCli(["ping", "--protocol", "2026-07-29", ...MODERN])
    ])
    for (const r of results) {
      expect(r.code).toBe(2)
      expect(r.stdout).toBe("")
      const lines = stderrLines(r.stderr)
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(/^effect-mcp-transport: Invalid value for flag --protocol: .*auto or one of 2026-07-28, 2025-11-25/)
    }
  }, TIMEOUT)

  it("ping works in both eras (a discovery in the stateless one)", async () => {
    const [modern, legacy] = await Promise.all([
      runCli(["ping", "-c", "2", "-i", "0", "--json", ...MODERN]),
      runCli(["ping", "-c", "2", "-i", "0", "--json", ...LEGACY])
    ])
    expect(modern.code).toBe(0)
    expect(JSON.parse(modern.stdout)).toMatchObject({ count: 2, ok: 2, failed: 0 })
    expect(legacy.code).toBe(0)
    expect(JSON.parse(legacy.stdout)).toMatchObject({ count: 2, ok: 2, failed: 0 })
  }, TIMEOUT)
})

describe.concurrent("call in the stateless era", () => {
  it("calls a tool", async () => {
    const r = await runCli(["call", "echo", "text=hi", ...MODERN])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    expect(r.stdout).toBe("echo: hi\n")
  }, TIMEOUT)

  it("answers an input_required round from --answer, echoing the server's requestState", async () => {
    const r = await runCli(["call", "ask_name", "--answer", "name=Ada Lovelace", ...MODERN])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    expect(r.stdout).toBe("hello Ada Lovelace (state state-for-round1)\n")
  }, TIMEOUT)

  it("types each --answer by the form's schema", async () => {
    const r = await runCli([
      "call",
      "survey",
      "--answer",
      "age=42",
      "--answer",
      "member=yes",
      "--answer",
      "size=Large",
      "--answer",
      "colors=red,blue",
      ...MODERN
    ])
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout)).toEqual({
      action: "accept",
      content: { age: 42, member: true, size: "l", colors: ["red", "blue"] }
    })
  }, TIMEOUT)

  it("without a terminal and without answers: exit 6, one line naming the question and the way out", async () => {
    const r = await runCli(["call", "ask_name", ...MODERN])
    expect(r.code).toBe(6)
    expect(r.stdout).toBe("")
    expect(stderrLines(r.stderr)).toEqual([
      "effect-mcp-transport: the server asks \"Your name?\" (fields: name) and stdin is not a terminal: " +
      "run the command in a terminal to answer it, or give --answer name=…"
    ])
  }, TIMEOUT)

  it("without a terminal, answers that leave a required field out: exit 6 naming what is missing", async () => {
    const r = await runCli(["call", "survey", "--answer", "member=no", ...MODERN])
    expect(r.code).toBe(6)
    const lines = stderrLines(r.stderr)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain("the server asks \"A short survey\" (fields: age) and stdin is not a terminal: run the command in a terminal to answer it, or give --answer age=…")
  }, TIMEOUT)

  it("an --answer that does not fit its field, or is not field=value, is a usage error (exit 2)", async () => {
    const [typed, malformed] = await Promise.all([
      runCli(["call", "survey", "--answer", "age=old", ...MODERN]),
      runCli(["call", "ask_name", "--answer", "Ada", ...MODERN])
    ])
    expect(typed.code).toBe(2)
    expect(stderrLines(typed.stderr)).toEqual(["effect-mcp-transport: --answer age: expected a number, got \"old\""])
    expect(malformed.code).toBe(2)
    expect(stderrLines(malformed.stderr)).toEqual(["effect-mcp-transport: --answer expects field=value, got \"Ada\""])
  }, TIMEOUT)

  it.skipIf(!hasScript)("in a terminal: prompts for the field and sends the answer", async () => {
    const cli = inTerminal(["call", "ask_name", ...MODERN])
    await answerAt(cli, "name [string]: ", "Ada\r")
    const r = await cli.exit
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("The server asks: Your name?")
    expect(r.stdout).toMatch(/hello Ada \(state state-for-round1\)\r?\n/)
  }, TIMEOUT)

  it.skipIf(!hasScript)("in a terminal: re-asks a value that does not fit, skips an optional field, takes titles", async () => {
    const cli = inTerminal(["call", "survey", "--answer", "colors=green", ...MODERN])
    await answerAt(cli, "age (Age)* [integer]: ", "4.5\r")
    await answerAt(cli, /expected an integer, got "4\.5"[\s\S]*age \(Age\)\* \[integer\]: /, "7\r")
    await answerAt(cli, "member [yes/no]: ", "\r")
    await answerAt(cli, "size [s, l]: ", "small\r")
    const r = await cli.exit
    expect(r.code).toBe(0)
    const last = r.stdout.trimEnd().split("\n").at(-1)!
    expect(JSON.parse(last)).toEqual({ action: "accept", content: { age: 7, size: "s", colors: ["green"] } })
  }, TIMEOUT)

  it.skipIf(!hasScript)("in a terminal: Ctrl-D declines", async () => {
    const cli = inTerminal(["--json", "call", "ask_name", ...MODERN])
    await answerAt(cli, "name [string]: ", "\x04")
    const r = await cli.exit
    expect(r.code).toBe(0)
    // The fixture answers a declined form without a name.
    expect(r.stdout).toContain("hello ? (state state-for-round1)")
  }, TIMEOUT)

  it.skipIf(!hasScript)("in a terminal: Ctrl-C cancels the call and exits 130, without answering", async () => {
    const cli = inTerminal(["call", "ask_name", ...MODERN])
    await answerAt(cli, "name [string]: ", "\x03")
    const r = await cli.exit
    expect(r.code).toBe(130)
    expect(r.stdout).not.toContain("hello")
  }, TIMEOUT)
})

describe.concurrent("call's questions in the handshake era", () => {
  it("an elicitation request is answered from --answer", async () => {
    const r = await runCli(["call", "elicit", "message=Who?", "--answer", "name=Ada", "--json", ...LEGACY])
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout).structuredContent).toEqual({ action: "accept", content: { name: "Ada" } })
  }, TIMEOUT)

  it("without a terminal: exit 6 with the same line", async () => {
    const r = await runCli(["call", "elicit", "message=Who are you?", ...LEGACY])
    expect(r.code).toBe(6)
    expect(r.stdout).toBe("")
    expect(stderrLines(r.stderr)).toEqual([
      "effect-mcp-transport: the server asks \"Who are you?\" (fields: name) and stdin is not a terminal: " +
      "run the command in a terminal to answer it, or give --answer name=…"
    ])
  }, TIMEOUT)

  it.skipIf(!hasScript)("in a terminal: Ctrl-D sends decline", async () => {
    const cli = inTerminal(["--json", "call", "elicit", "message=Who?", ...LEGACY])
    await answerAt(cli, "name [string]: ", "\x04")
    const r = await cli.exit
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/"action": "decline"/)
  }, TIMEOUT)
})
